"""The cutter: a foreground command's output is cut before it reaches the event loop.

The reference is the shell tool's reading as it was, before the cutter (``_reference_collect``
below, the old code with its limits as parameters): it read every byte of a command's output,
kept the first ``HEAD`` and the last ``TAIL`` to ``2 * TAIL``, and counted the rest as dropped.
The cutter keeps the same, in a process of its own, so the event loop reads only that.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agents.tools import shell
from agents.tools._cutter import DONE, Segment
from agents.tools.base import ToolContext
from agents.tools.shell import OUTPUT_CAP, bash_output_tool, bash_tool

from .toolkit import call, text_of, wait_gone

BASH, OUTPUT = bash_tool(), bash_output_tool()

#: Small limits for the generated outputs (the real ones: 120 000 and 8192 bytes).
HEAD, TAIL = 64, 16
TOKEN = "0123456789abcdef0123456789abcdef"


@attrs.define
class _Chunks:
    """A stream that gives ``chunks`` one read at a time, then its end."""

    chunks: Iterator[bytes]
    read: int = 0

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        await trio.lowlevel.checkpoint()
        chunk = next(self.chunks, b"")
        assert max_bytes is None or len(chunk) <= max_bytes
        self.read += len(chunk)
        return chunk


@attrs.define
class _Process:
    stdout: _Chunks

    async def wait(self) -> int:
        return 4


@attrs.define
class _FakeShell:
    process: _Process


def _split(data: bytes, cuts: list[int], limit: int = 65536) -> Iterator[bytes]:
    """``data`` read in pieces ending at ``cuts`` (and at most ``limit`` bytes each)."""
    at = 0
    for cut in [*sorted(c % (len(data) + 1) for c in cuts), len(data)]:
        while at < cut:
            yield data[at : min(cut, at + limit)]
            at = min(cut, at + limit)


async def _reference_collect(stream: _Chunks, marker: bytes, head: int, tail: int) -> Any:
    """The shell tool's reading before the cutter (its code, the limits as parameters)."""
    buf = bytearray()
    dropped = 0
    while True:
        chunk = await stream.receive_some(65536)
        if not chunk:
            return bytes(buf), dropped, None, None
        buf += chunk
        at = buf.find(marker, max(0, len(buf) - len(chunk) - len(marker)))
        if at != -1:
            end = buf.find(b"\n", at + len(marker))
            while end == -1:
                more = await stream.receive_some(65536)
                if not more:
                    break
                buf += more
                end = buf.find(b"\n", at + len(marker))
            line = buf[at + len(marker) : end if end != -1 else len(buf)].decode(errors="replace")
            status, _, pwd = line.partition(" ")
            return bytes(buf[:at]), dropped, int(status or 0), pwd or None
        if len(buf) > head + 2 * tail:
            excess = len(buf) - head - tail
            del buf[head : head + excess]
            dropped += excess


def _cut(stream: bytes, cuts: list[int]) -> bytes:
    """What the cutter sends for ``stream`` read in pieces ending at ``cuts``."""
    segment = Segment(DONE + TOKEN.encode() + b"__ ", HEAD, TAIL)
    sent = bytearray()
    for piece in _split(stream, cuts):
        out, after = segment.feed(piece)
        sent += out
        if after is not None:
            return bytes(sent)
    return bytes(sent + segment.finish(TOKEN.encode()))


@pytest.fixture
def small_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shell, "_HEAD_BYTES", HEAD)
    monkeypatch.setattr(shell, "_TAIL_BYTES", TAIL)


_BYTES = st.sampled_from(
    [b"x", b"y\n", b"\xc3\xa9", b"\xff", b" ", b"\n", b"__AGENTS_DONE_", b"\n__AGENTS_DONE_0123"]
)


@st.composite
def _outputs(draw: st.DrawFn) -> bytes:
    """Outputs around the limits: pieces (marker fragments too) repeated up to 300 bytes."""
    pieces = draw(st.lists(_BYTES, min_size=0, max_size=40))
    repeat = draw(st.sampled_from([1, 1, 2, 3, 5]))
    return (b"".join(pieces) * repeat)[: draw(st.integers(0, 300))]


