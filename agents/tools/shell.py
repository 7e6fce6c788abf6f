"""Bash, BashOutput and KillShell: a persistent shell per agent, and background shells.

**The persistent shell.** Each agent gets one ``bash`` process (started on first use, in its own
session so its process group id is its pid). A command is written to its stdin wrapped so that:

* the shell reads it literally from a quoted here-document and ``eval``\\ s it in the current shell,
  so ``cd`` and ``export`` persist between calls and a syntax error is reported as the command's
  own error instead of desynchronising the shell;
* it runs with stdin from ``/dev/null`` (a command that reads stdin must not eat the next one);
* a sentinel line ``__AGENTS_DONE_<uuid>__ <status> <pwd>`` follows it, printed with the marker
  split in two so that not even ``set -x`` can echo it early.

stdout and stderr are one pipe (merged, in order). Output is capped at 30 000 characters with a
note saying how much was cut, and never more than about 128 KB of it is kept in memory whatever
the command prints. That cut is made before the output reaches this process, by the *cutter*
(:mod:`agents.tools._cutter`), a small process between the shell and this one, to which each
script is written with its marker's token (so the cutter knows where a command's output ends,
and the command cannot tell it): the event loop reads at most the first 120 000 bytes and the
last 8 to 16 KiB of a command's output, and its sentinel line. A foreground ``yes`` was read
whole by the event loop, keeping it 55-87 % busy until the timeout only to drop what it read.
An output of at most ``_HEAD_BYTES + 2 * _TAIL_BYTES`` bytes arrives whole, as before. Past
1 GiB of a command's output dropped, the cutter reads the rest 1 MiB per 10 ms at most, so a
flood waits on a full pipe: ``yes`` and the cutter took a core each until the timeout.

**Timeouts and cancellation.** A timeout is a cancel scope around the wait for the sentinel. On
timeout, on cancellation, or on any error while a command runs, the shell and everything it
started are killed and reaped (shielded), and the next command starts a fresh shell in the last
known working directory. A command that outlives its budget never keeps running unseen.

**Containment.** Every shell runs under a keeper (:mod:`agents.tools.containment`): whatever a shell
starts — ``&``, ``nohup``, ``setsid``, double forks — ends when the shell exits or is closed, and
when this Python process dies, even by ``SIGKILL`` (Linux; elsewhere a warning says what is lost).

**Background shells.** ``run_in_background`` starts ``bash -c command`` under its own keeper,
from the persistent shell's current directory, with a reader task in the agent's nursery
(``ctx.nursery``), and returns an id; ``BashOutput`` returns what it printed since the last read,
``KillShell`` ends it and its descendants. A cleanup callable registered in ``ctx.cleanup`` ends
every shell when the agent ends, so no process outlives the session. At most
``MAX_BACKGROUND_SHELLS`` (32) run at once per agent. A background shell keeps its
last 4 MiB of unread output; once that much waits, its pipe is read at most every 10 ms (a pipe's
worth, so at most about 6 MB/s): ``yes`` in the background kept the event loop's thread 87 %
busy reading output only to drop it, and now slows to that pace instead (still read, so a
server that logs is never blocked for long, and the newest output is what is kept).
"""

from __future__ import annotations

import codecs
import os
import subprocess
import sys
import uuid
from collections.abc import Mapping
from typing import Annotated, Any, Literal

import attrs
import msgspec
import trio

from ._cutter import CUT
from ._line_filter import FilterError, filter_lines
from .base import SESSION_ENV, Tool, ToolContext, ToolOutput
from .containment import end, open_contained, reap

__all__ = ["bash_output_tool", "bash_tool", "kill_shell_tool"]

