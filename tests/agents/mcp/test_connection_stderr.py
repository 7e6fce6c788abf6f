"""A stdio server's stderr is kept from its end (at most a MiB) and quoted from there."""

from __future__ import annotations

import io
import sys
import tracemalloc
from typing import Any

import pytest
import trio
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agents.mcp import _connection, open_mcp_servers
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


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=st.binary(max_size=300).map(lambda b: b.replace(b"\x00", b"\n")),
    cuts=st.lists(st.integers(1, 50), max_size=20),
    window=st.integers(min_value=1, max_value=16),
    doublings=st.integers(min_value=0, max_value=4),
)
def test_the_quote_of_the_kept_tail_is_the_whole_streams(
    data: bytes, cuts: list[int], window: int, doublings: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fed in reads of any size, the tail keeps the newest ``_STDERR_WINDOW_MAX`` bytes and
    no more, and its quote is the one the whole stream, kept in a file, gave (the largest
    window the quote reads is ``_STDERR_WINDOW_MAX``, the first doubled: 64 KiB to 1 MiB)."""
    kept = window << doublings
    monkeypatch.setattr(_connection, "_STDERR_WINDOW", window)
    monkeypatch.setattr(_connection, "_STDERR_WINDOW_MAX", kept)
    tail = _connection.StderrTail()
    rest = data
    for cut in cuts:
        tail.keep(rest[:cut])
        rest = rest[cut:]
    tail.keep(rest)
    assert len(tail._kept) == min(kept, len(data))
    assert tail.quote() == stderr_tail(io.BytesIO(data))


def _stdio(script: str) -> dict[str, Any]:
    return {"type": "stdio", "command": sys.executable, "args": ["-c", script]}


async def test_a_server_that_exits_is_quoted_from_its_last_words() -> None:
    """What it wrote just before exiting is in the pipe, not yet read: the quote takes it."""
    script = "import sys; sys.stderr.write('starting\\nno config file: boom\\n'); sys.exit(2)"
    with trio.fail_after(30):
        async with open_mcp_servers({"s": _stdio(script)}) as servers:
            status = servers.status()[0]
    assert status.status == "failed"
    assert status.error is not None
    assert status.error.endswith("; its stderr ends with: starting\nno config file: boom")


async def test_a_server_that_floods_its_stderr_holds_a_mebibyte_of_it_at_most() -> None:
    """8 MiB of stderr, then the reason, then the exit: the connection kept the newest MiB
    (nothing on disk), and the quote ends with the reason."""
    script = (
        "import sys\n"
        "for _ in range(8192): sys.stderr.write('e' * 1023 + '\\n')\n"
        "sys.stderr.write('the real reason: boom\\n'); sys.exit(3)"
    )
    with trio.fail_after(60):
        async with open_mcp_servers({"s": _stdio(script)}, connect_timeout=50) as servers:
            status = servers.status()[0]
            kept = servers._connections["s"]._stderr
    assert status.error is not None and status.error.endswith("the real reason: boom")
    assert kept is not None and len(kept._kept) == _connection._STDERR_WINDOW_MAX


def test_the_kept_tail_is_the_largest_window_a_quote_reads() -> None:
    assert _connection._STDERR_WINDOW_MAX == _connection._STDERR_WINDOW << 4


class _Flood(trio.abc.ReceiveStream):
    """A stderr that always has 64 KiB more to read."""

    def __init__(self) -> None:
        self.reads = 0

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        await trio.lowlevel.checkpoint()
        self.reads += 1
        # (read unpaced, virtual time would never pass: fail rather than hang)
        assert self.reads <= 2 / _connection._STDERR_PACE + 1, "read faster than paced"
        return b"e" * (max_bytes or 1 << 16)

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()


async def test_a_flooded_stderr_is_read_once_per_pace_and_kept_to_its_limit(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Read for 2 s (virtual time): at most one read per ``_STDERR_PACE``, the newest MiB
    kept; the event loop is never spent on a loop of reads."""
    tail, flood = _connection.StderrTail(), _Flood()
    with trio.move_on_after(2):
        await tail.drain(flood)
    assert flood.reads <= 2 / _connection._STDERR_PACE + 1
    assert len(tail._kept) == _connection._STDERR_WINDOW_MAX
