"""``agents demo``: a scripted session on a throwaway project, printed as it streams.

It needs no API key: the model is a :class:`~agents.testing.ScriptedBackend`, while the tools are
the real ones, run on a small project written to a temporary directory. The main agent fans out
read-only calls (they run concurrently), then answers.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any, TextIO

import trio

from . import AgentOptions, ResultError, query
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
from .testing.scripted import ScriptedBackend, Step, text, tool_use, usage

__all__ = ["format_message", "run_demo"]

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
    """The demo's script: one fan-out turn of four read-only calls, then the answer."""
    store = str(root / "inventory" / "store.py")
    api = str(root / "inventory" / "api.py")
    return ScriptedBackend(
        {
            "main": [
                Step(
                    [
                        text("Let me look around the project first."),
                        tool_use("Glob", {"pattern": "**/*.py"}),
                        tool_use("Grep", {"pattern": "TODO", "output_mode": "content", "-n": True}),
                        tool_use("Read", {"file_path": store}),
                        tool_use("Read", {"file_path": api}),
                    ],
                    usage=usage(2_400, 180),
                    latency=latency,
                ),
                Step(
                    [
                        text(
                            "The project has 4 Python files. Two TODOs are open: `Store.add` "
                            "accepts negative counts (inventory/store.py:6) and `handle_add` "
                            "does not validate its request (inventory/api.py:6). Both can be "
                            "fixed with one check in `Store.add` plus a schema check in the API."
                        )
                    ],
                    usage=usage(3_900, 95, cache_read_input_tokens=2_000),
                    latency=latency,
                ),
            ]
        }
    )


def _short(value: Any, width: int = 88) -> str:
    text_ = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text_ = " ".join(text_.split())
    return text_ if len(text_) <= width else text_[: width - 1] + "…"


def format_message(message: Message) -> str | None:
    """One readable line per message (None for raw stream events)."""
    indent = "    " if getattr(message, "parent_tool_use_id", None) else ""
    match message:
        case SystemMessage(subtype="init", data=data):
            return (
                f"[init] session {data['session_id'][:8]} · model {data['model']} · "
                f"{len(data['tools'])} tools · mode {data['permission_mode']}"
            )
        case SystemMessage(subtype=subtype, data=data):
            return f"{indent}[{subtype}] {_short(data)}"
        case AssistantMessage(content=[TextBlock(text=body)]):
            return f"{indent}[assistant] {_short(body, 400)}"
        case AssistantMessage(content=[ThinkingBlock(thinking=body)]):
            return f"{indent}[thinking] {_short(body)}"
        case AssistantMessage(content=[ToolUseBlock(name=name, input=args)]):
            return f"{indent}[tool_use] {name} {_short(args, 70)}"
        case UserMessage(content=[ToolResultBlock(content=content, is_error=is_error)]):
            body = (
                content
                if isinstance(content, str)
                else " ".join(c.get("text", "") for c in content or [] if isinstance(c, dict))
            )
            tag = "tool_error" if is_error else "tool_result"
            return f"{indent}[{tag}] {_short(body or '')}"
        case UserMessage(content=body):
            return f"{indent}[user] {_short(body)}"
        case ResultMessage() as r:
            outcome = r.result if r.subtype == "success" else "; ".join(r.errors or [])
            return (
                f"[result] {r.subtype} · {r.num_turns} turns · ${r.total_cost_usd:.4f} · "
                f"{r.duration_ms / 1000:.2f}s\n         {_short(outcome or '', 300)}"
            )
        case StreamEvent():
            return None
    return f"[{type(message).__name__}]"


async def _run(root: Path, *, latency: float, budget: float | None, out: TextIO) -> int:
    backend = demo_backend(root, latency=latency)
    options = AgentOptions(
        cwd=str(root),
        backend=backend,
        model="claude-sonnet-4-5",
        max_budget_usd=budget,
    )
    print(f"demo project: {root}", file=out)
    try:
        async for message in query(
            prompt="Survey this project and list its open TODOs.", options=options
        ):
            line = format_message(message)
            if line is not None:
                print(line, file=out, flush=True)
    except ResultError:
        return 1  # the error result was printed above
    return 0


def run_demo(*, fast: bool = False, budget: float | None = None, out: TextIO | None = None) -> int:
    """Run the demo on a temporary project; returns the exit status."""
    with tempfile.TemporaryDirectory(prefix="agents-demo-") as tmp:
        root = Path(tmp)
        _write_project(root)
        return trio.run(
            lambda: _run(root, latency=0.0 if fast else 0.25, budget=budget, out=out or sys.stdout)
        )