#: Characters of output returned; more is cut, with a note saying how much.
OUTPUT_CAP = 30_000
#: Default and maximum timeouts, in milliseconds (Claude Code's).
DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
#: Bytes kept from the start of a command's output (enough for OUTPUT_CAP characters of UTF-8).
_HEAD_BYTES = OUTPUT_CAP * 4
#: Bytes kept at the end, where the sentinel arrives.
_TAIL_BYTES = 8192
#: Room for the line the cutter sends after a cut output when the shell exits.
_CUT_LINE = 128
#: Unread bytes a background shell keeps; older output is dropped with a note.
_BACKGROUND_KEEP = 4 * 1024 * 1024
#: Background shells one agent may have running at once (each keeps up to
#: ``_BACKGROUND_KEEP`` bytes): one more is refused, naming the limit and the running ones.
MAX_BACKGROUND_SHELLS = 32
#: Seconds between two reads of a background shell's pipe while ``_BACKGROUND_KEEP`` bytes
#: wait unread: what it prints past that is read (and dropped) at this pace, not at once.
_FULL_PACE = 0.01

#: Bytes of one command's output the cutter drops at full speed; past that, it reads the rest at
#: most every ``_SLOW_PACE`` seconds (a flood like ``yes`` then waits on a full pipe).
_SLOW_AFTER_BYTES = 1 << 30
_SLOW_PACE = _FULL_PACE

_CUTTER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_cutter.py")

_SHELL_ENV = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_EDITOR": "true", "CLAUDECODE": "1"}


def _env(session: Mapping[str, str]) -> dict[str, str]:
    """A shell's environment: the process's, the tools' defaults, then the session's own."""
    return {**os.environ, **_SHELL_ENV, **session}


def _cap(data: bytes, dropped: int = 0) -> str:
    text = data.decode("utf-8", "replace").rstrip()
    over = len(text) - OUTPUT_CAP + dropped
    if over > 0:
        text = (
            f"{text[:OUTPUT_CAP]}\n\n... [output truncated: "
            f"{'about ' if dropped else ''}{over} more characters not shown]"
        )
    return text


#: Unread output at least this long is capped in a worker thread, decoded a piece at a time.
_THREAD_CAP_BYTES = 256 * 1024
_PIECE = 64 * 1024


