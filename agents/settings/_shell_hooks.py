"""Settings-file hooks: shell commands speaking Claude Code's hook protocol, as hook callbacks.

The command runs with ``sh -c`` in the session's directory, under the shells' keeper: whatever it
starts ends when it ends, or when it times out or the session is cancelled. ``CLAUDE_PROJECT_DIR``
and the settings' ``env`` are set. It gets the hook input as JSON on stdin and answers by exit code:

* ``0``: stdout, when it is a JSON object, is the hook's output (``continue``, ``stopReason``,
  ``systemMessage``, ``decision``, ``reason``, ``hookSpecificOutput``). For ``UserPromptSubmit``
  and ``SessionStart`` plain stdout is context added for the model.
* ``2``: a blocking error, with stderr as the reason: a PreToolUse call is denied, a prompt is
  dropped, a Stop is blocked (the agent goes on with the reason), a compaction is skipped;
  after a tool ran (PostToolUse) stderr is fed to the model; other events show it to the user.
* anything else: a non-blocking error, shown to the user; the action goes ahead.

The hook's stdout and stderr are read as they come, and only their first ``_OUTPUT_CAP``
characters' worth of bytes is kept: a hook that prints without end costs no memory past that (it
is still read to its end, so it never blocks on a full pipe, and its timeout bounds it). What is
cut is said: plain text ends with a note naming the limit, and JSON output over it is refused
with a message saying so (a cut JSON object could not be read anyway).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Mapping
from typing import Any

import trio

from ..hooks import HookCallback, HookContext, HookMatcher
from ..tools.containment import open_contained, reap
from ._agent_hooks import AGENT_HOOK_TIMEOUT, RunHookAgent, agent_hook
from ._files import AgentHook, HookCommand, HttpHook, SettingsHook
from ._http_hooks import HTTP_HOOK_MARGIN, http_hook
from ._prompt_hooks import PROMPT_HOOK_TIMEOUT, AskModel, prompt_hook

__all__ = ["blocking_output", "shell_hook", "shell_hook_matchers"]

#: Characters of a hook's stdout/stderr kept (the rest is noise for the model).
_OUTPUT_CAP = 10_000
#: Bytes of each stream kept in memory: enough for ``_OUTPUT_CAP`` characters of UTF-8.
_KEEP_BYTES = _OUTPUT_CAP * 4
_READ_SIZE = 65536
_CONTEXT_EVENTS = ("UserPromptSubmit", "SessionStart")


def shell_hook_matchers(
    commands: tuple[SettingsHook, ...],
    cwd: str,
    env: Mapping[str, str],
    ask: AskModel | None = None,
    run_agent: RunHookAgent | None = None,
) -> dict[str, list[HookMatcher]]:
    """``hooks=`` entries for the settings' hooks (commands, http, prompts, agents), one matcher
    each (its own timeout; an http hook bounds itself, the runner waits a little longer).
    ``ask`` is the session's one-shot model call, which prompt hooks need; ``run_agent`` its
    short-lived agent run, which agent hooks need."""
    out: dict[str, list[HookMatcher]] = {}
    for command in commands:
        timeout: float | None
        if isinstance(command, HookCommand):
            callback = shell_hook(command.command, command.event, cwd, env)
            timeout = command.timeout
        elif isinstance(command, HttpHook):
            callback = http_hook(command, env)
            timeout = None if command.timeout is None else command.timeout + HTTP_HOOK_MARGIN
        elif isinstance(command, AgentHook):
            if run_agent is None:
                raise ValueError(f"{command.source}: an agent hook needs the session's agents")
            callback = agent_hook(command, run_agent)
            timeout = command.timeout or AGENT_HOOK_TIMEOUT
        else:
            if ask is None:
                raise ValueError(f"{command.source}: a prompt hook needs the session's model")
            callback = prompt_hook(command, ask)
            timeout = command.timeout or PROMPT_HOOK_TIMEOUT
        matcher = HookMatcher(matcher=command.matcher, hooks=[callback], timeout=timeout)
        out.setdefault(command.event, []).append(matcher)
    return out


def shell_hook(command: str, event: str, cwd: str, env: Mapping[str, str]) -> HookCallback:
    """A hook callback that runs ``command`` with the hook input on stdin."""
    full_env = {**os.environ, **env, "CLAUDE_PROJECT_DIR": cwd}

    async def run(
        input: dict[str, Any], tool_use_id: str | None, context: HookContext
    ) -> dict[str, Any]:
        payload = json.dumps(input, default=str).encode()
        code, out, err = await _run(command, payload, cwd, full_env)
        stdout = out.text()
        stderr = err.text().strip()
        if out.cut and stdout.lstrip().startswith("{"):
            return {
                "systemMessage": f"{event} hook command {command!r} printed {out.size} bytes of "
                f"JSON, over the {_OUTPUT_CAP}-character limit of a hook's output; it is ignored"
            }
        stdout = out.noted(stdout)
        stderr = err.noted(stderr)
        if code == 0:
            return _parse_stdout(stdout, event, command)
        if code == 2:
            return blocking_output(event, stderr or f"hook command {command!r} exited with code 2")
        detail = f": {stderr}" if stderr else ""
        failed = f"{event} hook command {command!r} failed with exit code {code}{detail}"
        return {"systemMessage": failed}

    run.__name__ = run.__qualname__ = f"shell hook {command!r}"
    return run


class _Kept:
    """The head of one output stream, and how many bytes it had in all."""

    __slots__ = ("head", "size")

    def __init__(self) -> None:
        self.head = bytearray()
        self.size = 0

    async def drain(self, stream: trio.abc.ReceiveStream) -> None:
        """Read ``stream`` to its end, keeping its first ``_KEEP_BYTES`` bytes only."""
        while chunk := await stream.receive_some(_READ_SIZE):
            self.size += len(chunk)
            room = _KEEP_BYTES - len(self.head)
            if room > 0:
                self.head += chunk[:room]

    @property
    def cut(self) -> bool:
        """Whether more came than ``_OUTPUT_CAP`` characters (or the bytes kept for them)."""
        return self.size > len(self.head) or len(self._decoded()) > _OUTPUT_CAP

    def text(self) -> str:
        """The kept head, decoded, at most ``_OUTPUT_CAP`` characters."""
        return self._decoded()[:_OUTPUT_CAP]

    def _decoded(self) -> str:
        return self.head.decode(errors="replace")

    def noted(self, text: str) -> str:
        """``text`` (the head), with a note naming the limit when the stream was cut."""
        if not self.cut:
            return text
        return (
            f"{text}\n... [hook output truncated: {self.size} bytes printed, "
            f"the first {_OUTPUT_CAP} characters kept]"
        )


async def _run(
    command: str, payload: bytes, cwd: str, env: Mapping[str, str]
) -> tuple[int, _Kept, _Kept]:
    """Run the hook; its exit code and the kept heads of its stdout and stderr.

    It runs under the shells' keeper (:mod:`agents.tools.containment`): what it started
    (``&``, ``nohup``, ``setsid``) ends when it does, as a Bash command's does, and a child
    holding its output open no longer holds the hook until its timeout."""
    out, err = _Kept(), _Kept()
    process = await open_contained(
        ["/bin/sh", "-c", command],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=dict(env),
    )
    try:
        assert process.stdin is not None
        assert process.stdout is not None and process.stderr is not None
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_feed, process.stdin, payload)
            nursery.start_soon(out.drain, process.stdout)
            nursery.start_soon(err.drain, process.stderr)
            await process.wait()
    finally:
        await reap(process)  # (shielded: a cancelled hook ends with everything it started)
    assert process.returncode is not None
    return process.returncode, out, err


async def _feed(stdin: trio.abc.SendStream, payload: bytes) -> None:
    """The hook's input, then end of file (a hook that never reads it is no error)."""
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        async with stdin:
            await stdin.send_all(payload)


def _parse_stdout(stdout: str, event: str, command: str) -> dict[str, Any]:
    text = stdout.strip()
    if text.startswith("{"):
        try:
            output = json.loads(text)
        except json.JSONDecodeError as exc:
            return {
                "systemMessage": f"{event} hook command {command!r} printed invalid JSON: {exc}"
            }
        if isinstance(output, dict):
            return output
    if text and event in _CONTEXT_EVENTS:
        return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
    return {}


def blocking_output(event: str, reason: str) -> dict[str, Any]:
    """What a blocking hook answer means for ``event``: a command's exit 2, a prompt hook's
    ``ok: false``."""
    if event == "PreToolUse":
        return {
            "hookSpecificOutput": {
                "hookEventName": event,
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        }
    if event == "PostToolUse":
        return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": reason}}
    if event in ("UserPromptSubmit", "Stop", "SubagentStop", "PreCompact"):
        return {"decision": "block", "reason": reason}
    return {"systemMessage": reason}
