"""The tree's shortcuts against their full paths: a subagent that needs no nursery for its
tools' background work is served without ``serve``'s coroutine and nursery, a child spawned and
its end reported without a coroutine, and each answers as through the full path;
``needs_services`` and a tool-less child's registry answer as the general rule does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import msgspec
import pytest
import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

from agents import AgentDefinition, AgentOptions, Message, SystemMessage
from agents._assembly import query as query_module
from agents._assembly.output import MessageStream
from agents._loop.agent import AgentLoop
from agents._loop.session import Session
from agents._tree import serve as serve_module
from agents._tree import subagents
from agents._tree.serve import needs_services
from agents._tree.subagents import child_registry
from agents.backends.base import ModelRequest
from agents.sessions import InMemorySessionStore
from agents.testing import ScriptedBackend, Step, text, tool_use
from agents.tools.base import Tool, ToolOutput, ToolRegistry
from agents.tools.builtin import BUILTIN_TOOL_NAMES

from .helpers import collect

#: what differs from one run to the next whatever the path: ids drawn at random or counted
#: per process, wall time
_RANDOM_KEYS = frozenset({
    "uuid", "parent_uuid", "parentUuid", "session_id", "sessionId", "message_id",
    "duration_ms", "duration_api_ms", "timestamp",
})  # fmt: skip


def _plain(value: Any) -> Any:
    """``value`` as builtins, without the keys that are random in every run."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k not in _RANDOM_KEYS}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _spawn(kind: str, background: bool, call_id: str) -> Any:
    args = {"description": f"{kind} task", "prompt": f"do {kind}", "subagent_type": kind,
            "run_in_background": background}  # fmt: skip
    return tool_use("Agent", args, id=call_id)


def _respond(request: ModelRequest) -> Step:
    """main spawns two tool-less leaves in the background and a worker in the foreground;
    the worker spawns a leaf of its own in the background. Distinct latencies: one order."""
    first = len(request.messages) == 1
    kind = request.agent_type
    if kind == "main" and first:
        return Step([_spawn("quick", True, "call_q"), _spawn("slow", True, "call_s"),
                     _spawn("worker", False, "call_w")])  # fmt: skip
    if kind == "worker" and first:
        return Step([_spawn("quick", True, "call_wq"), text("spawned")], latency=1)
    latency = {"quick": 3.0, "slow": 11.0}.get(kind, 0.5)
    heard = request.messages[-1]["content"]
    said = heard if isinstance(heard, str) else "results"
    return Step([text(f"{kind} answers {len(request.messages)}: {said[:60]}")], latency=latency)


async def _tree_run(project: Path) -> tuple[list[Any], list[Any], list[Any]]:
    """The stream, the model's requests and every transcript of one run of the tree."""
    store = InMemorySessionStore()
    backend = ScriptedBackend(_respond)
    agents = {
        "quick": AgentDefinition(description="q", prompt="You are quick.", tools=[]),
        "slow": AgentDefinition(description="s", prompt="You are slow.", tools=[]),
        "worker": AgentDefinition(description="w", prompt="You work.", tools=["Agent"]),
    }
    options = AgentOptions(
        cwd=str(project), backend=backend, agents=agents, tools=["Agent"],
        permission_mode="bypassPermissions", session_store=store,
    )  # fmt: skip
    messages: list[Message]
    messages, error = await collect("go", options)
    assert error is None
    stream = [(type(m).__name__, _plain(msgspec.to_builtins(m))) for m in messages]
    # each agent's requests in order (agents asking at the same moment ask in Trio's order)
    requests = sorted(((r.agent_id, _plain(r.messages)) for r in backend.requests),
                      key=lambda r: r[0])  # fmt: skip
    transcripts = []
    for key in sorted(store._data, key=lambda k: k.subpath or ""):  # every transcript stored
        entries = await store.load(key)
        assert entries is not None
        transcripts.append((key.subpath, [_plain(msgspec.to_builtins(e)) for e in entries]))
    return stream, requests, transcripts


def _stream_without_room_for_notifications(patch: pytest.MonkeyPatch) -> list[Any]:
    """A session without notices (``Session.emit_notice`` None), whose stream takes no
    ``task_notification`` at its first offer: each is awaited (``notify``), and taken by the
    awaited ``put``'s own offer."""

    def without_notices(**fields: Any) -> Session:
        return Session(**{**fields, "emit_notice": None})

    patch.setattr(query_module, "Session", without_notices)
    put_nowait = MessageStream.put_nowait
    refused: list[Any] = []

    def refusing(self: MessageStream[Any], item: Any) -> bool:
        first = isinstance(item, SystemMessage) and item.subtype == "task_notification" and not any(
            item is r for r in refused
        )
        if first:
            refused.append(item)
            return False
        return put_nowait(self, item)

    patch.setattr(MessageStream, "put_nowait", refusing)
    return refused