def _cap_in_pieces(data: bytes, dropped: int = 0) -> str:
    """``_cap(data, dropped)``, decoding ``data`` a piece at a time and keeping only the
    characters shown: a decode is one call that holds the interpreter (4 MiB of invalid UTF-8,
    what a background shell may keep unread, took 64 ms), so in a worker thread the event loop
    runs between pieces. A test compares it with ``_cap``."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    view = memoryview(data)
    shown: list[str] = []
    kept = 0  # characters in `shown`: the first OUTPUT_CAP of the text at most
    length = 0  # characters decoded
    end = 0  # characters up to the last one that is not whitespace (what rstrip keeps)
    for at in range(0, max(len(data), 1), _PIECE):
        piece = decoder.decode(view[at : at + _PIECE], final=at + _PIECE >= len(data))
        stripped = len(piece.rstrip())
        if stripped:
            end = length + stripped
        if kept < OUTPUT_CAP:
            shown.append(piece[: OUTPUT_CAP - kept])
            kept += len(shown[-1])
        length += len(piece)
    text = "".join(shown)
    over = end - OUTPUT_CAP + dropped
    if over > 0:
        return (
            f"{text[: min(end, OUTPUT_CAP)]}\n\n... [output truncated: "
            f"{'about ' if dropped else ''}{over} more characters not shown]"
        )
    return text[:end]


# --- The persistent shell ------------------------------------------------------------------


@attrs.define(eq=False)
class _Shell:
    """One live ``bash`` process fed commands over stdin."""

    process: trio.Process
    lock: trio.Lock = attrs.Factory(trio.Lock)

    @classmethod
    async def start(cls, cwd: str, env: Mapping[str, str]) -> _Shell:
        limits = [_HEAD_BYTES, _TAIL_BYTES, _SLOW_AFTER_BYTES, _SLOW_PACE]
        cutter = [sys.executable, "-I", "-S", _CUTTER, *map(str, limits)]
        process = await open_contained(
            [*cutter, "bash", "--noprofile", "--norc"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=_env(env),
        )
        return cls(process)


@attrs.define
class _Finished:
    output: bytes
    dropped: int
    status: int | None  # None: the shell itself exited (e.g. the command ran `exit`)
    pwd: str | None = None
    shell_exit: int | None = None


async def _collect(shell: _Shell, token: str) -> _Finished:
    """Read merged output until the end marker of ``token`` and its line end (``dropped status
    pwd``: the cutter's count, then the shell's), keeping head and tail only (what the cutter
    sends already is that, at most)."""
    stdout = shell.process.stdout
    assert stdout is not None
    marker = f"\n__AGENTS_DONE_{token}__ ".encode()
    buf = bytearray()
    dropped = 0
    while True:
        chunk = await stdout.receive_some(65536)
        if not chunk:  # the shell exited
            code = await shell.process.wait()
            cut = buf.rfind(CUT + f"{token}__ ".encode(), max(0, len(buf) - 2 * len(marker) - 20))
            if cut != -1 and buf.endswith(b"\n"):
                dropped += int(buf[cut:].split()[-1])
                del buf[cut:]
            return _Finished(bytes(buf), dropped, None, shell_exit=code)
        buf += chunk
        at = buf.find(marker, max(0, len(buf) - len(chunk) - len(marker)))
        if at != -1:
            end = buf.find(b"\n", at + len(marker))
            while end == -1:
                more = await stdout.receive_some(65536)
                if not more:
                    break
                buf += more
                end = buf.find(b"\n", at + len(marker))
            line = buf[at + len(marker) : end if end != -1 else len(buf)].decode(errors="replace")
            count, _, line = line.partition(" ")
            status, _, pwd = line.partition(" ")
            dropped += int(count)
            return _Finished(bytes(buf[:at]), dropped, int(status or 0), pwd or None)
        if len(buf) > _HEAD_BYTES + 2 * _TAIL_BYTES + _CUT_LINE:  # (never, from the cutter)
            excess = len(buf) - _HEAD_BYTES - _TAIL_BYTES
            del buf[_HEAD_BYTES : _HEAD_BYTES + excess]
            dropped += excess


def _script(command: str, token: str) -> bytes:
    """The script for ``command``, framed for the cutter: a line ``token size``, then it."""
    eof = f"__AGENTS_EOF_{token}"
    script = (
        f"IFS= read -r -d '' __agents_cmd <<'{eof}'\n{command}\n{eof}\n"
        'eval "$__agents_cmd" </dev/null\n'
        f"printf '\\n%s%s %d %s\\n' __AGENTS_ 'DONE_{token}__' \"$?\" \"$PWD\"\n"
    ).encode()
    return b"%s %d\n%s" % (token.encode(), len(script), script)


@attrs.define(eq=False)
class _ShellState:
    """Per-agent shell bookkeeping, kept in ``ctx.state["shell"]``."""

    shell: _Shell | None = None
    cwd: str | None = None
    #: the session's variables (see :data:`SESSION_ENV`)
    env: Mapping[str, str] = attrs.Factory(dict)
    background: dict[str, _Background] = attrs.Factory(dict)
    counter: int = 0
    cleanup_registered: bool = False
    start_lock: trio.Lock = attrs.Factory(trio.Lock)

    def start_dir(self, ctx: ToolContext) -> str:
        """Where a new shell starts: the last known directory, if it still exists."""
        return self.cwd if self.cwd and os.path.isdir(self.cwd) else ctx.cwd

    async def close_all(self) -> None:
        """Kill the persistent shell and every background shell (the agent's cleanup)."""
        if self.shell is not None:
            shell, self.shell = self.shell, None
            await reap(shell.process)
        for bg in self.background.values():
            await bg.kill()


def _state(ctx: ToolContext) -> _ShellState:
    state = ctx.state.get("shell")
    if state is None:
        state = ctx.state["shell"] = _ShellState(
            cwd=ctx.cwd, env=ctx.session_state.get(SESSION_ENV, {})
        )
    if not state.cleanup_registered:
        ctx.cleanup.append(state.close_all)
        state.cleanup_registered = True
    assert isinstance(state, _ShellState)
    return state


async def _get_shell(state: _ShellState, ctx: ToolContext) -> _Shell:
    async with state.start_lock:
        if state.shell is None or state.shell.process.returncode is not None:
            state.shell = await _Shell.start(state.start_dir(ctx), state.env)
        return state.shell


class BashInput(msgspec.Struct):
    """Bash's input: ``{command, timeout? (ms, ≤ 600000), description?, run_in_background?}``."""

    command: str
    timeout: Annotated[float, msgspec.Meta(gt=0, le=MAX_TIMEOUT_MS)] | None = None
    description: str | None = None
    run_in_background: bool = False


BASH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "description": "The command to execute"},
        "timeout": {
            "type": "number",
            "description": f"Optional timeout in milliseconds (max {MAX_TIMEOUT_MS})",
        },
        "description": {
            "type": "string",
            "description": "Clear, concise description of what this command does in 5-10 words",
        },
        "run_in_background": {
            "type": "boolean",
            "description": "Set to true to run this command in the background. Use BashOutput "
            "to read the output later.",
        },
    },
    "required": ["command"],
    "additionalProperties": False,
    "$schema": "http://json-schema.org/draft-07/schema#",
}

