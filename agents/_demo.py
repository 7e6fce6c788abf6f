"""``agents demo``: a scripted agent hierarchy on a throwaway project, shown as it runs.

It needs no API key: the model is a :class:`~agents.testing.ScriptedBackend`, while the tools are
the real ones, run on a small project written to a temporary directory. The main agent fans out
read-only calls (they run concurrently), delegates to a foreground ``researcher`` (which fans out
its own reads) and to two background ``auditor`` agents, all under one budget that trips before
the second auditor is done: it is cancelled in the same instant and the tree's spend is printed.

On a terminal it is the live agent tree (:mod:`agents.cockpit`); otherwise (or with
``--no-live``) one line per message, nothing cut, and the tree at the end.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any, TextIO

import attrs
import trio

from . import AgentDefinition, AgentOptions, ResultError, query
from .cockpit.lines import printable
from .cockpit.state import TreeState
from .messages import (
    AssistantMessage,
    Message,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from .sessions import FileSessionStore
from .testing.scripted import ScriptedBackend, Step, text, tool_use, usage

__all__ = ["StreamPrinter", "explain_result", "format_message", "run_demo"]

DEMO_BUDGET = 0.08
AGENTS = {
    "researcher": AgentDefinition(
        description="Reads code and explains how it works.",
        prompt="You read code and report precisely what it does.",
        tools=["Read", "Glob", "Grep"],
    ),
    "security-auditor": AgentDefinition(
        description="Audits code for unsafe input handling.",
        prompt="You audit code for unsafe input handling and report findings.",
        tools=["Read", "Grep"],
        background=True,
    ),
    "style-auditor": AgentDefinition(
        description="Audits naming and docstrings.",
        prompt="You audit naming and docstrings and report findings.",
        tools=["Read", "Grep"],
        background=True,
    ),
}

_PROJECT = {
    "README.md": "# inventory\n\nA tiny inventory service.\n",
    "inventory/__init__.py": "",
    "inventory/store.py": (
        "class Store:\n"
        "    def __init__(self):\n"
        "        self.items = {}\n\n"
        "    def add(self, name, count):\n"
        "        # TODO: reject negative counts\n"
        "        self.items[name] = self.items.get(name, 0) + count\n"
    ),
    "inventory/api.py": (
        "from .store import Store\n\n"
        "store = Store()\n\n"
        "def handle_add(request):\n"
        "    # TODO: validate the request body\n"
        "    store.add(request['name'], request['count'])\n"
    ),
    "tests/test_store.py": (
        "from inventory.store import Store\n\n"
        "def test_add():\n"
        "    s = Store()\n"
        "    s.add('apple', 2)\n"
        "    assert s.items == {'apple': 2}\n"
    ),
}


def _write_project(root: Path) -> None:
    for rel, body in _PROJECT.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)


def demo_backend(root: Path, *, latency: float) -> ScriptedBackend:
    """The demo's script: who says what, with what usage, after how long (seconds)."""
    store = str(root / "inventory" / "store.py")
    api = str(root / "inventory" / "api.py")

    def spawn(kind: str, description: str, prompt: str, background: bool = False) -> Any:
        return tool_use(
            "Agent",
            {"description": description, "prompt": prompt, "subagent_type": kind,
             "run_in_background": background},
        )  # fmt: skip

    return ScriptedBackend(
        {
            "main": [
                Step(
                    [
                        text("Let me survey the project and delegate the deeper work."),
                        tool_use("Glob", {"pattern": "**/*.py"}),
                        tool_use("Grep", {"pattern": "TODO", "output_mode": "content", "-n": True}),
                        spawn("security-auditor", "security audit", "Check input handling.", True),
                        spawn("style-auditor", "style audit", "Check naming and docstrings.", True),
                        spawn("researcher", "explain the store", "How does Store.add work?"),
                    ],
                    usage=usage(2_400, 180),
                    latency=latency,
                ),
                Step(
                    [
                        text(
                            "Two TODOs are open: `Store.add` accepts negative counts "
                            "(inventory/store.py:6) and `handle_add` does not validate its "
                            "request (inventory/api.py:6). The auditors report back when done."
                        )
                    ],
                    usage=usage(3_900, 95, cache_read_input_tokens=2_000),
                    latency=latency,
                ),
                Step([text("Security audit noted.")], usage=usage(4_200, 20), latency=latency),
                Step([text("Style audit noted.")], usage=usage(4_300, 20), latency=latency),
            ],
            "researcher": [
                Step(
                    [
                        tool_use("Read", {"file_path": store}),
                        tool_use("Read", {"file_path": api}),
                    ],
                    usage=usage(1_500, 120),
                    latency=latency,
                ),
                Step(
                    [text("Store.add adds `count` to the item's total with no validation.")],
                    usage=usage(1_800, 60),
                    latency=latency,
                ),
            ],
            # one grep, then a long (expensive) report: it crosses the budget
            "security-auditor": [
                Step([tool_use("Grep", {"pattern": "request\\[", "-n": True,
                                        "output_mode": "content"})],
                     usage=usage(1_200, 80), latency=latency),
                Step([text("handle_add trusts its input: validate name and count.")],
                     usage=usage(9_000, 2_400), latency=latency * 8),
            ],
            # a slow first response, still in flight when the budget trips: cancelled
            "style-auditor": [
                Step([tool_use("Read", {"file_path": store})], usage=usage(1_000, 40),
                     latency=latency * 20),
                Step([text("Names are consistent; two functions lack docstrings.")],
                     usage=usage(1_400, 50), latency=latency),
            ],
        }
    )  # fmt: skip


