"""Read, Write and Edit: formats, limits, the read-first rule and every error message."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agents.permissions import PermissionCheck, PermissionGate, _checked
from agents.tools._pieces import PiecedText
from agents.tools.base import ToolContext, ToolInputError
from agents.tools.files import edit_tool, read_tool, write_tool

from .edit_reference import count_occurrences, snippet_at_once
from .toolkit import call, printed_within_a_deadline, text_of

READ, WRITE, EDIT = read_tool(), write_tool(), edit_tool()


# --- Read ---------------------------------------------------------------------------------


async def test_read_numbers_lines_like_cat_n(tmp_path: Path, ctx: ToolContext) -> None:
    f = tmp_path / "a.py"
    f.write_text("one\ntwo\n")
    out = await call(READ, {"file_path": str(f)}, ctx)
    assert not out.is_error
    assert text_of(out) == "     1\tone\n     2\ttwo"


async def test_read_offset_and_limit(tmp_path: Path, ctx: ToolContext) -> None:
    f = tmp_path / "a.txt"
    f.write_text("".join(f"line {i}\n" for i in range(1, 11)))
    out = text_of(await call(READ, {"file_path": str(f), "offset": 3, "limit": 2}, ctx))
    assert out.startswith("     3\tline 3\n     4\tline 4")
    assert "offset=5" in out


async def test_read_default_limit_is_2000_lines(tmp_path: Path, ctx: ToolContext) -> None:
    f = tmp_path / "big.txt"
    f.write_text("x\n" * 2500)
    out = text_of(await call(READ, {"file_path": str(f)}, ctx))
    assert "  2000\tx" in out
    assert "  2001\t" not in out
    assert "offset=2001" in out


async def test_read_truncates_long_lines(tmp_path: Path, ctx: ToolContext) -> None:
    f = tmp_path / "wide.txt"
    f.write_text("y" * 5000 + "\n")
    out = text_of(await call(READ, {"file_path": str(f)}, ctx))
    assert out.count("y") == 2000
    assert out.endswith("... [line truncated]")


async def test_read_large_file_goes_through_a_thread(tmp_path: Path, ctx: ToolContext) -> None:
    f = tmp_path / "large.txt"
    f.write_text("z" * 100 + "\n" * 1 + ("w" * 99 + "\n") * 20_000)  # ~2 MB
    out = text_of(await call(READ, {"file_path": str(f), "offset": 19_000, "limit": 1}, ctx))
    assert out.startswith(" 19000\t" + "w" * 99)


async def test_read_requires_absolute_path(ctx: ToolContext) -> None:
    out = await call(READ, {"file_path": "rel/a.txt"}, ctx)
    assert out.is_error
    assert text_of(out) == "file_path must be an absolute path, got 'rel/a.txt'"


async def test_read_missing_file(tmp_path: Path, ctx: ToolContext) -> None:
    out = await call(READ, {"file_path": str(tmp_path / "nope.txt")}, ctx)
    assert out.is_error
    assert text_of(out) == f"File does not exist: {tmp_path / 'nope.txt'}"


async def test_read_directory(tmp_path: Path, ctx: ToolContext) -> None:
    out = await call(READ, {"file_path": str(tmp_path)}, ctx)
    assert out.is_error
    assert "is a directory" in text_of(out)


async def test_read_empty_file_warns(tmp_path: Path, ctx: ToolContext) -> None:
    f = tmp_path / "empty.txt"
    f.write_text("")
    out = await call(READ, {"file_path": str(f)}, ctx)
    assert not out.is_error
    assert "the file exists but the contents are empty" in text_of(out)


async def test_read_offset_past_end(tmp_path: Path, ctx: ToolContext) -> None:
    f = tmp_path / "short.txt"
    f.write_text("a\nb\n")
    out = text_of(await call(READ, {"file_path": str(f), "offset": 10}, ctx))
    assert "shorter than the provided offset (10). The file has 2 lines." in out


async def test_read_refuses_binary(tmp_path: Path, ctx: ToolContext) -> None:
    f = tmp_path / "blob.dat2"
    f.write_bytes(b"abc\x00def")
    out = await call(READ, {"file_path": str(f)}, ctx)
    assert out.is_error
    assert text_of(out).startswith("Cannot read binary file")


async def test_read_image_is_an_image_block(tmp_path: Path, ctx: ToolContext) -> None:
    f = tmp_path / "pic.png"
    f.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 16)
    out = await call(READ, {"file_path": str(f)}, ctx)
    assert isinstance(out.content, list)
    assert out.content[0]["source"]["media_type"] == "image/png"


async def test_read_rejects_bad_input_with_json_path(ctx: ToolContext) -> None:
    with pytest.raises(ToolInputError, match=r"\$\.limit"):
        READ.validate({"file_path": "/x", "limit": "ten"})
    with pytest.raises(ToolInputError, match="file_path"):
        READ.validate({})


# --- Write --------------------------------------------------------------------------------


async def test_write_creates_file_and_parents(tmp_path: Path, ctx: ToolContext) -> None:
    f = tmp_path / "deep" / "er" / "new.txt"
    out = await call(WRITE, {"file_path": str(f), "content": "hi\n"}, ctx)
    assert text_of(out) == f"File created successfully at: {f}"
    assert f.read_text() == "hi\n"


async def test_write_existing_requires_read_first(tmp_path: Path, ctx: ToolContext) -> None:
    f = tmp_path / "a.txt"
    f.write_text("old")
    out = await call(WRITE, {"file_path": str(f), "content": "new"}, ctx)
    assert out.is_error
    assert text_of(out).startswith("File has not been read yet. Read it first")
    assert f.read_text() == "old"
    await call(READ, {"file_path": str(f)}, ctx)
    out = await call(WRITE, {"file_path": str(f), "content": "new"}, ctx)
    assert not out.is_error
    assert f.read_text() == "new"


async def test_write_refuses_file_changed_since_read(tmp_path: Path, ctx: ToolContext) -> None:
    f = tmp_path / "a.txt"
    f.write_text("old")
    await call(READ, {"file_path": str(f)}, ctx)
    f.write_text("changed by someone else")
    os.utime(f, ns=(1, 1))
    out = await call(WRITE, {"file_path": str(f), "content": "new"}, ctx)
    assert out.is_error
    assert "modified since read" in text_of(out)


async def test_write_counts_as_read(tmp_path: Path, ctx: ToolContext) -> None:
    f = tmp_path / "a.txt"
    await call(WRITE, {"file_path": str(f), "content": "1"}, ctx)
    out = await call(WRITE, {"file_path": str(f), "content": "2"}, ctx)
    assert not out.is_error
    assert f.read_text() == "2"


async def test_write_relative_path_is_an_error(ctx: ToolContext) -> None:
    out = await call(WRITE, {"file_path": "x.txt", "content": ""}, ctx)
    assert out.is_error
    assert "absolute path" in text_of(out)


async def test_write_large_content(tmp_path: Path, ctx: ToolContext) -> None:
    f = tmp_path / "large.txt"
    await call(WRITE, {"file_path": str(f), "content": "q" * 1_000_000}, ctx)
    assert f.stat().st_size == 1_000_000


# --- Edit ---------------------------------------------------------------------------------


async def _read_first(path: Path, ctx: ToolContext) -> None:
    assert not (await call(READ, {"file_path": str(path)}, ctx)).is_error


async def test_edit_replaces_unique_string_and_shows_snippet(
    tmp_path: Path, ctx: ToolContext
) -> None:
    f = tmp_path / "m.py"
    f.write_text("".join(f"l{i}\n" for i in range(1, 21)))
    await _read_first(f, ctx)
    out = text_of(
        await call(EDIT, {"file_path": str(f), "old_string": "l10\n", "new_string": "ten\n"}, ctx)
    )
    assert "has been updated" in out
    assert "    10\tten" in out
    assert "     6\tl6" in out and "    14\tl14" in out
    assert "     5\tl5" not in out
    assert "l10\n" not in f.read_text() and "ten\n" in f.read_text()


async def test_edit_requires_read_first(tmp_path: Path, ctx: ToolContext) -> None:
    f = tmp_path / "m.py"
    f.write_text("a = 1\n")
    out = await call(EDIT, {"file_path": str(f), "old_string": "1", "new_string": "2"}, ctx)
    assert out.is_error
    assert "has not been read yet" in text_of(out)


async def test_edit_not_found(tmp_path: Path, ctx: ToolContext) -> None:
    f = tmp_path / "m.py"
    f.write_text("a = 1\n")
    await _read_first(f, ctx)
    out = await call(EDIT, {"file_path": str(f), "old_string": "b", "new_string": "c"}, ctx)
    assert out.is_error
    assert text_of(out) == "String to replace not found in file.\nString: b"


async def test_edit_found_n_times(tmp_path: Path, ctx: ToolContext) -> None:
    f = tmp_path / "m.py"
    f.write_text("x x x\n")
    await _read_first(f, ctx)
    out = await call(EDIT, {"file_path": str(f), "old_string": "x", "new_string": "y"}, ctx)
    assert out.is_error
    assert text_of(out).startswith(
        "Found 3 matches of the string to replace, but replace_all is false."
    )
    assert f.read_text() == "x x x\n"


async def test_edit_replace_all(tmp_path: Path, ctx: ToolContext) -> None:
    f = tmp_path / "m.py"
    f.write_text("x x x\n")
    await _read_first(f, ctx)
    out = await call(
        EDIT, {"file_path": str(f), "old_string": "x", "new_string": "yy", "replace_all": True}, ctx
    )
    assert not out.is_error
    assert f.read_text() == "yy yy yy\n"


async def test_edit_same_strings(tmp_path: Path, ctx: ToolContext) -> None:
    f = tmp_path / "m.py"
    f.write_text("x\n")
    await _read_first(f, ctx)
    out = await call(EDIT, {"file_path": str(f), "old_string": "x", "new_string": "x"}, ctx)
    assert out.is_error
    assert text_of(out).startswith("No changes to make: old_string and new_string are exactly")


async def test_edit_missing_file(tmp_path: Path, ctx: ToolContext) -> None:
    f = tmp_path / "none.py"
    out = await call(EDIT, {"file_path": str(f), "old_string": "x", "new_string": "y"}, ctx)
    assert text_of(out) == f"File does not exist: {f}"


async def test_edit_empty_old_string_creates_missing_file(tmp_path: Path, ctx: ToolContext) -> None:
    f = tmp_path / "new.py"
    out = await call(EDIT, {"file_path": str(f), "old_string": "", "new_string": "hi"}, ctx)
    assert not out.is_error
    assert f.read_text() == "hi"


async def test_edit_sees_its_own_writes(tmp_path: Path, ctx: ToolContext) -> None:
    f = tmp_path / "m.py"
    f.write_text("a b\n")
    await _read_first(f, ctx)
    await call(EDIT, {"file_path": str(f), "old_string": "a", "new_string": "A"}, ctx)
    out = await call(EDIT, {"file_path": str(f), "old_string": "b", "new_string": "B"}, ctx)
    assert not out.is_error
    assert f.read_text() == "A B\n"


async def test_edit_keeps_invalid_utf8_bytes(tmp_path: Path, ctx: ToolContext) -> None:
    f = tmp_path / "latin.txt"
    f.write_bytes(b"caf\xe9 = 1\n")
    await _read_first(f, ctx)
    await call(EDIT, {"file_path": str(f), "old_string": "1", "new_string": "2"}, ctx)
    assert f.read_bytes() == b"caf\xe9 = 2\n"


def test_count_occurrences_counts_overlaps() -> None:
    assert count_occurrences("aaa", "aa") == 2
    assert count_occurrences("abc", "d") == 0


_alphabet = st.text(alphabet="ab\n", max_size=12)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(content=_alphabet, old=st.text(alphabet="ab\n", min_size=1, max_size=3), new=_alphabet)
async def test_edit_changes_file_iff_old_string_occurs_once(
    tmp_path: Path, ctx: ToolContext, content: str, old: str, new: str
) -> None:
    """Property: with replace_all=False the file changes exactly when old_string is unique."""
    if old == new:
        return
    f = tmp_path / "prop.txt"
    f.write_bytes(content.encode())
    await _read_first(f, ctx)
    out = await call(EDIT, {"file_path": str(f), "old_string": old, "new_string": new}, ctx)
    after = f.read_bytes().decode()
    occurs_once = count_occurrences(content, old) == 1
    assert (after != content) == occurs_once
    assert out.is_error == (not occurs_once)
    if occurs_once:
        assert after == content.replace(old, new, 1)


# --- the file used is the file checked -----------------------------------------------------


@pytest.fixture
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory outside the tool's working directory holding a secret."""
    root = tmp_path_factory.mktemp("outside")
    (root / "secret.txt").write_text("the secret\n")
    return root