BASH_DESCRIPTION = f"""Executes a given bash command in a persistent shell session with optional timeout.

- The working directory and exported variables persist between commands.
- Always quote file paths that contain spaces with double quotes.
- You can specify an optional timeout in milliseconds (up to {MAX_TIMEOUT_MS}ms / 10 minutes). If not specified, commands will timeout after {DEFAULT_TIMEOUT_MS}ms (2 minutes).
- If the output exceeds {OUTPUT_CAP} characters, output will be truncated before being returned to you.
- Use run_in_background (not a trailing `&`) to run a command in the background; read its output with BashOutput and stop it with KillShell.
- Avoid using search commands like `find` and `grep`, and reading commands like `cat`, `head`, `tail`: use Glob, Grep and Read instead.
- Commands do not read stdin; interactive commands are not supported."""  # noqa: E501


async def _bash(args: BashInput, ctx: ToolContext) -> ToolOutput:
    state = _state(ctx)
    if args.run_in_background:
        return await _start_background(args.command, state, ctx)
    timeout_ms = args.timeout if args.timeout is not None else DEFAULT_TIMEOUT_MS
    shell = await _get_shell(state, ctx)
    token = uuid.uuid4().hex
    finished: _Finished | None = None
    async with shell.lock:
        try:
            stdin = shell.process.stdin
            assert stdin is not None
            with trio.move_on_after(timeout_ms / 1000):
                await stdin.send_all(_script(args.command, token))
                finished = await _collect(shell, token)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            finished = _Finished(b"", 0, None, None)
        finally:
            if finished is None or finished.status is None:
                # Timed out, cancelled, failed, or the shell exited: no half-run shell is reused.
                state.shell = None
                await reap(shell.process)
    if finished is None:
        seconds = f"{timeout_ms / 1000:g}"
        return ToolOutput.error(f"Command timed out after {seconds}s (the process was killed)")
    text = _cap(finished.output, finished.dropped)
    data: dict[str, Any] = {"stdout": text, "interrupted": False}
    if finished.status is None:
        note = f"(the shell exited with status {finished.shell_exit}; a new shell starts next time)"
        return ToolOutput(f"{text}\n{note}" if text else note, data=data)
    state.cwd = finished.pwd or state.cwd
    data.update(exit_code=finished.status, cwd=state.cwd)
    if finished.status != 0:
        return ToolOutput(f"Exit code {finished.status}\n{text}".rstrip(), is_error=True, data=data)
    return ToolOutput(text or "(no output)", data=data)


