"""The API's edges: the user's exceptions reach the caller unchanged after the session is torn
down, every exit closes its nursery whatever raises, and nothing deadlocks between the caller and
the agents — however many prompts are queued and however many results nobody reads."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from agents import (
    AgentClient,
    AgentDefinition,
    AgentOptions,
    HookMatcher,
    PermissionResultAllow,
    ResultMessage,
    ToolAnnotations,
    create_sdk_mcp_server,
    query,
    tool,
)
from agents._loop.capping import MAX_CONTENT_ITEMS, capped
from agents.testing import ScriptedBackend, Step, text, tool_use
from agents.tools.base import Tool, ToolOutput
from tests.agents.sessions.holds import best_hold, control_hold

#: a well-formed session id no store holds
UNKNOWN_SESSION = "00000000-0000-4000-8000-000000000000"


class UserAbort(BaseException):
    """A BaseException of the user's own, neither Exception nor a Trio one."""


RAISED = [KeyboardInterrupt, SystemExit, UserAbort]


def tools_server(raise_it: Callable[[], None] | None, torn_down: list[str]) -> Any:
    """``boom`` (read-only; raises what ``raise_it`` raises) and ``wait`` (read-only; sleeps
    until cancelled, noting it in ``torn_down``)."""

    @tool("boom", "raises", {"x": str}, annotations=ToolAnnotations(readOnlyHint=True))
    async def boom(args: dict[str, Any]) -> dict[str, Any]:
        await trio.sleep(1)
        if raise_it is not None:
            raise_it()
        return {"content": [{"type": "text", "text": "fine"}]}

    @tool("wait", "waits", {"x": str}, annotations=ToolAnnotations(readOnlyHint=True))
    async def wait(args: dict[str, Any]) -> dict[str, Any]:
        try:
            await trio.sleep_forever()
        finally:
            torn_down.append("wait")
        raise AssertionError("unreachable")

    return create_sdk_mcp_server("t", "1", [boom, wait])


def raising_options(
    project: Path, where: str, error: BaseException, torn_down: list[str]
) -> AgentOptions:
    """A session whose one response calls ``wait`` and ``boom`` at once; ``error`` is raised by
    the tool, a PreToolUse hook or ``can_use_tool`` — when ``boom`` comes up."""

    def raise_it() -> None:
        raise error

    backend = ScriptedBackend(
        [Step([tool_use("mcp__t__wait", {"x": "1"}), tool_use("mcp__t__boom", {"x": "1"})]),
         Step([text("never")])]
    )  # fmt: skip
    kw: dict[str, Any] = {}
    if where == "hook":

        async def hook(data: dict[str, Any], tool_use_id: str | None, ctx: Any) -> dict[str, Any]:
            if data["tool_name"] == "mcp__t__boom":
                await trio.sleep(1)
                raise_it()
            return {}

        kw["hooks"] = {"PreToolUse": [HookMatcher(hooks=[hook])]}
        kw["permission_mode"] = "bypassPermissions"
    elif where == "can_use_tool":

        async def can_use_tool(name: str, data: dict[str, Any], ctx: Any) -> Any:
            if name == "mcp__t__boom":
                await trio.sleep(1)
                raise_it()
            return PermissionResultAllow()

        async def ask(data: dict[str, Any], tool_use_id: str | None, ctx: Any) -> dict[str, Any]:
            # a read-only tool passes the default mode: ask, so that the callback decides
            decision = "ask" if data["tool_name"] == "mcp__t__boom" else "allow"
            output = {"hookEventName": "PreToolUse", "permissionDecision": decision}
            return {"hookSpecificOutput": output}

        kw["can_use_tool"] = can_use_tool
        kw["hooks"] = {"PreToolUse": [HookMatcher(hooks=[ask])]}
    else:
        kw["permission_mode"] = "bypassPermissions"
    server = tools_server(raise_it if where == "tool" else None, torn_down)
    return AgentOptions(
        cwd=str(project), backend=backend, tools=[], mcp_servers={"t": server}, **kw
    )


# --- the user's exceptions stay the user's ------------------------------------------------------


@pytest.mark.parametrize("where", ["tool", "hook", "can_use_tool"])
@pytest.mark.parametrize("kind", RAISED)
async def test_a_base_exception_from_user_code_reaches_the_query_caller_unchanged(
    project: Path, autojump_clock: trio.testing.MockClock, where: str, kind: type[BaseException]
) -> None:
    """KeyboardInterrupt, SystemExit or the user's own BaseException, raised by a custom tool,
    a hook or can_use_tool: query() raises that very exception, after the session ended."""
    error = kind("from user code")
    torn_down: list[str] = []
    options = raising_options(project, where, error, torn_down)
    with pytest.raises(kind) as info:
        async for _ in query(prompt="go", options=options):
            pass
    assert info.value is error
    assert torn_down == ["wait"]  # the concurrent tool was cancelled before the caller saw it