_CUTS = st.lists(st.integers(0, 400), max_size=6)
_FIXTURE = [HealthCheck.function_scoped_fixture]  # (small_limits: the same for every example)


@settings(max_examples=500, deadline=None, suppress_health_check=_FIXTURE)
@given(output=_outputs(), status=st.sampled_from([0, 1, 141]), cuts=_CUTS, reads=_CUTS)
@example(output=b"x" * (HEAD + 2 * TAIL), status=0, cuts=[], reads=[])
@example(output=b"x" * (HEAD + 2 * TAIL + 1), status=0, cuts=[], reads=[])
@example(output=b"\n__AGENTS_DONE_0123", status=0, cuts=[3, 10], reads=[])
@example(output=b"x" * 200, status=0, cuts=[190, 230], reads=[])  # (the marker straddles)
@example(output=b"x" * 200, status=0, cuts=[190, 260], reads=[])
@example(output=b"x" * 200, status=0, cuts=[249], reads=[])  # (all but its last byte read)
@example(output=b"x" * 200, status=0, cuts=[201], reads=[])  # (its first byte read)
async def test_the_cut_output_is_the_output_the_shell_tool_kept(
    small_limits: None, output: bytes, status: int, cuts: list[int], reads: list[int]
) -> None:
    """Read from the cutter, a command's output gives what reading it whole gave: byte for
    byte up to ``HEAD + 2 * TAIL`` bytes; beyond, the same first ``HEAD`` bytes, a last part of
    ``TAIL`` to ``2 * TAIL`` bytes, and all other bytes counted as dropped. Whatever the reads
    (the shell's, by the cutter, and the cutter's, by the event loop)."""
    end_line = f"\n__AGENTS_DONE_{TOKEN}__ {status} /some dir\n".encode()
    stream = output + end_line + b"next command's"
    old = await _reference_collect(
        _Chunks(iter([stream])), end_line[: end_line.index(b"__ ") + 3], HEAD, TAIL
    )
    sent = _cut(stream, cuts)
    new = await shell._collect(_FakeShell(_Process(_Chunks(_split(sent, reads)))), TOKEN)  # type: ignore[arg-type]
    assert (new.status, new.pwd) == (old[2], old[3]) == (status, "/some dir")
    if len(output) <= HEAD + 2 * TAIL:
        assert (new.output, new.dropped) == (old[0], old[1]) == (output, 0)
        assert shell._cap(new.output, new.dropped) == shell._cap(old[0], old[1])
    else:
        kept = len(new.output) - HEAD
        assert new.output[:HEAD] == old[0][:HEAD] == output[:HEAD]
        assert TAIL <= kept <= 2 * TAIL and new.output[HEAD:] == output[len(output) - kept :]
        assert new.dropped == len(output) - len(new.output) > 0
    assert len(sent) <= HEAD + 2 * TAIL + len(end_line) + 4  # (the count: "%d ")


@settings(max_examples=300, deadline=None, suppress_health_check=_FIXTURE)
@given(output=_outputs(), cuts=_CUTS, reads=_CUTS)
async def test_when_the_shell_exits_the_cut_output_is_the_output_it_kept(
    small_limits: None, output: bytes, cuts: list[int], reads: list[int]
) -> None:
    """A command that ends the shell (no end line): the same output and count as reading it
    whole, the count sent after the last part when bytes were dropped."""
    marker = f"\n__AGENTS_DONE_{TOKEN}__ ".encode()
    old = await _reference_collect(_Chunks(iter([output])), marker, HEAD, TAIL)
    sent = _cut(output, cuts)
    new = await shell._collect(_FakeShell(_Process(_Chunks(_split(sent, reads)))), TOKEN)  # type: ignore[arg-type]
    assert (new.status, new.shell_exit) == (None, 4)
    if len(output) <= HEAD + 2 * TAIL:
        assert (new.output, new.dropped) == (old[0], old[1]) == (output, 0)
    else:
        assert new.output[:HEAD] == output[:HEAD]
        assert new.dropped == len(output) - len(new.output) > 0