def bash_tool() -> Tool:
    """A fresh ``Bash`` tool (mutating)."""
    return Tool(
        name="Bash",
        description=BASH_DESCRIPTION,
        input_schema=BASH_SCHEMA,
        handler=_bash,
        read_only=False,
        input_type=BashInput,
    )


# --- Background shells ---------------------------------------------------------------------


@attrs.define(eq=False)
class _Background:
    """A ``bash -c`` running in the background; its reader task lives in the agent's nursery."""

    id: str
    command: str
    cwd: str
    env: Mapping[str, str]
    process: trio.Process | None = None
    unread: bytearray = attrs.Factory(bytearray)
    dropped: int = 0
    status: Literal["running", "completed", "failed", "killed"] = "running"
    exit_code: int | None = None
    done: trio.Event = attrs.Factory(trio.Event)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        process = await open_contained(
            ["bash", "-c", self.command],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=self.cwd,
            env=_env(self.env),
        )
        self.process = process
        try:
            task_status.started()
            assert process.stdout is not None
            await self.drain(process.stdout)
            code = await process.wait()
            self.exit_code = code
            if self.status == "running":
                self.status = "completed" if code == 0 else "failed"
        finally:
            if process.returncode is None:
                await reap(process)
                if self.status == "running":
                    self.status = "killed"
            self.done.set()

    async def drain(self, stdout: trio.abc.ReceiveStream) -> None:
        """Read ``stdout`` to its end into ``unread``, its last ``_BACKGROUND_KEEP`` bytes kept,
        at most one read every ``_FULL_PACE`` seconds while that much waits unread."""
        while chunk := await stdout.receive_some():
            self.unread += chunk
            self._keep_the_tail()
            if len(self.unread) >= _BACKGROUND_KEEP:
                await trio.sleep(_FULL_PACE)

    async def kill(self) -> None:
        """Kill the group; the reader task sees EOF, reaps the process and sets ``done``."""
        if self.process is None or self.done.is_set():
            return
        if self.status == "running":
            self.status = "killed"
        end(self.process)
        with trio.CancelScope(shield=True), trio.move_on_after(5):
            await self.done.wait()

    def take(self) -> tuple[bytes, int]:
        """The unread output and how many bytes of it were dropped, now read."""
        taken = bytes(self.unread), self.dropped
        self.unread.clear()
        self.dropped = 0
        return taken

    def give_back(self, data: bytes, dropped: int) -> None:
        """Output taken but not delivered (a filter failed, the call was cancelled): unread
        again, before what came since."""
        self.unread[:0] = data
        self.dropped += dropped
        self._keep_the_tail()

    def _keep_the_tail(self) -> None:
        if len(self.unread) > _BACKGROUND_KEEP:
            excess = len(self.unread) - _BACKGROUND_KEEP
            del self.unread[:excess]
            self.dropped += excess

    def poll_status(self) -> str:
        """The status, seeing an exit even while a grandchild still holds the pipe open."""
        if self.status == "running" and self.process is not None:
            code = self.process.poll()
            if code is not None:
                self.exit_code = code
                self.status = "completed" if code == 0 else "failed"
        return self.status


async def _start_background(command: str, state: _ShellState, ctx: ToolContext) -> ToolOutput:
    if ctx.nursery is None:
        return ToolOutput.error("run_in_background is unavailable: the agent has no nursery")
    running = [bg.id for bg in state.background.values() if bg.poll_status() == "running"]
    if len(running) >= MAX_BACKGROUND_SHELLS:
        return ToolOutput.error(
            f"Too many background shells: at most {MAX_BACKGROUND_SHELLS} run at once "
            f"(MAX_BACKGROUND_SHELLS; running: {', '.join(running)}). Stop one with KillShell, "
            "or wait for one to finish."
        )
    state.counter += 1
    shell_id = f"bash_{state.counter}"
    bg = _Background(shell_id, command, state.start_dir(ctx), state.env)
    state.background[shell_id] = bg
    await ctx.nursery.start(bg.run)
    return ToolOutput(
        f"Command running in background with ID: {shell_id}. Use BashOutput with "
        f"bash_id={shell_id!r} to read its output and KillShell to stop it.",
        data={"backgroundTaskId": shell_id},
    )