@pytest.mark.parametrize("where", ["tool", "hook", "can_use_tool"])
@pytest.mark.parametrize("kind", RAISED)
async def test_a_base_exception_from_user_code_leaves_agent_client_unchanged(
    project: Path, autojump_clock: trio.testing.MockClock, where: str, kind: type[BaseException]
) -> None:
    """The same through AgentClient: the exception comes out of ``async with``, not wrapped."""
    error = kind("from user code")
    torn_down: list[str] = []
    options = raising_options(project, where, error, torn_down)
    with pytest.raises(kind) as info:
        async with AgentClient(options) as client:
            await client.query("go")
            async for _ in client.receive_messages():
                pass
    assert info.value is error
    assert torn_down == ["wait"]


async def test_agent_client_exit_under_an_outer_cancellation_closes_its_nursery(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """The block ends normally inside a cancelled scope: the exit's own awaits are cancelled,
    yet the client's nursery closes (no TrioInternalError, no corrupted nursery stack)."""
    backend = ScriptedBackend(lambda request: Step([text("ok")]))
    with trio.CancelScope() as outer:
        async with AgentClient(AgentOptions(cwd=str(project), backend=backend)) as client:
            await client.query("hi")
            outer.cancel()
    assert outer.cancelled_caught
    await trio.lowlevel.checkpoint()  # the run is still healthy


async def test_agent_client_exit_while_the_session_fails_raises_the_failure(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """The session fails just as the block ends: that failure comes out, unwrapped."""
    error = UserAbort("late")
    torn_down: list[str] = []
    options = raising_options(project, "tool", error, torn_down)
    with pytest.raises(UserAbort) as info:
        async with AgentClient(options) as client:
            await client.query("go")
            await trio.sleep(0.5)  # the tool raises at 1 s, while the exit is under way
    assert info.value is error


async def test_agent_client_exit_when_the_body_raises_keeps_the_body_error(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """A failing body: its exception comes out of the block, the session torn down."""
    backend = ScriptedBackend(lambda request: Step([text("ok")], latency=10))
    with pytest.raises(ZeroDivisionError):
        async with AgentClient(AgentOptions(cwd=str(project), backend=backend)) as client:
            await client.query("hi")
            1 / 0  # noqa: B018


# --- no deadlock at the API's edge -------------------------------------------------------------


def _capacities() -> dict[str, int]:
    """The channels at the edge: the main agent's mailbox, the client's output buffer, a
    spawned agent's results."""
    import agents._assembly.query as q

    return {"prompts": q.MAILBOX_CAPACITY, "output": q.OUTPUT_BUFFER, "spawned": 16}


def counts(direction: str) -> list[int]:
    capacity = _capacities()[direction]
    return [0, 1, capacity, 10 * capacity]


def answering(request: Any) -> Step:
    return Step([text("ok")])


@pytest.mark.parametrize("read", [True, False], ids=["read", "unread"])
@pytest.mark.parametrize("n", counts("prompts"))
async def test_client_query_returns_once_queued_however_many(
    project: Path, autojump_clock: trio.testing.MockClock, n: int, read: bool
) -> None:
    """``client.query`` returns at once for 0, 1, capacity and 10× capacity prompts, read or
    not, and the client exits."""
    backend = ScriptedBackend(answering)
    options = AgentOptions(cwd=str(project), backend=backend, tools=[])
    with trio.fail_after(60):
        async with AgentClient(options) as client:
            for i in range(n):
                with trio.fail_after(0.001):  # queuing never waits on the agent (virtual time)
                    await client.query(f"prompt {i}")
            if read and n:
                results = 0
                async for message in client.receive_messages():
                    if isinstance(message, ResultMessage):
                        results += 1
                        if results == n:
                            break
                assert results == n


@pytest.mark.parametrize("n", counts("output"))
async def test_unread_output_never_blocks_the_client_exit(
    project: Path, autojump_clock: trio.testing.MockClock, n: int
) -> None:
    """A prompt whose turn streams 0, 1, capacity and 10× capacity messages nobody reads: the
    client still exits (the rest is drained at close)."""
    blocks = [text(f"block {i}") for i in range(n)] or [text("")]
    backend = ScriptedBackend([Step(blocks)])
    with trio.fail_after(60):
        async with AgentClient(AgentOptions(cwd=str(project), backend=backend, tools=[])) as c:
            await c.query("talk a lot")


@pytest.mark.parametrize("n", counts("spawned"))
async def test_unread_results_of_spawned_agents_never_block_the_client_exit(
    project: Path, autojump_clock: trio.testing.MockClock, n: int
) -> None:
    """An agent spawned from code answers 0, 1, capacity and 10× capacity prompts whose results
    nobody reads: sending never waits on it, and the client exits (unread results dropped)."""
    backend = ScriptedBackend(answering)
    agents = {"worker": AgentDefinition(description="works", prompt="You work.")}
    options = AgentOptions(cwd=str(project), backend=backend, tools=[], agents=agents)
    with trio.fail_after(60):
        async with AgentClient(options) as client:
            worker = await client.spawn("worker")
            for i in range(n):
                with trio.fail_after(0.001):
                    await worker.send(f"job {i}")
            await trio.sleep(1)  # let it answer what it can


async def test_results_of_a_spawned_agent_are_read_in_order_past_capacity(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """The control: results that are read all arrive, in prompt order, past the capacity."""
    backend = ScriptedBackend(lambda request: Step([text(str(len(request.messages)))]))
    agents = {"worker": AgentDefinition(description="works", prompt="You work.")}
    options = AgentOptions(cwd=str(project), backend=backend, tools=[], agents=agents)
    n = 3 * _capacities()["spawned"]
    async with AgentClient(options) as client:
        worker = await client.spawn("worker")
        for i in range(n):
            await worker.send(f"job {i}")
        got = [(await worker.result()).result for _ in range(n)]
    assert got == [str(2 * i + 1) for i in range(n)]


async def test_a_session_that_cannot_start_raises_its_own_error_from_agent_client(
    project: Path,
) -> None:
    """Resuming an unknown session: SessionNotFoundError itself, not an exception group."""
    from agents.sessions import SessionNotFoundError

    backend = ScriptedBackend([Step([text("never")])])
    with pytest.raises(SessionNotFoundError, match=rf"^no session '{UNKNOWN_SESSION}' in project "):
        async with AgentClient(
            AgentOptions(cwd=str(project), backend=backend, resume=UNKNOWN_SESSION)
        ):
            pass


# -- a responsive event loop: output capping ---------------------------------------------------


class LookedAt(dict[str, Any]):
    """A content item that fails the test when the cap looks at it."""

    def get(self, *args: Any) -> Any:
        raise AssertionError("the cap looked past its bound")


def capped_tool(cap: int) -> Tool:
    async def handler(args: Any, ctx: Any) -> ToolOutput:
        return ToolOutput("")

    return Tool("big", "d", {"type": "object"}, handler, output_cap=cap)


def test_capping_looks_at_no_more_items_than_it_keeps() -> None:
    """Items past the most a capped output keeps are never looked at, however many follow."""
    items: list[dict[str, Any]] = [{"type": "image"} for _ in range(MAX_CONTENT_ITEMS)]
    items += [LookedAt() for _ in range(1000)]
    out = capped(capped_tool(100), ToolOutput(items))
    assert isinstance(out.content, list) and len(out.content) == MAX_CONTENT_ITEMS + 1
    assert "1000 more content items not shown" in out.content[-1]["text"]


def test_capping_cuts_the_text_item_that_passes_the_cap_and_counts_the_rest() -> None:
    """Text items share the cap: the one crossing it is cut with a note, the rest are counted."""
    items = [
        {"type": "text", "text": "a" * 60},
        {"type": "image"},
        {"type": "text", "text": "b" * 60},
    ]
    items += [{"type": "text", "text": "c"}, {"type": "image"}]
    out = capped(capped_tool(100), ToolOutput(items))
    assert isinstance(out.content, list)
    assert out.content[:2] == items[:2]
    assert out.content[2]["text"].startswith("b" * 40 + "\n\n... [output truncated: 20 more")
    assert out.content[3]["text"].startswith("... [output truncated: 2 more content items")
    assert len(out.content) == 4


def test_capping_cuts_a_single_text_item_over_the_cap() -> None:
    """One text item (what most tools return) is cut at the cap like any; one within it, or
    an item that is not text, is left as it is."""
    out = capped(capped_tool(100), ToolOutput([{"type": "text", "text": "a" * 150}]))
    assert isinstance(out.content, list) and len(out.content) == 1
    assert out.content[0]["text"].startswith("a" * 100 + "\n\n... [output truncated: 50 more")
    for item in ({"type": "text", "text": "a" * 100}, {"type": "image", "text": "a" * 150}):
        within = ToolOutput([item])
        assert capped(capped_tool(100), within) is within


def test_capping_leaves_an_output_within_the_cap_unchanged() -> None:
    items = [{"type": "text", "text": "a" * 50}, {"type": "image"}, {"type": "text", "text": "b"}]
    output = ToolOutput(items)
    assert capped(capped_tool(51), output) is output


async def test_capping_millions_of_items_does_not_hold_the_event_loop() -> None:
    """Capping 2 million content items holds the loop about as long as a thousand checkpoints
    (before: the whole list was walked on the loop, over a second here)."""
    tool = capped_tool(100_000)
    items = [{"type": "text", "text": "w" * 10} for _ in range(2_000_000)]

    async def cap_it() -> None:
        capped(tool, ToolOutput(items))
        await trio.lowlevel.checkpoint()

    control = await control_hold()
    assert (await best_hold(cap_it)).step < 0.025 + 5 * control.step
