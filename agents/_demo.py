"""``agents demo``: a scripted agent hierarchy on a throwaway project, printed as it streams.

It needs no API key: the model is a :class:`~agents.testing.ScriptedBackend`, while the tools are
the real ones, run on a small project written to a temporary directory. The main agent fans out
read-only calls (they run concurrently), delegates to a foreground ``researcher`` (which fans out
its own reads) and to two background ``auditor`` agents, all under one budget that trips before
the second auditor is done: it is cancelled in the same instant and the tree's spend is printed.
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

__all__ = ["StreamPrinter", "format_message", "run_demo"]

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


def _short(value: Any, width: int = 88) -> str:
    text_ = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text_ = " ".join(text_.split())
    return text_ if len(text_) <= width else text_[: width - 1] + "…"


@attrs.define(eq=False)
class StreamPrinter:
    """Prints one readable line per message, labelling subagents by the Agent call that made
    them, and remembers what the tree did for the closing summary."""

    out: TextIO
    labels: dict[str, str] = attrs.Factory(dict)
    statuses: dict[str, str] = attrs.Factory(dict)
    summary: dict[str, Any] = attrs.Factory(dict)

    def __call__(self, message: Message) -> None:
        line = self.format(message)
        if line is not None:
            print(line, file=self.out, flush=True)

    def format(self, message: Message) -> str | None:
        parent = getattr(message, "parent_tool_use_id", None)
        who = f"  {self.labels.get(parent, 'subagent')} │ " if parent else ""
        match message:
            case AssistantMessage(content=[ToolUseBlock(name="Agent", id=call_id, input=args)]):
                self.labels[call_id] = f"{args.get('subagent_type')}:{args.get('description')}"
                mode = "background" if args.get("run_in_background") else "foreground"
                return (
                    f"{who}[spawn] {args.get('subagent_type')} ({mode}): {args.get('description')}"
                )
            case SystemMessage(subtype="task_notification", data=data):
                self.statuses[data["task_id"]] = data["status"]
                return f"[task_notification] {data['task_id']} {data['status']}: " + _short(
                    data.get("summary", ""), 60
                )
            case SystemMessage(subtype="session_summary", data=data):
                self.summary = data
                return None
        line = format_message(message)
        return None if line is None else who + line

    def print_tree(self) -> None:
        data = self.summary
        if not data:
            return
        costs: dict[str, float] = data["cost_by_agent"]
        turns: dict[str, int] = data["turns_by_agent"]
        ids = sorted(set(costs) | set(turns) | set(self.statuses), key=lambda a: (a != "main", a))
        print("\nagent tree                          turns      cost  status", file=self.out)
        for i, agent in enumerate(ids):
            depth = agent.count("/")
            branch = (
                "" if depth == 0 else "   " * (depth - 1) + ("└─ " if i == len(ids) - 1 else "├─ ")
            )
            status = self.statuses.get(agent, "" if agent == "main" else "completed")
            cost = costs.get(agent, 0.0)
            print(
                f"{branch + agent:<34}{turns.get(agent, 0):>6}  ${cost:.4f}  {status}",
                file=self.out,
            )
        cap = data.get("max_budget_usd")
        total = data["total_cost_usd"]
        verdict = (
            "" if cap is None else f" of ${cap:.2f} budget" + (" (tripped)" if total >= cap else "")
        )
        print(f"total ${total:.4f}{verdict}", file=self.out, flush=True)


def format_message(message: Message) -> str | None:
    """One readable line per message (None for raw stream events)."""
    match message:
        case SystemMessage(subtype="init", data=data):
            return (
                f"[init] session {data['session_id'][:8]} · model {data['model']} · "
                f"{len(data['tools'])} tools · mode {data['permission_mode']}"
            )
        case SystemMessage(subtype=subtype, data=data):
            return f"[{subtype}] {_short(data)}"
        case AssistantMessage(content=[TextBlock(text=body)]):
            return f"[assistant] {_short(body, 400)}"
        case AssistantMessage(content=[ThinkingBlock(thinking=body)]):
            return f"[thinking] {_short(body)}"
        case AssistantMessage(content=[ToolUseBlock(name=name, input=args)]):
            return f"[tool_use] {name} {_short(args, 70)}"
        case UserMessage(content=[ToolResultBlock(content=content, is_error=is_error)]):
            body = (
                content
                if isinstance(content, str)
                else " ".join(c.get("text", "") for c in content or [] if isinstance(c, dict))
            )
            tag = "tool_error" if is_error else "tool_result"
            return f"[{tag}] {_short(body or '')}"
        case UserMessage(content=body):
            return f"[user] {_short(body)}"
        case ResultMessage() as r:
            outcome = r.result if r.subtype == "success" else "; ".join(r.errors or [])
            return (
                f"[result] {r.subtype} · {r.num_turns} turns · ${r.total_cost_usd:.4f} · "
                f"{r.duration_ms / 1000:.2f}s\n         {_short(outcome or '', 300)}"
            )
        case StreamEvent():
            return None
    return f"[{type(message).__name__}]"


async def _run(
    root: Path, data: Path, *, latency: float, budget: float | None, out: TextIO
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
        printer = StreamPrinter(out)
        try:
            async for message in query(
                prompt="Survey this project, list its open TODOs and audit it.", options=options
            ):
                printer(message)
        except ResultError as exc:
            print(f"query ended with {exc.subtype}: {exc}", file=out)
    printer.print_tree()
    return 0


def run_demo(
    *, fast: bool = False, budget: float | None = DEMO_BUDGET, out: TextIO | None = None
) -> int:
    """Run the demo on a temporary project; returns the exit status."""
    with tempfile.TemporaryDirectory(prefix="agents-demo-") as tmp:
        root = Path(tmp) / "project"
        _write_project(root)
        return trio.run(
            lambda: _run(
                root,
                Path(tmp) / "sessions",
                latency=0.05 if fast else 0.15,
                budget=budget,
                out=out or sys.stdout,
            )
        )