def _args(args: dict[str, Any]) -> str:
    """A tool call's input as ``key=value`` pairs, every value whole (JSON-quoted)."""
    return " ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())


def _lines(body: str, keep: int = 3) -> str:
    """The first ``keep`` lines of a text, then how many more there are (never a cut line)."""
    lines = body.strip("\n").splitlines() or [""]
    shown = "\n    ".join(lines[:keep])
    more = len(lines) - keep
    return shown + (f"\n    (+{more} more line{'s' if more > 1 else ''})" if more > 0 else "")


def explain_result(result: ResultMessage, index: int) -> str | None:
    """Why a result looks surprising, in a line (a person reading the demo asks)."""
    if index > 0 and result.num_turns == 0 and result.subtype == "error_max_budget_usd":
        return (
            "  ↳ 0 turns: the auditors' reports came back as a new prompt, and its first request "
            "was refused because the tree had already spent its budget"
        )
    if index > 0:
        return "  ↳ a background agent's report came back as a new prompt: this is its result"
    if result.subtype == "success":
        return "  ↳ the main agent answered; the background auditors are still running"
    return None


@attrs.define(eq=False)
class StreamPrinter:
    """Prints readable lines per message, labelling subagents by the Agent call that made them,
    and keeps the tree (:class:`~agents.cockpit.TreeState`) for the closing summary."""

    out: TextIO
    state: TreeState = attrs.Factory(TreeState)
    labels: dict[str, str] = attrs.Factory(dict)

    def __call__(self, message: Message) -> None:
        self.state.observe(message)
        line = self.format(message)
        if line is not None:  # (the model's words and the tools' output: shown, not obeyed)
            print(printable(line, lines=True), file=self.out, flush=True)

    def format(self, message: Message) -> str | None:
        parent = getattr(message, "parent_tool_use_id", None)
        who = f"  {self.labels.get(parent, 'subagent')} │ " if parent else ""
        match message:
            case AssistantMessage(content=[ToolUseBlock(name="Agent", id=call_id, input=args)]):
                self.labels[call_id] = f"{args.get('subagent_type')}"
                mode = "background" if args.get("run_in_background") else "foreground"
                return (
                    f"{who}[spawn] {args.get('subagent_type')} ({mode}): {args.get('description')}"
                )
            case SystemMessage(subtype="task_notification", data=data):
                return f"[task_notification] {data['task_id']} {data['status']}: " + _lines(
                    str(data.get("summary", "")), 1
                )
            case SystemMessage(subtype="session_summary"):
                return None
            case ResultMessage() as result:
                why = explain_result(result, len(self.state.results) - 1)
                return (format_message(result) or "") + ("" if why is None else "\n" + why)
        line = format_message(message)
        return None if line is None else who + line

    def print_tree(self) -> None:
        """The tree as it ended: each agent's status, turns and cost, and the budget."""
        from rich.console import Console

        from .cockpit.live import render

        self.state.finish()
        console = Console(file=self.out, width=110, color_system=None, highlight=False)
        console.print()
        console.print(render(self.state, text=False))


