"""The longest hold of the Trio event loop by the loop's synchronous steps, on their worst inputs.

Target: no step holds the event loop longer than 50 ms on an input within the documented limits.
Each case runs alone in ``trio.run`` with two meters:

* ``longest_step_ms``: the longest single task step, from a Trio instrument
  (``before_task_step``/``after_task_step``) — the time the loop could not run anything else;
* ``watchdog_late_ms``: how late, at worst, a task sleeping 1 ms in a loop woke up — which also
  sees what steals the interpreter from the loop without being a task step (a worker thread
  holding the GIL, a slow ``epoll``).

The control (``case="control"``: a thousand checkpoints) is measured in the same run and shows the
floor of both meters on this machine. The inputs: huge Bash commands through the permission
analysis, huge tool outputs through output capping, huge transcript entries through encoding and
appending, long transcripts through loading, resume and the rebuild of the API history, large
files through Edit. Prints one JSON line per case::

    .venv/bin/python benchmarks/bench_event_loop.py           # full sizes
    .venv/bin/python benchmarks/bench_event_loop.py --quick   # smoke run, tiny sizes
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

from agents._loop.capping import capped
from agents.messages import ToolResultBlock, UserMessage
from agents.permissions import PermissionCheck, PermissionGate, RuleSet
from agents.sessions import (
    HISTORY_SNAPSHOT,
    FileSessionStore,
    SessionKey,
    Transcript,
    TranscriptEntry,
    project_key_for,
    rebuild_history,
)
from agents.testing.transcripts import tool_turns
from agents.tools.base import MCP_OUTPUT_CAP_CHARS, Tool, ToolContext, ToolOutput
from agents.tools.files import edit_tool, read_tool
from agents.tools.shell import _cap

TARGET_MS = 50.0
QUICK = False
GROUPS = [
    "bash_permission",
    "output_cap",
    "transcript_entry",
    "long_history",
    "other_inputs",
    "edit",
]


class HoldMeter(trio.abc.Instrument):
    """The longest task step since the last ``reset``."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._started = 0.0

    def reset(self) -> None:
        self.longest = 0.0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self._started = time.perf_counter()

    def after_task_step(self, task: trio.lowlevel.Task) -> None:
        self.longest = max(self.longest, time.perf_counter() - self._started)


async def watchdog(late: list[float], task_status: trio.TaskStatus[None]) -> None:
    """Sleep 1 ms at a time, noting the worst lateness in ``late[0]``."""
    task_status.started()
    while True:
        before = time.perf_counter()
        await trio.sleep(0.001)
        late[0] = max(late[0], time.perf_counter() - before - 0.001)


def measure(group: str, case: str, size: int, step: Callable[[], Awaitable[Any]]) -> None:
    """Run ``step`` in a fresh ``trio.run`` with both meters; print its JSON line."""
    meter = HoldMeter()
    late = [0.0]

    async def main() -> float:
        async with trio.open_nursery() as nursery:
            await nursery.start(watchdog, late)
            await trio.sleep(0.005)
            meter.reset()
            late[0] = 0.0
            start = time.perf_counter()
            await step()
            elapsed = time.perf_counter() - start
            await trio.sleep(0.002)  # let the watchdog see the end of the step
            nursery.cancel_scope.cancel()
        return elapsed

    elapsed = trio.run(main, instruments=[meter])
    longest_ms = meter.longest * 1000
    print(
        json.dumps(
            {
                "bench": "event_loop",
                "group": group,
                "case": case,
                "size": size,
                "longest_step_ms": round(longest_ms, 3),
                "watchdog_late_ms": round(late[0] * 1000, 3),
                "elapsed_ms": round(elapsed * 1000, 3),
                "target_ms": TARGET_MS,
                "within_target": longest_ms <= TARGET_MS,
            }
        ),
        flush=True,
    )


async def control() -> None:
    for _ in range(1000):
        await trio.lowlevel.checkpoint()


def spin(seconds: float) -> None:
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        pass


async def thread_control() -> None:
    """Plain Python in a worker thread for a second: the watchdog's floor for work in a thread
    (the interpreter changes hands every 5 ms, and the operating system adds its delays)."""
    await trio.to_thread.run_sync(spin, 0.2 if QUICK else 1.0)


