"""An HTTP response's body from a server we do not trust (a web page, an HTTP hook's answer):
read up to a limit, and decoded without a charset that could stall or crash the reader.

Shared by WebFetch and HTTP hooks. A large body is decoded by pieces (:func:`decode_in_pieces`):
in one call, 10 MB in UTF-7 held the event loop for 1.6 s.
"""

from __future__ import annotations

import codecs
import ssl
from collections.abc import Iterator
from typing import TYPE_CHECKING

import trio

from ._apart import run_python

if TYPE_CHECKING:
    import httpx

__all__ = [
    "DECODE_PIECE",
    "DECODE_SECONDS",
    "body_codec",
    "decode_body",
    "decode_in_pieces",
    "decoded_pieces",
    "pieces_decode_alike",
    "read_capped",
    "tls_context",
]

#: Python codecs that are no web page's charset, which the server's Content-Type may still name:
#: punycode decodes in quadratic time (320 KB took 4.7 s on the event loop, 10 MB hours), idna
#: and undefined refuse the ``replace`` error handler (a UnicodeError out of the reader), and
#: Python's escape codecs read backslashes as in a string literal. A body in one of them is read
#: as UTF-8, as one in a charset Python does not know or in a codec that is no text encoding
#: (``base64``, ``rot13``: ``bytes.decode`` refuses them with a LookupError).
_NOT_CHARSETS = frozenset({"punycode", "idna", "undefined", "unicode-escape", "raw-unicode-escape"})

#: Bytes decoded between two checkpoints: about 2.5 ms in UTF-7 over bytes it must replace,
#: the slowest case of any charset (160 ms/MiB on this machine; ISO-8859-6 60, UTF-8 under 10).
DECODE_PIECE = 1 << 14

#: Codecs whose incremental decoder does not give what decoding the whole body gives: the
#: ISO-2022 family (its decoder refuses more than 8 bytes pending at a piece's end), and UTF-16,
#: UTF-32 and UTF-8-SIG, whose incremental decoders insist on a byte order mark where a whole
#: decode does without (the ``tests`` compare every other stdlib codec by property).
_WHOLE_ONLY_PREFIXES = ("iso2022",)
_WHOLE_ONLY = frozenset({"utf-16", "utf-32", "utf-8-sig"})

#: How long decoding a large body in a charset of :data:`_WHOLE_ONLY` may take in a process of
#: its own (10 MB of ISO-2022-JP takes about 0.1 s).
DECODE_SECONDS = 10.0


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


def body_codec(charset: str) -> str:
    """The codec a body labelled ``charset`` is decoded with: Python's name for it, or
    ``utf-8`` when Python does not know it or it is no web page's charset."""
    try:
        info = codecs.lookup(charset)
    except LookupError:
        return "utf-8"
    if not getattr(info, "_is_text_encoding", True) or info.name in _NOT_CHARSETS:
        return "utf-8"
    return info.name


def decode_body(body: bytes | bytearray, charset: str) -> str:
    """``body`` as text in ``charset``, or in UTF-8 when that is unknown or no web charset."""
    return body.decode(body_codec(charset), "replace")


def pieces_decode_alike(codec: str) -> bool:
    """Whether decoding by pieces with ``codec``'s incremental decoder gives what decoding the
    whole at once gives: a stdlib codec outside :data:`_WHOLE_ONLY` (a property test checks
    each one this says True for)."""
    if codec in _WHOLE_ONLY or codec.startswith(_WHOLE_ONLY_PREFIXES):
        return False
    decoder = codecs.lookup(codec).incrementaldecoder
    return decoder is not None and decoder.__module__.startswith("encodings.")


async def decode_in_pieces(
    body: bytes | bytearray, charset: str, *, piece: int = DECODE_PIECE
) -> str | None:
    """:func:`decode_body`'s text, without holding the event loop: a body longer than ``piece``
    bytes is decoded ``piece`` bytes at a time with a checkpoint after each, or, in a charset
    whose decoder cannot be fed by pieces, in a Python process of its own (which sends back
    UTF-8, decoded here by pieces). None when that process did not finish within
    :data:`DECODE_SECONDS` or failed."""
    codec = body_codec(charset)
    if len(body) <= piece:
        return body.decode(codec, "replace")
    if pieces_decode_alike(codec):
        return await _by_pieces(body, codec, "replace", piece)
    done = await run_python(_DECODE, [codec], bytes(body), DECODE_SECONDS)
    if done is None or done.returncode != 0:
        return None
    return await _by_pieces(done.stdout, "utf-8", "surrogatepass", piece)


_DECODE = """
import sys
text = sys.stdin.buffer.read().decode(sys.argv[1], "replace")
sys.stdout.buffer.write(text.encode("utf-8", "surrogatepass"))
"""


async def _by_pieces(body: bytes | bytearray, codec: str, errors: str, piece: int) -> str:
    parts: list[str] = []
    for part in decoded_pieces(body, codec, errors, piece):
        parts.append(part)
        await trio.lowlevel.checkpoint()
    return "".join(parts)


def decoded_pieces(body: bytes | bytearray, codec: str, errors: str, piece: int) -> Iterator[str]:
    """The text of each ``piece`` bytes of ``body`` in turn, then what ends it, as ``codec``'s
    incremental decoder gives them (joined: the whole decode's text for a codec that
    :func:`pieces_decode_alike` says True for)."""
    decoder = codecs.getincrementaldecoder(codec)(errors)
    view = memoryview(body)
    for start in range(0, len(body), piece):
        yield decoder.decode(view[start : start + piece])
    yield decoder.decode(b"", True)


#: The TLS context HTTP clients verify servers with, made once (see :func:`tls_context`).
_TLS_CONTEXT: list[ssl.SSLContext] = []


async def tls_context() -> ssl.SSLContext:
    """The TLS context of WebFetch's clients and of MCP's HTTP connections: httpx's default
    (certifi's roots, or those ``SSL_CERT_FILE``/``SSL_CERT_DIR`` name), made once, in a worker
    thread, with httpx and its transport imported there. A client made without one loads the
    roots itself: 21 ms on the event loop each fetch, 70 ms for the first with the imports (an
    MCP connection over HTTP: 25-40 ms). An ``ssl.SSLContext`` serves httpx and the mcp
    package's httpx2 alike."""
    if not _TLS_CONTEXT:
        context = await trio.to_thread.run_sync(_make_tls)
        if not _TLS_CONTEXT:  # (two first clients at once: both made one, the first is kept)
            _TLS_CONTEXT.append(context)
    return _TLS_CONTEXT[0]


def _make_tls() -> ssl.SSLContext:
    import httpcore  # noqa: F401 - (the first client imports it: here, off the loop)
    import httpx

    return httpx.create_ssl_context()
