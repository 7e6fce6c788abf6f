"""An HTTP response's body from a server we do not trust (a web page, an HTTP hook's answer):
read up to a limit, and decoded without a charset that could stall or crash the reader.

Shared by WebFetch and HTTP hooks.
"""

from __future__ import annotations

import codecs
from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    import httpx

__all__ = ["decode_body", "read_capped"]

#: Python codecs that are no web page's charset, which the server's Content-Type may still name:
#: punycode decodes in quadratic time (320 KB took 4.7 s on the event loop, 10 MB hours), idna
#: and undefined refuse the ``replace`` error handler (a UnicodeError out of the reader). A body
#: in one of them is read as UTF-8, as one in a charset Python does not know.
_NOT_CHARSETS = frozenset({"punycode", "idna", "undefined"})


async def read_capped(response: httpx.Response, limit: int) -> tuple[bytearray, bool]:
    """The first ``limit`` bytes of ``response``'s body, and whether more came (the rest is
    then left unread).

    It stops by cancelling, not by ``break``: the cancellation unwinds httpx's nested async
    generators, where a break would leave them to the garbage collector."""
    body = bytearray()
    cut = False
    with trio.CancelScope() as reading:
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > limit:
                del body[limit:]
                cut = True
                reading.cancel()
    return body, cut


def decode_body(body: bytes | bytearray, charset: str) -> str:
    """``body`` as text in ``charset``, or in UTF-8 when that is unknown or no web charset."""
    try:
        codec = codecs.lookup(charset).name
    except LookupError:
        codec = "utf-8"
    return body.decode("utf-8" if codec in _NOT_CHARSETS else codec, "replace")