class BashOutputInput(msgspec.Struct):
    """BashOutput's input: ``{bash_id, filter?}`` (filter: a regex lines must match)."""

    bash_id: str
    filter: str | None = None


BASH_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "bash_id": {
            "type": "string",
            "description": "The ID of the background shell to retrieve output from",
        },
        "filter": {
            "type": "string",
            "description": "Optional regular expression to filter the output lines. Only lines "
            "matching this regex will be included in the result. Any lines that do not match "
            "will no longer be available to read.",
        },
    },
    "required": ["bash_id"],
    "additionalProperties": False,
    "$schema": "http://json-schema.org/draft-07/schema#",
}


def _unknown_shell(shell_id: str, state: _ShellState) -> ToolOutput:
    known = ", ".join(state.background) or "none"
    return ToolOutput.error(f"No shell found with ID: {shell_id} (running shells: {known})")


async def _bash_output(args: BashOutputInput, ctx: ToolContext) -> ToolOutput:
    state = _state(ctx)
    bg = state.background.get(args.bash_id)
    if bg is None:
        return _unknown_shell(args.bash_id, state)
    await trio.lowlevel.checkpoint()
    status = bg.poll_status()
    raw, dropped = bg.take()
    try:
        if len(raw) < _THREAD_CAP_BYTES:
            text = _cap(raw, dropped)
        else:
            text = await trio.to_thread.run_sync(_cap_in_pieces, raw, dropped)
        if args.filter:
            text = await filter_lines(text, args.filter)
    except FilterError as exc:
        bg.give_back(raw, dropped)  # nothing is lost: the next read sees it
        return ToolOutput.error(str(exc))
    except BaseException:
        bg.give_back(raw, dropped)
        raise
    parts = [f"<status>{status}</status>"]
    if bg.exit_code is not None:
        parts.append(f"<exit_code>{bg.exit_code}</exit_code>")
    parts.append(f"<stdout>\n{text}\n</stdout>" if text else "<stdout></stdout>")
    data = {"shellId": bg.id, "status": status, "exitCode": bg.exit_code, "stdout": text}
    return ToolOutput("\n".join(parts), data=data)


def bash_output_tool() -> Tool:
    """A fresh ``BashOutput`` tool (mutating: reading consumes the output)."""
    return Tool(
        name="BashOutput",
        description="Retrieves output from a running or completed background bash shell. "
        "Returns only new output since the last check, with the shell's status.",
        input_schema=BASH_OUTPUT_SCHEMA,
        handler=_bash_output,
        read_only=False,
        input_type=BashOutputInput,
    )


class KillShellInput(msgspec.Struct):
    """KillShell's input: ``{shell_id}``."""

    shell_id: str


async def _kill_shell(args: KillShellInput, ctx: ToolContext) -> ToolOutput:
    state = _state(ctx)
    bg = state.background.get(args.shell_id)
    if bg is None:
        return _unknown_shell(args.shell_id, state)
    if bg.poll_status() != "running":
        return ToolOutput.error(f"Shell {bg.id} is not running (status: {bg.status})")
    await bg.kill()
    return ToolOutput(
        f"Successfully killed shell: {bg.id} ({bg.command})",
        data={"shell_id": bg.id, "message": "killed"},
    )


def kill_shell_tool() -> Tool:
    """A fresh ``KillShell`` tool (mutating)."""
    return Tool(
        name="KillShell",
        description="Kills a running background bash shell by its ID.",
        input_schema={
            "type": "object",
            "properties": {
                "shell_id": {
                    "type": "string",
                    "description": "The ID of the background shell to kill",
                }
            },
            "required": ["shell_id"],
            "additionalProperties": False,
            "$schema": "http://json-schema.org/draft-07/schema#",
        },
        handler=_kill_shell,
        read_only=False,
        input_type=KillShellInput,
    )
