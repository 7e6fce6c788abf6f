"""A stdio server's stderr is quoted from the end of its file, never read whole."""

from __future__ import annotations

import io
import tracemalloc

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agents.mcp import _connection
from agents.mcp._connection import stderr_tail


def _whole_file_tail(data: bytes) -> str:
    """The quote as it was taken before: the whole file read as text (universal newlines)."""
    text = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace").read()
    return "\n".join(text.strip().splitlines()[-5:])[-600:]


_piece = st.tuples(
    st.sampled_from(["e", "é", "😀", "\n", "\r\n", "\r", " ", "\u2028", "\x85", "\xff"]),
    st.integers(min_value=1, max_value=900),
)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@example(pieces=[("e", 700), ("\n", 1), (" ", 900)], window=16)
@example(pieces=[("😀", 300), ("\u2028", 1), ("e", 10)], window=17)
@example(pieces=[("\x85", 8), ("e", 1)], window=1)  # blank (NEL) before, one cut at the start
@example(pieces=[("😀", 2), ("e", 598)], window=601)  # 3 replacement characters in 601
@example(pieces=[("\x85", 2), (" ", 602), ("e", 1)], window=606)  # a cut NEL, then blanks
@given(pieces=st.lists(_piece, max_size=12), window=st.integers(min_value=1, max_value=64))
def test_the_quote_from_the_files_end_is_the_whole_files(
    pieces: list[tuple[str, int]], window: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines of any length, blank runs, CR, CRLF and Unicode line ends, characters cut where a
    window starts, bytes that are no UTF-8: read from the end a window at a time (here from 1
    to 64 bytes, doubled up to the whole file), the quote is the whole file's."""
    data = b"".join((b"\xff" if s == "\xff" else s.encode()) * n for s, n in pieces)
    monkeypatch.setattr(_connection, "_STDERR_WINDOW", window)
    monkeypatch.setattr(_connection, "_STDERR_WINDOW_MAX", max(window, len(data)))
    assert stderr_tail(io.BytesIO(data)) == _whole_file_tail(data)


def test_a_stderr_of_many_megabytes_is_not_read_whole() -> None:
    """64 MB of stderr, then the reason: the quote reads a window of the end (peak memory
    under 1 MiB), not the file."""
    data = io.BytesIO()
    for _ in range(64):
        data.write((b"e" * 1023 + b"\n") * 1024)
    data.write(b"the real reason: boom\n")
    tracemalloc.start()
    try:
        quote = stderr_tail(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
    assert quote.endswith("\nthe real reason: boom")
