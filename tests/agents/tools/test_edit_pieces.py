"""Edit by pieces: every operation on a :class:`PiecedText` of tiny pieces gives what the same
operation on the whole string gives, and Edit of a large file gives the bytes, result and
snippet the whole-string Edit gave."""

from __future__ import annotations

import io
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from agents.tools._pieces import PiecedText
from agents.tools._text_lines import MAX_LINE_CHARS
from agents.tools.base import ToolContext
from agents.tools.files import EditInput, _apply_edit, edit_tool, read_tool

from .edit_reference import count_occurrences, edit_at_once
from .toolkit import call, text_of

# what a decoded file holds: line ends of both kinds, non-ASCII, a BOM, escaped bytes; or
# only a and b, or only a, where needles repeat (and overlap themselves)
_texts = st.sampled_from(["a", "ab", "ab\n \r\u00e9\ufeff\udc80"]).flatmap(
    lambda alphabet: st.text(alphabet=alphabet, max_size=60)
)
_needles = st.text(alphabet="ab\n", max_size=5)  # "aa", "aba": needles that overlap themselves
_pieces = st.integers(min_value=1, max_value=6)


@st.composite
def _text_and_needle(draw: st.DrawFn) -> tuple[str, str]:
    """A text and a needle, half the time one cut from the text (so it occurs, often more
    than once)."""
    content = draw(_texts)
    if content and draw(st.booleans()):
        start = draw(st.integers(min_value=0, max_value=len(content) - 1))
        return content, content[start : start + draw(st.integers(min_value=1, max_value=5))]
    return content, draw(_needles)


def _made(edited: tuple[PiecedText, str] | str) -> tuple[str, str] | str:
    return edited if isinstance(edited, str) else (edited[0].join(), edited[1])


@settings(max_examples=1000, deadline=None)
@example(edited=("xaay", "aa"), new="b", replace_all=False, piece=2)  # across two pieces
@example(edited=("aaaaa", "aa"), new="b", replace_all=True, piece=2)  # matches that overlap
@example(edited=("abababa", "aba"), new="c", replace_all=True, piece=1)
@given(edited=_text_and_needle(), new=_texts, replace_all=st.booleans(), piece=_pieces)
def test_an_edit_by_pieces_is_the_edit_of_the_whole_string(
    edited: tuple[str, str], new: str, replace_all: bool, piece: int
) -> None:
    """The same text, snippet or refusal (with its count), whatever the pieces."""
    content, old = edited
    args = EditInput(file_path="/f", old_string=old, new_string=new, replace_all=replace_all)
    by_pieces = _apply_edit(PiecedText.of(content, piece), args)
    assert _made(by_pieces) == edit_at_once(content, old, new, replace_all)


_runs = st.lists(
    st.tuples(st.sampled_from("ab\n"), st.integers(min_value=1, max_value=MAX_LINE_CHARS + 40)),
    max_size=8,
)


@settings(max_examples=100, deadline=None)
@given(
    runs=_runs,
    old=_needles.filter(bool),
    new=st.text(alphabet="ab\n", max_size=3),
    piece=st.integers(min_value=7, max_value=3000),
)
def test_the_snippet_of_long_lines_by_pieces_is_the_whole_strings(
    runs: list[tuple[str, int]], old: str, new: str, piece: int
) -> None:
    """Lines around the edit as long as ``numbered`` cuts, or about so: the same snippet."""
    content = "".join(char * count for char, count in runs) + "\n" + old + "\n"
    args = EditInput(file_path="/f", old_string=old, new_string=new)
    by_pieces = _apply_edit(PiecedText.of(content, piece), args)
    assert _made(by_pieces) == edit_at_once(content, old, new, False)