def _served_with_a_nursery(patch: pytest.MonkeyPatch) -> list[Any]:
    """Every agent served through ``serve`` with a nursery for its tools."""
    served: list[Any] = []

    def needs(loop: AgentLoop) -> bool:
        served.append(loop)
        return True

    patch.setattr(subagents, "needs_services", needs)
    patch.setattr(serve_module, "needs_services", needs)
    return served


def _spawned_with_a_coroutine(patch: pytest.MonkeyPatch) -> list[Any]:
    """Every spawn through ``spawn_child``'s wait for the parent's task."""
    tried: list[Any] = []

    def never(*args: Any, **kwargs: Any) -> None:
        tried.append(args)

    patch.setattr(subagents, "spawn_child_nowait", never)
    return tried


@pytest.mark.parametrize(
    "full_path",
    [_served_with_a_nursery, _spawned_with_a_coroutine, _stream_without_room_for_notifications],
)
async def test_the_trees_shortcuts_answer_as_their_full_paths(
    project: Path,
    autojump_clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
    full_path: Callable[[pytest.MonkeyPatch], list[Any]],
) -> None:
    """The same stream, requests and transcripts through each shortcut and its full path:
    leaves awaited through ``answer`` or served through ``serve`` and a nursery; spawns by
    ``spawn_child_nowait`` or by ``spawn_child``'s wait; a child's end reported at once or
    after an awaited emit (``notify``)."""
    shortcut = await _tree_run(project)
    with monkeypatch.context() as patch:
        taken = full_path(patch)
        full = await _tree_run(project)
    assert len(taken) >= 3  # the full path was taken, once per leaf at least
    stream, requests, transcripts = shortcut
    assert stream == full[0]
    assert requests == full[1]
    assert transcripts == full[2]
    # the scenario has what it is meant to have: three leaves, all heard of
    notes = [m for kind, m in stream if kind == "SystemMessage"
             and m["subtype"] == "task_notification"]  # fmt: skip
    assert sorted(n["data"]["task_id"] for n in notes) == [
        "main/quick-1", "main/slow-1", "main/worker-1/quick-1"
    ]  # fmt: skip
    assert len(transcripts) == 5  # main, worker and three leaves


def _stand_in(names: list[str]) -> AgentLoop:
    """What ``needs_services`` reads of a loop: its tools' names."""
    registry = ToolRegistry()
    for name in names:
        registry.add(Tool(name=name, description="", input_schema={}, handler=_handler))
    return cast(AgentLoop, SimpleNamespace(tools=registry))


async def _handler(args: Any, ctx: Any) -> ToolOutput:
    return ToolOutput(content="")


_TOOL_NAMES = st.sampled_from([*BUILTIN_TOOL_NAMES, "Agent", "mcp__s__t", "mcp_", "Custom"])


@given(st.lists(_TOOL_NAMES, unique=True, max_size=6))
def test_needs_services_follows_its_rule_for_any_tools(names: list[str]) -> None:
    """A nursery exactly when a tool other than the built-in ones (Bash aside), ``Agent`` and
    in-process MCP tools is present; none for an agent without tools."""
    plain = set(BUILTIN_TOOL_NAMES) - {"Bash"} | {"Agent"}
    expected = any(n not in plain and not n.startswith("mcp__") for n in names)
    assert needs_services(_stand_in(names)) is expected


def test_a_child_with_an_empty_tool_list_gets_no_tools_and_one_without_a_list_the_parents(
) -> None:
    """``tools=[]`` is no tools, whatever the parent has; ``tools=None`` is the parent's
    (less the main agent's own ``AskUserQuestion``)."""
    parent_tools = _stand_in(["Read", "Grep", "AskUserQuestion"]).tools
    options = SimpleNamespace(max_subagent_depth=3)
    parent = cast(AgentLoop, SimpleNamespace(tools=parent_tools,
                                             session=SimpleNamespace(options=options)))  # fmt: skip
    bare = AgentDefinition(description="d", prompt="p", tools=[])
    inherits = AgentDefinition(description="d", prompt="p")
    for depth in (1, 3):
        assert child_registry(parent, bare, depth).names() == []
        assert child_registry(parent, inherits, depth).names() == ["Read", "Grep"]