def format_message(message: Message) -> str | None:
    """Readable lines for a message (None for raw stream events); nothing is cut mid-value."""
    match message:
        case SystemMessage(subtype="init", data=data):
            return (
                f"[init] session {data['session_id'][:8]} · model {data['model']} · "
                f"{len(data['tools'])} tools · mode {data['permission_mode']}"
            )
        case SystemMessage(subtype=subtype, data=data):
            return f"[{subtype}] {json.dumps(data, ensure_ascii=False)}"
        case AssistantMessage(content=[TextBlock(text=body)]):
            return f"[assistant] {body}"
        case AssistantMessage(content=[ThinkingBlock(thinking=body)]):
            return f"[thinking] {body}"
        case AssistantMessage(content=[ToolUseBlock(name=name, input=args)]):
            return f"[tool_use] {name} {_args(args)}"
        case UserMessage(content=[ToolResultBlock(content=content, is_error=is_error)]):
            body = (
                content
                if isinstance(content, str)
                else " ".join(c.get("text", "") for c in content or [] if isinstance(c, dict))
            )
            tag = "tool_error" if is_error else "tool_result"
            return f"[{tag}] {_lines(body or '')}"
        case UserMessage(content=body):
            return f"[user] {body}"
        case ResultMessage() as r:
            outcome = r.result if r.subtype == "success" else "; ".join(r.errors or [])
            return (
                f"[result] {r.subtype} · {r.num_turns} turns · ${r.total_cost_usd:.4f} "
                f"spent by the tree · {r.duration_ms / 1000:.2f}s\n    {outcome or ''}"
            )
        case StreamEvent():
            return None
    return f"[{type(message).__name__}]"


def _budget_line(budget: float | None) -> str:
    if budget is None:
        return "budget: none — every agent runs to its end"
    return (
        f"budget: ${budget:.2f} for the whole tree (a soft cap: once it is crossed, every agent "
        "stops)"
    )


async def _run(
    root: Path, data: Path, *, latency: float, budget: float | None, out: TextIO, live: bool
) -> int:
    backend = demo_backend(root, latency=latency)
    # The transcripts go beside the temporary project, and with it: sessions of a project that
    # is gone when the demo ends are of no use in the user's data directory.
    async with FileSessionStore(data) as store:
        options = AgentOptions(
            cwd=str(root),
            backend=backend,
            model="claude-sonnet-4-5",
            agents=AGENTS,
            max_budget_usd=budget,
            session_store=store,
        )
        print(f"demo project: {root}", file=out)
        print(_budget_line(budget), file=out, flush=True)
        if live:
            await _run_live(options, budget, out)
            return 0
        printer = StreamPrinter(out, TreeState(budget_usd=budget))
        try:
            async for message in query(prompt=PROMPT, options=options):
                printer(message)
        except ResultError as exc:
            print(f"query ended with {exc.subtype}: {exc}", file=out)
    printer.print_tree()
    return 0


async def _run_live(options: AgentOptions, budget: float | None, out: TextIO) -> None:
    from rich.console import Console

    from .cockpit.live import open_live_tree

    console = Console(file=out)
    state = TreeState(budget_usd=budget)
    ended = ""
    async with open_live_tree(console, state) as view:
        try:
            async for message in query(prompt=PROMPT, options=options):
                view.observe(message)
        except ResultError as exc:
            ended = f"query ended with {exc.subtype}: {exc}"
    if ended:
        console.print(ended)
    for i, result in enumerate(state.results):
        console.print(
            f"result {i + 1}: {result.subtype} · {result.num_turns} turns · "
            f"${result.total_cost_usd:.4f} spent by the tree"
        )
        why = explain_result(result, i)
        if why:
            console.print(why)


PROMPT = "Survey this project, list its open TODOs and audit it."


def run_demo(
    *,
    fast: bool = False,
    budget: float | None = DEMO_BUDGET,
    out: TextIO | None = None,
    live: bool | None = None,
) -> int:
    """Run the demo on a temporary project; returns the exit status.

    ``live=None`` shows the live tree when ``out`` is a terminal, plain lines otherwise.
    """
    stream = out or sys.stdout
    if live is None:
        live = stream.isatty()
    with tempfile.TemporaryDirectory(prefix="agents-demo-") as tmp:
        root = Path(tmp) / "project"
        _write_project(root)
        return trio.run(
            lambda: _run(
                root,
                Path(tmp) / "sessions",
                latency=0.05 if fast else 0.15,
                budget=budget,
                out=stream,
                live=live,
            )
        )