# -- through the shell -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "size",
    [0, 1, OUTPUT_CAP, OUTPUT_CAP + 1, 120_000, 120_000 + 2 * 8192, 120_000 + 2 * 8192 - 1],
)
async def test_an_output_within_the_limits_is_returned_as_before(
    size: int, ctx: ToolContext
) -> None:
    """An output of at most the head and twice the tail arrives whole: the result is the one
    the whole output gives, note and all."""
    cmd = f"head -c {size} /dev/zero | tr '\\0' x"
    out = text_of(await call(BASH, {"command": cmd}, ctx))
    assert out == (shell._cap(b"x" * size, 0) or "(no output)")


async def test_a_flood_is_read_by_the_event_loop_only_as_far_as_it_is_kept(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """20 MB of output: the event loop reads at most the head, twice the tail and the end
    line; the result keeps the head, says about how much was cut, and the exit code."""
    read: list[int] = []
    collect = shell._collect

    async def counting(shell_: Any, token: str) -> Any:
        stdout = shell_.process.stdout
        receive = stdout.receive_some

        async def receive_some(max_bytes: int | None = None) -> bytes:
            chunk: bytes = await receive(max_bytes)
            read.append(len(chunk))
            return chunk

        monkeypatch.setattr(stdout, "receive_some", receive_some)
        return await collect(shell_, token)

    monkeypatch.setattr(shell, "_collect", counting)
    out = await call(BASH, {"command": "yes | head -c 20000000; echo; echo tail; (exit 3)"}, ctx)
    assert out.is_error
    text = text_of(out)
    assert text.startswith("Exit code 3\n" + "y\n" * 10)
    assert "output truncated: about" in text
    assert sum(read) <= 120_000 + 2 * 8192 + 200


async def test_a_flood_that_ends_the_shell_says_how_much_was_cut(ctx: ToolContext) -> None:
    """The shell exits mid-flood: the output kept, the count of what was cut, the exit."""
    text = text_of(await call(BASH, {"command": "yes | head -c 5000000; exit 4"}, ctx))
    assert text.startswith("y\ny\n")
    assert "output truncated: about" in text
    assert text.endswith("(the shell exited with status 4; a new shell starts next time)")
    assert text_of(await call(BASH, {"command": "echo next"}, ctx)) == "next"


#: Seconds between two reads of a flood past the limit, in the tests below: large, so that a
#: few reads at this pace take longer than the whole output at full speed on a loaded machine.
_PACE = 0.2
#: The flood of the tests below: 4 MiB more than a first read (at most 1 MiB) past the limit.
_OVER = 5 * 1024 * 1024


def _flood(size: int) -> str:
    return f"head -c {size} /dev/zero | tr '\\0' x; echo; echo end"


def _cut_flood(size: int) -> str:
    """What the shell tool returns for ``_flood(size)``: the first characters, and how many
    more there were (the end, ``echo end``, among them)."""
    return "x" * OUTPUT_CAP + (
        f"\n\n... [output truncated: about {size + 4 - OUTPUT_CAP} more characters not shown]"
    )


async def _timed(cmd: str, ctx: ToolContext) -> tuple[float, str]:
    start = trio.current_time()
    out = text_of(await call(BASH, {"command": cmd}, ctx))
    return trio.current_time() - start, out


async def test_a_flood_past_the_slow_limit_is_read_at_the_pace(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the bytes dropped at full speed, the cutter reads at most a pipe's worth (1 MiB)
    per pace, so a flood waits on a full pipe: 4 MiB more take four paces at least. What the
    agent gets is the same."""
    monkeypatch.setattr(shell, "_SLOW_AFTER_BYTES", 1024 * 1024)
    monkeypatch.setattr(shell, "_SLOW_PACE", _PACE)
    size = 1024 * 1024 + _OVER
    elapsed, out = await _timed(_flood(size), ctx)
    assert elapsed >= 4 * _PACE
    assert out == _cut_flood(size)


async def test_an_output_within_the_slow_limit_is_read_at_full_speed(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An output that drops no more than the limit is never paused: the same flood, under a
    limit above it, ends well before four paces."""
    monkeypatch.setattr(shell, "_SLOW_AFTER_BYTES", 2 * (1024 * 1024 + _OVER))
    monkeypatch.setattr(shell, "_SLOW_PACE", _PACE)
    await call(BASH, {"command": "true"}, ctx)  # (the shell's start is not the output's)
    with trio.fail_after(4 * _PACE):
        _, out = await _timed(_flood(1024 * 1024 + _OVER), ctx)
    assert out == _cut_flood(1024 * 1024 + _OVER)


async def test_a_forged_end_or_cut_line_is_output(ctx: ToolContext) -> None:
    """A command cannot end itself early or claim a cut: the lines it prints with the
    markers' prefixes are output (the token is the agent's secret)."""
    cmd = "printf '\\n__AGENTS_DONE_%s__ 0 0 /\\n\\n__AGENTS_CUT_%s__ 9\\n' x x; echo after"
    text = text_of(await call(BASH, {"command": cmd}, ctx))
    assert text == "\n__AGENTS_DONE_x__ 0 0 /\n\n__AGENTS_CUT_x__ 9\nafter"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] not in ("Z", "X")
    except OSError:
        return False


async def _wait_dead(pid: int) -> bool:
    for _ in range(200):
        if not _alive(pid):
            return True
        await trio.sleep(0.01)
    return False


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc")
async def test_a_flood_timed_out_leaves_no_cutter(tmp_path: Path, ctx: ToolContext) -> None:
    """A flood that times out: the timeout's message, and the cutter (the shell's parent) is
    gone with the shell."""
    cmd = f"echo $PPID > {tmp_path}/cutter; echo $$ > {tmp_path}/shell; yes"
    out = await call(BASH, {"command": cmd, "timeout": 300}, ctx)
    assert text_of(out) == "Command timed out after 0.3s (the process was killed)"
    cutter = int((tmp_path / "cutter").read_text())
    assert await _wait_dead(cutter)
    assert await wait_gone(int((tmp_path / "shell").read_text()))
    assert text_of(await call(BASH, {"command": "echo again"}, ctx)) == "again"


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc")
async def test_a_cancelled_flood_leaves_no_cutter(tmp_path: Path, ctx: ToolContext) -> None:
    """A flood whose call is cancelled: the cutter and the shell are gone when the call
    returns (reaped, shielded), and the next call starts a fresh pair."""
    cmd = f"echo $PPID > {tmp_path}/cutter; echo $$ > {tmp_path}/shell; yes"
    with trio.move_on_after(0.3) as scope:
        await call(BASH, {"command": cmd}, ctx)
    assert scope.cancelled_caught
    cutter = int((tmp_path / "cutter").read_text())
    assert await _wait_dead(cutter)
    assert await wait_gone(int((tmp_path / "shell").read_text()))
    again = "echo $PPID"
    assert int(text_of(await call(BASH, {"command": again}, ctx))) != cutter


@pytest.mark.parametrize("signal_name", ["KILL", "TERM", "SEGV"])
async def test_a_shell_killed_by_a_signal_is_reported_as_before(
    signal_name: str, ctx: ToolContext
) -> None:
    """The cutter ends as the shell did, SIGKILL included (whose handler cannot be reset): the
    output and the shell's end, nothing of the cutter's own, and a fresh shell next time."""
    text = text_of(await call(BASH, {"command": f"echo a; kill -{signal_name} $$"}, ctx))
    assert text.startswith("a\n(the shell exited with status ")
    assert text.endswith("; a new shell starts next time)")
    assert text.count("\n") == 1
    assert text_of(await call(BASH, {"command": "echo b"}, ctx)) == "b"


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc")
async def test_a_cancelled_shell_leaves_not_even_a_zombie(tmp_path: Path, ctx: ToolContext) -> None:
    """Cancelled as soon as it runs, twenty times: each shell is reaped with its keeper, none
    left as a zombie for init (a cutter with threads, killed, could hide its child from the
    keeper for a moment: about one shell in six was left so)."""
    for attempt in range(20):
        pid_file = tmp_path / f"pid{attempt}"
        async with trio.open_nursery() as nursery:
            command = {"command": f"echo $$ > {pid_file}; exec sleep 300"}
            nursery.start_soon(call, BASH, command, ctx)
            while not pid_file.exists() or not pid_file.read_text().strip():
                await trio.sleep(0.001)
            nursery.cancel_scope.cancel()
        with pytest.raises(ProcessLookupError):
            os.kill(int(pid_file.read_text()), 0)


# -- a background shell's unread output, capped in pieces ---------------------------------------

#: Bytes for generated outputs: ASCII, UTF-8 (2, 3 and 4 bytes, whitespace among them: NEL,
#: U+2028, the ideographic space), invalid and truncated sequences.
_PIECES = st.sampled_from(
    [b"a", b" ", b"\n", b"\t", b"\xc3\xa9", b"\xc2\x85", b"\xe2\x80\xa8", b"\xe3\x80\x80",
     b"\xf0\x9f\x98\x80", b"\xff", b"\xc3", b"\xe2\x80", b"\xf0\x9f", b"\xed\xa0\x80"]
)  # fmt: skip


@settings(max_examples=1000, deadline=None, suppress_health_check=_FIXTURE)
@given(
    data=st.lists(_PIECES, max_size=60).map(b"".join),
    dropped=st.sampled_from([0, 0, 1, 40]),
    cap=st.integers(1, 12),
    piece=st.integers(1, 9),
)
@example(data=b"ab  \xc2\x85 ", dropped=0, cap=3, piece=2)
@example(data=b"\xe2\x80\xa8" * 5 + b"x", dropped=3, cap=2, piece=1)
def test_capping_in_pieces_gives_what_capping_whole_gives(
    data: bytes, dropped: int, cap: int, piece: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decoded a piece at a time (sequences cut between pieces), only the characters shown
    kept: the same text and note as the whole output decoded, stripped and cut."""
    monkeypatch.setattr(shell, "OUTPUT_CAP", cap)
    monkeypatch.setattr(shell, "_PIECE", piece)
    assert shell._cap_in_pieces(data, dropped) == shell._cap(data, dropped)


async def _unread(ctx: ToolContext, command: str) -> str:
    out = await call(BASH, {"command": command, "run_in_background": True}, ctx)
    assert out.data is not None
    shell_id: str = out.data["backgroundTaskId"]
    bg = shell._state(ctx).background[shell_id]
    with trio.fail_after(10):
        await bg.done.wait()
    return shell_id


async def test_a_large_unread_output_is_capped_in_a_worker_thread(
    ctx: ToolContext, thread_calls: list[object]
) -> None:
    """4 MiB of invalid UTF-8 waiting unread is decoded in a worker thread, and BashOutput
    shows what the whole output gives; a small output is capped on the event loop."""
    shell_id = await _unread(ctx, "head -c 4194304 /dev/zero | tr '\\0' '\\377'")
    text = text_of(await call(OUTPUT, {"bash_id": shell_id}, ctx))
    assert thread_calls.count(shell._cap_in_pieces) == 1  # (a process starts in one too)
    expected = shell._cap(b"\xff" * 4194304, 0)
    assert (
        text
        == f"<status>completed</status>\n<exit_code>0</exit_code>\n<stdout>\n{expected}\n</stdout>"
    )
    small = await _unread(ctx, "echo small")
    assert "small" in text_of(await call(OUTPUT, {"bash_id": small}, ctx))
    assert thread_calls.count(shell._cap_in_pieces) == 1


async def test_output_taken_is_given_back_when_capping_fails(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Interrupted while its output is capped in the thread, BashOutput loses nothing: the
    next read sees it all."""
    shell_id = await _unread(ctx, "head -c 300000 /dev/zero | tr '\\0' x")

    async def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(trio.to_thread, "run_sync", interrupted)
        with pytest.raises(KeyboardInterrupt):
            await call(OUTPUT, {"bash_id": shell_id}, ctx)
    text = text_of(await call(OUTPUT, {"bash_id": shell_id}, ctx))
    assert "x" * 100 in text and "output truncated: 270000 more characters" in text
