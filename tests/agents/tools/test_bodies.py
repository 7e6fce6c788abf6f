"""Decoding an untrusted body by pieces: the same text as decoding it whole, in every charset,
with the event loop free between pieces."""

from __future__ import annotations

import encodings
import pkgutil

import pytest
import trio
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agents.tools.bodies import (
    body_codec,
    decode_body,
    decode_in_pieces,
    decoded_pieces,
    pieces_decode_alike,
)


def _stdlib_text_codecs() -> list[str]:
    """Every codec of the standard library a body may be decoded in (each under its name)."""
    names = set()
    for module in pkgutil.iter_modules(encodings.__path__):
        codec = body_codec(module.name)
        if codec != "utf-8" or module.name in ("utf_8", "utf8"):
            names.add(codec)
    return sorted(names)


CODECS = _stdlib_text_codecs()
BY_PIECES = [c for c in CODECS if pieces_decode_alike(c)]
WHOLE_ONLY = [c for c in CODECS if not pieces_decode_alike(c)]

#: bytes that start, end and break the sequences of many charsets (escapes, shifts, BOMs,
#: UTF-7's base64 runs, lead bytes), mixed with any byte
_TRICKY = b"+-/A\x1b$()BJ@\x0e\x0f~{}\x80\x8e\x8f\xa1\xc3\xa9\xd8\xdc\xed\xef\xbb\xbf\xfe\xff\x00"
BODIES = st.lists(
    st.one_of(st.sampled_from([bytes([b]) for b in _TRICKY]), st.binary(max_size=2)),
    max_size=60,
).map(b"".join)


def test_the_codec_lists_cover_the_charsets_that_need_care() -> None:
    """The lists the properties run over hold what they must: UTF-7 by pieces, the codecs
    whose incremental decoders differ from a whole decode in a process of their own."""
    assert {"utf-7", "utf-8", "big5", "gb18030", "shift_jis", "cp1252", "hz"} <= set(BY_PIECES)
    assert {"utf-16", "utf-32", "utf-8-sig", "iso2022_jp", "iso2022_kr"} <= set(WHOLE_ONLY)


@pytest.mark.parametrize("codec", BY_PIECES)
@settings(max_examples=100, deadline=None)
@given(body=BODIES, piece=st.integers(1, 12))
@example(
    body=b"N\xeb\x00\xff\xa9L\x8b\x1b$i\xfe{{\xff$\xf3>\x00a\x10BA\x8eB$\x80\x00w", piece=1
)  # breaks iso2022_jp
@example(body=b"-\x1b(5\xff{\xfe{p?\xa92\x8eAy\xadA\xdf\\{\xfe", piece=2)  # breaks iso2022_jp_1
@example(
    body=b"{-\xfea\x8e\x1b(\x9d\xda\x80\xe7\xa1\x00\xcda\xc3(\xa1\xdd|\xa1$\x1b\x1a\\{{~J\xff~\xeb\xc3~",
    piece=6,
)  # breaks iso2022_jp_2
@example(
    body=b"\x1b(\x94 \x8e\x8e\xa9\xff\xa1\xa1a-\xab\x1b\x80\xfe\x80$\xe3\x1b$\x1b\x00"
    b"\x1b -T\x80($\xa75\xa1\xfe{{((",
    piece=5,
)  # breaks iso2022_jp_2004
@example(
    body=b"\x1b$\x1b\x00{7\xd7A-B\x83\x8e\x1b(+\xa9\xc3$\xcc)\x8e+\xad{", piece=1
)  # breaks iso2022_jp_3
@example(body=b"\x8e\xc3\xe5\x1b$\xa1\x80-\xa9\x1b\x8e+\x0b", piece=1)  # breaks iso2022_jp_ext
@example(body=b"\x1b$\xc3\x80\x1b\xc3\x80\x9a(\xa9", piece=1)  # breaks iso2022_kr
@example(body=b"-A$B\x8e\x08\xc3A${8\xa9\x02\xa9~\xdc\xdc\x1b", piece=5)  # breaks utf-16
@example(
    body=b"$\xfe{\xc3\x8eTR.(+a\x80\xdcA(\xff+~{\xffA~$\x1b\xfe\xc3(A-\xbd$\x00a+\xeba\xff\xff",
    piece=8,
)  # breaks utf-32
@example(body=b"\xef", piece=1)  # breaks utf-8-sig
def test_a_body_decoded_by_pieces_is_the_body_decoded_whole(
    codec: str, body: bytes, piece: int
) -> None:
    """Whatever the bytes and wherever the pieces end, the text is the whole decode's (the
    examples are bodies that tell, by pieces, each codec decoded apart)."""
    assert "".join(decoded_pieces(body, codec, "replace", piece)) == decode_body(body, codec)


@pytest.mark.parametrize("codec", [*BY_PIECES, *WHOLE_ONLY])
async def test_a_long_body_is_the_body_decoded_whole(codec: str) -> None:
    """Longer than a piece, by either path, the text is the whole decode's."""
    body = (bytes(range(256)) + b"\x1b$B\x30\x21\x1b(B+2AA-\xff\xfe\x00\xd8") * 4
    assert await decode_in_pieces(body, codec, piece=64) == decode_body(body, codec)


@pytest.mark.parametrize("codec", WHOLE_ONLY)
async def test_a_long_body_in_a_charset_pieces_would_change_is_decoded_apart(codec: str) -> None:
    """A charset whose incremental decoder gives another text (a missing byte order mark is an
    error to it; ISO-2022's pending escapes overflow) is decoded whole, in a process of its
    own: the same text as here, lone surrogates included."""
    body = (bytes(range(256)) + b"\x1b$B\x30\x21\x1b(B+2AA-\xff\xfe\x00\xd8") * 40
    assert await decode_in_pieces(body, codec, piece=64) == decode_body(body, codec)


@pytest.mark.parametrize("charset", ["base64", "rot13", "hex", "zlib", "unicode-escape"])
def test_a_codec_that_is_no_text_charset_reads_the_body_as_utf8(charset: str) -> None:
    """``bytes.decode`` refuses codecs that are no text encoding (a LookupError out of the
    reader, before); Python's escape codecs read backslashes, not a page."""
    body = "h\u00e9llo \\N{BULLET}".encode()
    assert decode_body(body, charset) == body.decode()


async def test_decoding_by_pieces_lets_the_event_loop_run_other_tasks() -> None:
    """Between two pieces other tasks run: a task that counts its turns gets one a piece."""
    turns = 0
    body = b"+\xff" * 5000  # UTF-7's slowest case: every byte replaced

    async def count() -> None:
        nonlocal turns
        while True:
            turns += 1
            await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(count)
        text = await decode_in_pieces(body, "utf-7", piece=100)
        nursery.cancel_scope.cancel()
    assert text == decode_body(body, "utf-7")
    assert turns >= len(body) // 100 - 1