# --- permission analysis -------------------------------------------------------------------


def bash_commands(size: int) -> dict[str, str]:
    """Worst shapes of a ``size``-byte Bash command for the analysis."""
    part = "git status --short && "
    nested = "echo $(" * 30 + "x" + ")" * 30 + "; "
    return {
        "compound": (part * (size // len(part) + 1))[:size] + " true",
        "pipes": ("cat a | " * (size // 8 + 1))[:size] + " wc -l",
        "nested_substitutions": (nested * (size // len(nested) + 1))[:size],
        "one_long_word": "echo " + "x" * size,
        "quoted_string": "echo '" + "y " * (size // 2) + "'",
        "heredoc": "cat <<'EOF'\n" + "line of text\n" * (size // 13) + "EOF",
        "redirections": ("echo a > f1; " * (size // 13 + 1))[:size],
        "brackets": "echo " + "[a]" * (size // 3),
        "bracket_words": "echo " + "[a] " * (size // 4),
        "heredoc_expansions": "cat <<EOF\n" + ("$x" * 128 + "\n") * (size // 257) + "EOF",
        # not Bash: the grammar's error recovery reads it in quadratic time
        "command_brackets": "x" + "[a]" * (size // 3),
    }


def permission_cases(size: int, cwd: str) -> list[tuple[str, Callable[[], Awaitable[Any]]]]:
    rules = RuleSet.from_strings(allow=["Bash(git status:*)", "Bash(echo:*)"], deny=["Bash(rm:*)"])
    gate = PermissionGate(mode="default", rules=rules, cwd=cwd, home=cwd)
    cases = []
    for name, command in bash_commands(size).items():

        async def check(command: str = command) -> None:
            call = PermissionCheck("Bash", {"command": command}, "t1", read_only=False)
            await gate.check(call, {})

        cases.append((name, check))
    return cases


# --- output capping --------------------------------------------------------------------------


def capping_cases(size: int) -> list[tuple[str, Callable[[], Awaitable[Any]]]]:
    async def handler(args: Any, ctx: Any) -> ToolOutput:
        return ToolOutput("")

    tool = Tool("big", "d", {"type": "object"}, handler, output_cap=MCP_OUTPUT_CAP_CHARS)
    text = "z" * size
    items = [{"type": "text", "text": "w" * 10} for _ in range(max(1, size // 10))]
    raw = b"r" * min(size, 128 * 1024)

    async def one_string() -> None:
        capped(tool, ToolOutput(text))
        await trio.lowlevel.checkpoint()

    async def many_items() -> None:
        capped(tool, ToolOutput(items))
        await trio.lowlevel.checkpoint()

    async def bash_cap() -> None:
        _cap(raw, size)
        await trio.lowlevel.checkpoint()

    images = [{"type": "image", "source": {}} for _ in range(max(1, size // 10))]

    async def image_items() -> None:  # items that share no characters: bounded by count
        capped(tool, ToolOutput(images))
        await trio.lowlevel.checkpoint()

    return [
        ("one_string", one_string),
        ("text_items", many_items),
        ("image_items", image_items),
        ("bash_buffer", bash_cap),
    ]


# --- transcripts -----------------------------------------------------------------------------


def transcript_cases(size: int, root: Path) -> list[tuple[str, Callable[[], Awaitable[Any]]]]:
    """Recording one huge entry, as the loop records a tool result or a prompt (the message is
    built before the measured step: building it is the caller's work)."""
    store = FileSessionStore(root)
    block = {"type": "text", "text": "b" * 20}
    messages = {
        "huge_tool_result": UserMessage(content=[ToolResultBlock("t", "x" * size)]),
        # characters JSON escapes: the slowest text to encode (up to 6 bytes a character)
        "escaped_tool_result": UserMessage(content=[ToolResultBlock("t", 'a"\n\\' * (size // 4))]),
        "huge_prompt": UserMessage(content="p" * size),
        "many_blocks": UserMessage(
            content=[ToolResultBlock(f"t{i}", [block]) for i in range(max(1, size // 60))]
        ),
    }
    cases = []
    for name, message in messages.items():

        async def record(message: UserMessage = message) -> None:
            transcript = Transcript(store, SessionKey("-p", uuid.uuid4().hex))
            await transcript.record(message)

        cases.append((name, record))
    snapshot = {"messages": [{"role": "user", "content": "s" * 100} for _ in range(size // 130)]}

    async def record_snapshot() -> None:  # compaction's history snapshot: a whole history
        transcript = Transcript(store, SessionKey("-p", uuid.uuid4().hex))
        await transcript.record_kind(HISTORY_SNAPSHOT, snapshot)

    cases.append(("history_snapshot", record_snapshot))
    key = SessionKey("-p", "huge-line")
    entry = TranscriptEntry(
        uuid="u0", parent_uuid=None, session_id="s", timestamp=0.0, message=messages["huge_prompt"]
    )

    async def resume_huge_line() -> None:  # decoding the line back: one msgspec call
        await Transcript.resume(store, key)

    cases.append(("resume_one_line", _prepared(store.append(key, [entry]), resume_huge_line)))
    return cases


def _prepared(
    setup: Awaitable[Any], step: Callable[[], Awaitable[Any]]
) -> Callable[[], Awaitable[Any]]:
    """``step`` after ``setup`` has run, outside the measured step (in its own ``trio.run``)."""

    async def run_setup() -> None:
        await setup

    trio.run(run_setup)
    return step


def history_cases(entries: int, root: Path) -> list[tuple[str, Callable[[], Awaitable[Any]]]]:
    from agents import AgentOptions
    from agents._assembly.persist import start_session

    store = FileSessionStore(root)
    cwd = str(root / "project")
    long_id = "10000000-0000-4000-8000-00000000106e"  # the long session (ids are UUIDs)
    key = SessionKey(project_key_for(cwd), long_id)
    transcript = tool_turns(entries)
    loaded: list[TranscriptEntry] = []

    async def write() -> None:
        await store.append(key, transcript)

    async def resume() -> None:
        _, report = await Transcript.resume(store, key)
        loaded[:] = report.entries

    async def rebuild() -> None:
        await rebuild_history(loaded or transcript)

    setups: list[Any] = []  # kept alive: freeing a resumed history is the session's end

    async def session() -> None:  # what a session resuming it does before its first request
        os.makedirs(cwd, exist_ok=True)
        options = AgentOptions(cwd=cwd, resume=long_id)
        setups.append(await start_session(options, store, cwd, "next"))

    async def fork() -> None:  # the same with fork_session=True: a copy of every entry
        options = AgentOptions(cwd=cwd, resume=long_id, fork_session=True)
        setups.append(await start_session(options, store, cwd, f"fork{len(setups)}"))

    async def end() -> None:  # the session's end: its history freed as query() frees it
        from agents._assembly.query import END_INLINE_MESSAGES
        from agents.sessions.history import release

        for setup in setups:
            await release(setup.history, inline_up_to=END_INLINE_MESSAGES)
        setups.clear()
        await trio.lowlevel.checkpoint()

    return [
        ("append_all", write),
        ("resume", resume),
        ("rebuild_history", rebuild),
        ("start_session", session),
        ("fork_session", fork),
        ("end_of_session", end),
    ]


# --- other huge inputs ------------------------------------------------------------------------


def input_cases(size: int, cwd: str) -> list[tuple[str, Callable[[], Awaitable[Any]]]]:
    """A huge tool input validated against its schema, a rule set of ``size // 100`` rules
    checked, a deeply nested tool result capped and recorded, a long system prompt's entry."""

    async def handler(args: Any, ctx: Any) -> ToolOutput:
        return ToolOutput("")

    schema = {
        "type": "object",
        "properties": {"items": {"type": "array"}, "text": {"type": "string"}},
        "required": ["items"],
    }
    tool = Tool("t", "d", schema, handler, output_cap=MCP_OUTPUT_CAP_CHARS)
    tool_input = {"items": [{"k": i, "v": "x" * 8} for i in range(size // 20)], "text": "t" * size}

    async def validate() -> None:
        tool.validate(tool_input)
        await trio.lowlevel.checkpoint()

    n_rules = max(10, size // 100)
    rules = RuleSet.from_strings(
        allow=[f"Bash(tool{i} --flag:*)" for i in range(n_rules)],
        deny=[f"Read(/secret{i}/**)" for i in range(n_rules)],
    )
    gate = PermissionGate(mode="default", rules=rules, cwd=cwd, home=cwd)

    async def many_rules() -> None:
        call = PermissionCheck("Read", {"file_path": cwd + "/a.txt"}, "t1", read_only=True)
        await gate.check(call, {})

    nested: Any = "leaf"
    for _ in range(min(size // 100, 500)):  # msgspec refuses to encode deeper than 1 000
        nested = [nested]
    store = FileSessionStore(Path(cwd) / "nested")

    async def deep_result() -> None:
        out = capped(tool, ToolOutput([{"type": "text", "text": "n", "extra": nested}]))
        transcript = Transcript(store, SessionKey("-p", uuid.uuid4().hex))
        await transcript.record(UserMessage(content=[ToolResultBlock("t", out.content)]))

    return [
        ("tool_input_validation", validate),
        (f"rules_{2 * n_rules}", many_rules),
        ("deep_nesting_result", deep_result),
    ]


# --- Edit of a large file ----------------------------------------------------------------------


def edit_cases(size: int, root: Path) -> list[tuple[str, Callable[[], Awaitable[Any]]]]:
    """Edit of a ``size``-byte file of short lines (read first, as the read-first rule asks):
    a unique string near its end, and a word of every line with ``replace_all``. The files are
    written here, before any measured step; a step is the Read of the file's first line and the
    Edit, as the loop runs them."""
    line = "the quick brown fox jumps over the lazy dog\n"
    body = line * (size // len(line))
    edits = {
        "edit_near_end": {"old_string": "NEEDLE", "new_string": "found"},
        "replace_all": {"old_string": "fox", "new_string": "cat", "replace_all": True},
    }
    cases = []
    for name, edit in edits.items():
        path = root / f"edit{size}_{name}.txt"
        path.write_text(body[: -len(line) * 3] + "NEEDLE\n" + body[-len(line) * 3 :])

        async def step(path: Path = path, edit: dict[str, Any] = edit) -> None:
            ctx = ToolContext(cwd=str(root), agent_id="main", tool_use_id="t", session_id="s")
            read, edit_file = read_tool(), edit_tool()
            await read.handler(read.validate({"file_path": str(path), "limit": 1}), ctx)
            out = await edit_file.handler(edit_file.validate({"file_path": str(path), **edit}), ctx)
            assert not out.is_error, out.content

        cases.append((name, step))
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny smoke run")
    parser.add_argument(
        "--only",
        choices=GROUPS,
        action="append",
        help="run only these groups (repeatable)",
    )
    args = parser.parse_args()
    global QUICK
    QUICK = args.quick
    groups = set(args.only or GROUPS)
    bash_sizes = [400] if args.quick else [4_000, 40_000, 65_000, 100_000]
    output_sizes = [10_000] if args.quick else [1_000_000, 50_000_000]
    entry_sizes = [10_000] if args.quick else [1_000_000, 10_000_000, 50_000_000]
    history_sizes = [200] if args.quick else [10_000, 100_000]
    input_sizes = [10_000] if args.quick else [1_000_000, 10_000_000]
    edit_sizes = [300_000] if args.quick else [10_000_000, 100_000_000]
    measure("control", "checkpoints", 1000, control)
    measure("control", "python_in_a_thread", 1, thread_control)
    with tempfile.TemporaryDirectory() as tmp:
        for size in bash_sizes if "bash_permission" in groups else []:
            for case, step in permission_cases(size, tmp):
                measure("bash_permission", case, size, step)
        for size in output_sizes if "output_cap" in groups else []:
            for case, step in capping_cases(size):
                measure("output_cap", case, size, step)
        for size in entry_sizes if "transcript_entry" in groups else []:
            for case, step in transcript_cases(size, Path(tmp) / f"t{size}"):
                measure("transcript_entry", case, size, step)
        for size in history_sizes if "long_history" in groups else []:
            for case, step in history_cases(size, Path(tmp) / f"h{size}"):
                measure("long_history", case, size, step)
        for size in input_sizes if "other_inputs" in groups else []:
            for case, step in input_cases(size, tmp):
                measure("other_inputs", case, size, step)
        for size in edit_sizes if "edit" in groups else []:
            for case, step in edit_cases(size, Path(tmp)):
                measure("edit", case, size, step)
    measure("control", "checkpoints", 1000, control)


if __name__ == "__main__":
    main()