@settings(max_examples=500, deadline=None)
@given(searched=_text_and_needle(), new=_texts, piece=_pieces)
def test_each_operation_by_pieces_is_the_whole_strings(
    searched: tuple[str, str], new: str, piece: int
) -> None:
    """find, counts, replacements, slices and the line-end searches, at every position."""
    content, needle = searched
    if not needle:
        return
    text = PiecedText.of(content, piece)
    assert text.join() == content and len(text) == len(content)
    assert text.blank() == (not content.strip())
    assert text.count_overlapping(needle) == count_occurrences(content, needle)
    assert text.replace_all(needle, new).join() == content.replace(needle, new)
    lines = content.split("\n")
    for at in range(len(content) + 1):
        k = content.count("\n", 0, at)
        for back in range(k + 1):
            for width in (1, 3):
                cut = [line[:width] for line in lines[k - back : k - back + 3]]
                assert text.lines(at, back, 3, width) == cut
    for at in range(len(content) + 2):
        assert text.find(needle, at) == content.find(needle, at)
        assert text.find_char("\n", at) == content.find("\n", at)
        assert text.rfind_char("\n", at) == content.rfind("\n", 0, at)
        assert text.count("\n", 0, at) == content.count("\n", 0, at)
        assert text.slice(at // 2, at) == content[at // 2 : at]
        assert (
            text.replaced(at // 2, 1, new).join()
            == content[: at // 2] + new + content[at // 2 + 1 :]
        )


_fragments = st.sampled_from(
    [
        b"a",
        b"\n",
        b"\r\n",
        b"\xef\xbb\xbf",  # a BOM
        b"\xc3\xa9",
        b"\xe2\x82\xac",
        b"\xf0\x9f\x98\x80",
        b"\xe2\x82",  # a sequence cut short
        b"\xff",
        b"\x80",
        b"\xed\xa0\x80",  # an encoded surrogate
        b"\xf4\x90\x80\x80",  # past U+10FFFF
        b"\xc0\xaf",  # overlong
    ]
)


@settings(max_examples=500, deadline=None)
@given(
    data=st.one_of(st.lists(_fragments, max_size=30).map(b"".join), st.binary(max_size=40)),
    piece=st.integers(min_value=1, max_value=8),
)
def test_a_file_decoded_and_encoded_by_pieces_is_decoded_and_encoded_whole(
    data: bytes, piece: int
) -> None:
    """Read ``piece`` bytes at a time, whatever sequence a piece's end cuts: the same text,
    and the same bytes back."""
    text = PiecedText.read(io.BytesIO(data), piece)
    assert text.join() == data.decode("utf-8", "surrogateescape")
    assert b"".join(text.encoded()) == data


@given(text=st.text(alphabet="a\ud800\udc80\udfff", max_size=12), piece=_pieces)
def test_a_text_that_cannot_be_encoded_raises_the_whole_strings_error(
    text: str, piece: int
) -> None:
    """A lone surrogate no byte decodes to (a hook's rewrite can bring one) fails as the whole
    string's encoding fails: the same message, placed in the whole text."""
    try:
        whole: bytes | str = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as exc:
        whole = str(exc)
    try:
        by_pieces: bytes | str = b"".join(PiecedText.of(text, piece).encoded())
    except UnicodeEncodeError as exc:
        by_pieces = str(exc)
    assert by_pieces == whole


async def test_a_large_files_edit_gives_the_bytes_and_snippet_of_the_whole_string(
    tmp_path: Path, ctx: ToolContext
) -> None:
    """Through the tool, a 600 KB file (read and decoded 256 KiB at a time) with a BOM, CRLF
    lines, bytes that are not UTF-8 and a character cut by a piece's end: the bytes written
    and the snippet shown are the whole string's."""
    line = "r\u00e9sum\u00e9 ".encode() + b"caf\xe9 \xff\r\n"
    head = b"\xef\xbb\xbf" + b"x" * (256 * 1024 - 4) + "\u20ac".encode()  # € across the cut
    data = head + line * 20_000 + b"TARGET\r\n" + line * 6
    path = tmp_path / "big.txt"
    path.write_bytes(data)
    await call(read_tool(), {"file_path": str(path), "limit": 1}, ctx)
    out = await call(
        edit_tool(), {"file_path": str(path), "old_string": "TARGET", "new_string": "é"}, ctx
    )
    content = data.decode("utf-8", "surrogateescape")
    made = edit_at_once(content, "TARGET", "é", False)
    assert isinstance(made, tuple)
    assert path.read_bytes() == made[0].encode("utf-8", "surrogateescape")
    assert text_of(out).endswith("snippet of the edited file:\n" + made[1])