def swap_in(monkeypatch: pytest.MonkeyPatch, action: Any) -> list[str]:
    """Run ``action`` between the check and the open (the seam), once; records the paths."""
    seen: list[str] = []

    def between(checked: Any) -> None:
        if not seen:
            action()
        seen.append(checked.real)

    monkeypatch.setattr(_checked, "_between_check_and_open", between)
    return seen


def replace_with_link(path: Path, target: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
    path.symlink_to(target)


async def test_a_link_swapped_in_after_the_gates_check_is_not_followed(
    tmp_path: Path, outside: Path, ctx: ToolContext
) -> None:
    """The gate approves reading a plain file; it is then replaced by a link to a secret: the
    Read opens nothing."""
    f = tmp_path / "notes.txt"
    f.write_text("notes\n")
    gate = PermissionGate(mode="default", cwd=str(tmp_path), home="/nonexistent")
    check = PermissionCheck("Read", {"file_path": str(f)}, ctx.tool_use_id, read_only=True)
    assert (await gate.check(check, {})).behavior == "allow"
    replace_with_link(f, outside / "secret.txt")
    ctx.files = gate.files
    out = await call(READ, {"file_path": str(f)}, ctx)
    assert out.is_error and text_of(out).startswith(f"Refused to open {f}")
    assert "the secret" not in text_of(out)


async def test_reading_a_file_swapped_for_a_link_at_the_open_is_refused(
    tmp_path: Path, outside: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = tmp_path / "notes.txt"
    f.write_text("notes\n")
    swap_in(monkeypatch, lambda: replace_with_link(f, outside / "secret.txt"))
    out = await call(READ, {"file_path": str(f)}, ctx)
    assert out.is_error and "the secret" not in text_of(out)


async def test_editing_a_file_swapped_for_a_link_is_refused(
    tmp_path: Path, outside: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = tmp_path / "notes.txt"
    f.write_text("the secret\n")
    await call(READ, {"file_path": str(f)}, ctx)
    swap_in(monkeypatch, lambda: replace_with_link(f, outside / "secret.txt"))
    raw = {"file_path": str(f), "old_string": "the secret", "new_string": "pwned"}
    out = await call(EDIT, raw, ctx)
    assert out.is_error and text_of(out).startswith(f"Refused to open {f}")
    assert (outside / "secret.txt").read_text() == "the secret\n"


async def test_writing_under_a_directory_swapped_for_a_link_is_refused(
    tmp_path: Path, outside: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new file in ``d/``: ``d`` becomes a link to another directory before the open."""
    d = tmp_path / "d"
    d.mkdir()
    swap_in(monkeypatch, lambda: replace_with_link(d, outside))
    out = await call(WRITE, {"file_path": str(d / "secret.txt"), "content": "pwned"}, ctx)
    assert out.is_error and text_of(out).startswith("Refused to open")
    assert (outside / "secret.txt").read_text() == "the secret\n"


async def test_creating_a_file_where_a_link_appeared_is_refused(
    tmp_path: Path, outside: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file did not exist at the check; a link to the secret appears at its name."""
    f = tmp_path / "new.txt"
    swap_in(monkeypatch, lambda: f.symlink_to(outside / "secret.txt"))
    out = await call(WRITE, {"file_path": str(f), "content": "pwned"}, ctx)
    assert out.is_error and text_of(out).startswith(f"Refused to open {f}")
    assert (outside / "secret.txt").read_text() == "the secret\n"


async def test_a_write_creates_missing_directories_without_following_links(
    tmp_path: Path, ctx: ToolContext
) -> None:
    out = await call(WRITE, {"file_path": str(tmp_path / "x" / "y" / "f.txt"), "content": "z"}, ctx)
    assert not out.is_error
    assert (tmp_path / "x" / "y" / "f.txt").read_text() == "z"


async def test_read_follows_dotdot_after_a_link_as_the_kernel_does(
    tmp_path: Path, outside: Path, ctx: ToolContext
) -> None:
    """``link/../secret.txt`` is the secret beside the link's target, as ``open`` finds it."""
    (outside / "deep").mkdir()
    (tmp_path / "link").symlink_to(outside / "deep")
    out = await call(READ, {"file_path": f"{tmp_path}/link/../secret.txt"}, ctx)
    assert text_of(out) == "     1\tthe secret"


async def test_a_link_before_dotdot_repointed_after_the_check_is_not_followed(
    tmp_path: Path, outside: Path, ctx: ToolContext
) -> None:
    """``a/../notes.txt`` was checked with ``a`` inside the project; ``a`` then points
    outside, where a ``notes.txt`` waits: the Read still opens the checked file."""
    (tmp_path / "inner").mkdir()
    (tmp_path / "notes.txt").write_text("notes\n")
    (outside / "deep").mkdir()
    (outside / "notes.txt").write_text("the secret\n")
    (tmp_path / "a").symlink_to(tmp_path / "inner")
    path = f"{tmp_path}/a/../notes.txt"
    gate = PermissionGate(mode="default", cwd=str(tmp_path), home="/nonexistent")
    check = PermissionCheck("Read", {"file_path": path}, ctx.tool_use_id, read_only=True)
    assert (await gate.check(check, {})).behavior == "allow"
    (tmp_path / "a").unlink()
    (tmp_path / "a").symlink_to(outside / "deep")
    ctx.files = gate.files
    out = await call(READ, {"file_path": path}, ctx)
    assert text_of(out) == "     1\tnotes"


def _read_slice_whole_lines(f: Any, start: int, limit: int) -> tuple[list[str], bool]:
    """What Read returned before lines were read in bounded pieces: every line whole (the
    reference for the property below)."""
    lines: list[str] = []
    more = False
    for i, raw in enumerate(f):
        if i < start:
            continue
        if len(lines) == limit:
            more = True
            break
        lines.append(raw.decode("utf-8", "surrogateescape").rstrip("\r\n"))
    return lines, more


_piece = st.tuples(
    st.sampled_from(["a", "é", "😀", "\r", "\r\n", "\n", "\xff", "b\r"]),
    st.integers(min_value=1, max_value=9000),
)


@settings(max_examples=60, deadline=None)
@example(pieces=[("a", 1999), ("\r", 7000)], start=0, limit=1)  # CRs only past the head
@example(pieces=[("a", 10), ("\r", 9000), ("\r\n", 1), ("a", 3)], start=0, limit=2)
@example(pieces=[("a", 1999), ("\r", 6010), ("b\r", 1)], start=0, limit=1)  # then text
@given(
    pieces=st.lists(_piece, min_size=1, max_size=8),
    start=st.integers(min_value=0, max_value=4),
    limit=st.integers(min_value=1, max_value=6),
)
def test_long_lines_read_in_bounded_pieces_show_as_whole_lines_did(
    tmp_path_factory: pytest.TempPathFactory,
    pieces: list[tuple[str, int]],
    start: int,
    limit: int,
) -> None:
    """Lines far past the 2 000-character cut, long runs of CRs at a cut, characters split
    where the head ends, bytes that are no UTF-8: Read shows each line (numbered and cut) and
    counts lines exactly as it did reading every line whole."""
    from agents.tools._text_lines import count_lines as _count_lines
    from agents.tools._text_lines import numbered as _numbered
    from agents.tools._text_lines import read_slice as _read_slice

    raw = b"".join((s.encode("utf-8") if s != "\xff" else b"\xff") * n for s, n in pieces)
    path = tmp_path_factory.mktemp("lines") / "f.txt"
    path.write_bytes(raw)
    with open(path, "rb") as f:
        window = _read_slice(f, str(path), start, limit)
        total = _count_lines(f)
        f.seek(0)
        want, want_more = _read_slice_whole_lines(f, start, limit)
        f.seek(0)
        want_total = sum(1 for _ in f)
    assert not window.binary and not window.capped
    assert (window.text, window.count, window.more) == (
        _numbered(want, start + 1),
        len(want),
        want_more,
    )
    assert total == want_total


def test_a_line_of_many_megabytes_is_read_in_bounded_memory(tmp_path: Path) -> None:
    """A file of one 64 MB line: Read keeps a few kilobytes of it (peak memory under 4 MiB,
    the 64 MB it would hold whole), and shows it cut with the marker."""
    import tracemalloc

    from agents.tools._text_lines import read_slice as _read_slice

    path = tmp_path / "one-line.txt"
    with open(path, "wb") as f:
        for _ in range(64):
            f.write(b"x" * (1 << 20))
    tracemalloc.start()
    try:
        with open(path, "rb") as f:
            window = _read_slice(f, str(path), 0, 2000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20
    assert (window.text, window.more) == ("     1\t" + "x" * 2000 + "... [line truncated]", False)


async def test_a_huge_limit_stops_at_the_character_limit_naming_it(
    tmp_path: Path, ctx: ToolContext
) -> None:
    """``limit`` asks for more lines than fit in MAX_READ_CHARS: Read stops at the last line
    that fits and says how to go on, naming the limit. The lines are as wide as makes the
    text exactly the limit (each one 6 columns, a tab, 149 characters and a newline)."""
    from agents.tools.files import MAX_READ_CHARS

    path = tmp_path / "wide.txt"
    path.write_text(("w" * 149 + "\n") * 30_000)
    out = await call(read_tool(), {"file_path": str(path), "limit": 10**9}, ctx)
    assert (MAX_READ_CHARS + 1) % 157 == 0
    shown = (MAX_READ_CHARS + 1) // 157
    body = "\n".join(f"{n:>6}\t" + "w" * 149 for n in range(1, shown + 1))
    assert len(body) == MAX_READ_CHARS
    assert text_of(out) == body + (
        f"\n\n(Showing lines 1-{shown}: Read returns at most {MAX_READ_CHARS} characters "
        f"(MAX_READ_CHARS). Read with offset={shown + 1} to continue.)"
    )
    assert out.data == {"file_path": str(path), "start_line": 1, "num_lines": shown, "more": True}
    again = await call(read_tool(), {"file_path": str(path), "offset": shown + 1}, ctx)
    assert text_of(again).startswith(f"{shown + 1:>6}\t")


async def test_the_default_window_of_the_longest_lines_is_not_capped(
    tmp_path: Path, ctx: ToolContext
) -> None:
    """2 000 lines of over 2 000 characters, numbered past a million: the default window
    fits the limit."""
    big = tmp_path / "numbers.txt"
    big.write_text("\n" * 1_000_000 + ("z" * 3000 + "\n") * 2001)
    out = await call(read_tool(), {"file_path": str(big), "offset": 1_000_001}, ctx)
    assert text_of(out).endswith(
        "(Showing lines 1000001-1002000; the file has more. Read with offset=1002001 to continue.)"
    )


def test_a_huge_limit_holds_memory_near_the_character_limit(tmp_path: Path) -> None:
    """40 MB of short lines read with a limit of 10**9: the read holds about the limit's worth
    (peak under 24 MiB), not the file."""
    import tracemalloc

    from agents.tools._text_lines import read_slice as _read_slice

    path = tmp_path / "many.txt"
    with open(path, "wb") as f:
        for _ in range(40):
            f.write((b"y" * 99 + b"\n") * 10_486)
    tracemalloc.start()
    try:
        with open(path, "rb") as f:
            window = _read_slice(f, str(path), 0, 10**9)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert window.capped
    assert peak < 24 << 20


async def test_a_window_longer_than_the_default_is_read_off_the_event_loop(
    tmp_path: Path, ctx: ToolContext, thread_calls: list[object]
) -> None:
    """A small file read with a limit past the default window is read and numbered in a worker
    thread (260 000 empty lines of a 256 KiB file took 150 ms), one within it inline."""
    threads = thread_calls
    path = tmp_path / "empty-lines.txt"
    path.write_text("\n" * 5000)
    await call(read_tool(), {"file_path": str(path)}, ctx)
    assert threads == []
    out = await call(read_tool(), {"file_path": str(path), "limit": 10_000}, ctx)
    assert len(threads) == 1
    assert text_of(out).endswith("  5000\t")


def _edit_whole(content: str, old: str, new: str, replace_all: bool) -> tuple[str, str] | str:
    """The edit as it was made before (every match counted first): the reference below."""
    if old == "":
        if content.strip():
            return (
                "Cannot create new file - file already exists. "
                "Provide the old_string to replace instead."
            )
        updated, at = new, 0
    else:
        n = count_occurrences(content, old)
        if n == 0:
            return f"String to replace not found in file.\nString: {old}"
        if n > 1 and not replace_all:
            return (
                f"Found {n} matches of the string to replace, but replace_all is false. To "
                "replace all occurrences, set replace_all to true. To replace only one "
                "occurrence, please provide more context to uniquely identify the instance.\n"
                f"String: {old}"
            )
        at = content.find(old)
        updated = content.replace(old, new) if replace_all else content.replace(old, new, 1)
    return updated, "" if replace_all else snippet_at_once(updated, at, len(new))


_edit_text = st.text(alphabet="ab\n ", max_size=40)


@settings(max_examples=300)
@example(content="aaa", old="aa", new="b", every=False)  # the second match overlaps the first
@given(
    content=_edit_text,
    old=st.text(alphabet="ab\n", max_size=4),
    new=_edit_text,
    every=st.booleans(),
)
def test_an_edit_made_with_a_second_search_is_the_edit_made_counting(
    content: str, old: str, new: str, every: bool
) -> None:
    """Known unique by a second search, not by counting every (overlapping) match: the same
    text, snippet or refusal (with its count) as counting first."""
    from agents.tools.files import EditInput, _apply_edit

    args = EditInput(file_path="/f", old_string=old, new_string=new, replace_all=every)
    edited = _apply_edit(PiecedText.of(content), args)
    made = edited if isinstance(edited, str) else (edited[0].join(), edited[1])
    assert made == _edit_whole(content, old, new, every)


@pytest.mark.parametrize(
    ("size", "edit", "threads"),
    [
        (1_000, {"old_string": "NEEDLE", "new_string": "X"}, 0),
        (1_000_000, {"old_string": "NEEDLE", "new_string": "X"}, 1),
        # a small file whose edit writes 1 MB
        (1_000, {"old_string": "a", "new_string": "X" * 1_000, "replace_all": True}, 1),
    ],
)
async def test_a_large_files_edit_is_made_off_the_event_loop(
    tmp_path: Path,
    ctx: ToolContext,
    thread_calls: list[object],
    size: int,
    edit: dict[str, Any],
    threads: int,
) -> None:
    """Loading, finding and replacing (with the snippet), and writing a file over 256 KiB, or
    an edit that may write that much, are one trip to the worker thread: counting "aa" in
    10 MB of "a" held the event loop 1.2 s."""
    path = tmp_path / "big.txt"
    path.write_text("a" * size + "\nNEEDLE\n")
    await call(read_tool(), {"file_path": str(path), "limit": 1}, ctx)
    used = thread_calls
    used.clear()  # (the read before: not the edit's)
    out = await call(edit_tool(), {"file_path": str(path), **edit}, ctx)
    assert not out.is_error, out.content
    assert len(used) == threads
    content = "a" * size + "\nNEEDLE\n"
    assert path.read_text() == content.replace(
        edit["old_string"], edit["new_string"], -1 if edit.get("replace_all") else 1
    )


@pytest.mark.parametrize("size", [10, 300_000], ids=["small", "large"])
@pytest.mark.parametrize("tool", ["Write", "Edit", "Edit replace_all"])
async def test_a_text_that_cannot_be_encoded_leaves_the_file_as_it_was(
    tool: str, size: int, tmp_path: Path, ctx: ToolContext
) -> None:
    """A lone surrogate no byte was read as (only a hook's or a callback's rewrite can bring
    one: a JSON decoder refuses it) is an error, and the file keeps every byte (before: the
    file was opened, and so emptied, before the text was encoded)."""
    f = tmp_path / "a.txt"
    original = "keep me\n" * (size // 8 + 1) + "the end\n"
    f.write_text(original)
    await call(READ, {"file_path": str(f)}, ctx)
    bad = "x\ud800y"
    if tool == "Write":
        raw: dict[str, Any] = {"file_path": str(f), "content": original + bad}
        call_tool = WRITE
    else:
        every = tool == "Edit replace_all"
        raw = {"file_path": str(f), "old_string": "keep" if every else "the end",
               "new_string": bad, "replace_all": every}  # fmt: skip
        call_tool = EDIT
    with pytest.raises(UnicodeEncodeError):
        await call(call_tool, raw, ctx)
    assert f.read_text() == original


_READ_SPECIAL = """
import os, sys, tempfile, trio
from agents.tools.base import ToolContext
from agents.tools.files import read_tool
root = tempfile.mkdtemp()
os.mkfifo(os.path.join(root, "fifo"))
async def main():
    ctx = ToolContext(cwd=root, agent_id="main", tool_use_id="t", session_id="s")
    read = read_tool()
    for path in (os.path.join(root, "fifo"), "/dev/zero", "/dev/null"):
        out = await read.handler(read.validate({"file_path": path}), ctx)
        print(out.is_error, str(out.content).replace(root, "ROOT"))
trio.run(main)
"""


def test_reading_a_pipe_or_a_device_is_an_error_at_once() -> None:
    """A named pipe with no writer (opening it waited for one, on the event loop: the whole
    session hung), a device without end (``/dev/zero``: read as "empty") or any other file that
    is not a regular one: an error naming the kind, in a process of its own with a deadline."""
    assert printed_within_a_deadline(_READ_SPECIAL, seconds=30).splitlines() == [
        "True Cannot read ROOT/fifo: not a regular file (a named pipe)",
        "True Cannot read /dev/zero: not a regular file (a character device)",
        "True Cannot read /dev/null: not a regular file (a character device)",
    ]


async def test_a_file_whose_size_says_zero_is_read_for_what_it_holds(ctx: ToolContext) -> None:
    """``/proc`` files report a size of 0 and hold text: read, not called empty (Linux)."""
    out = await call(READ, {"file_path": "/proc/self/status"}, ctx)
    assert not out.is_error
    assert "Name:" in text_of(out)
