"""Where agents.asyncio runs: asyncio.run, a loop busy with other tasks, uvloop, anyio; several
queries on one loop sharing one Trio guest run; the clear error of agents.query under asyncio."""

from __future__ import annotations

import asyncio
import importlib
from pathlib import Path
from typing import Any

import pytest
import trio

import agents
import agents.asyncio
import agents.asyncio.types
from agents.asyncio import (
    ClaudeAgentOptions,
    ResultMessage,
    create_sdk_mcp_server,
    query,
    tool,
)
from agents.testing import ScriptedBackend, Step, text, tool_use

from .conftest import assert_nothing_left


def answer_options(project: Path, answer: str = "ok", latency: float = 0.0) -> ClaudeAgentOptions:
    backend = ScriptedBackend([Step([text(answer)], latency=latency)])
    return ClaudeAgentOptions(cwd=str(project), tools=[], backend=backend)


async def result_of(prompt: str, options: ClaudeAgentOptions) -> str | None:
    messages = [m async for m in query(prompt=prompt, options=options)]
    return [m for m in messages if isinstance(m, ResultMessage)][-1].result


def token_probe() -> tuple[Any, list[Any]]:
    """A server whose ``probe`` tool records the Trio run serving it (its TrioToken) and waits
    until two calls are in, so that two queries are known to run at the same time."""
    tokens: list[Any] = []
    both = asyncio.Event()

    @tool("probe", "Which run am I in?", {})
    async def probe(args: dict[str, Any]) -> dict[str, Any]:
        tokens.append(trio.lowlevel.current_trio_token())  # host code may ask the guest run
        if len(tokens) == 2:
            both.set()
        await asyncio.wait_for(both.wait(), 10)
        return {"content": "probed"}

    return create_sdk_mcp_server("p", tools=[probe]), tokens


def probing_options(project: Path, server: Any) -> ClaudeAgentOptions:
    backend = ScriptedBackend([Step([tool_use("mcp__p__probe", {})]), Step([text("done")])])
    return ClaudeAgentOptions(
        cwd=str(project),
        tools=[],
        backend=backend,
        mcp_servers={"p": server},
        allowed_tools=["mcp__p__probe"],
    )


def test_two_concurrent_queries_share_one_guest_run(project: Path) -> None:
    """asyncio.gather of two queries: both run at once, in the same Trio run, both answer."""

    async def main() -> tuple[list[str | None], list[Any]]:
        server, tokens = token_probe()
        answers = await asyncio.gather(
            result_of("a", probing_options(project, server)),
            result_of("b", probing_options(project, server)),
        )
        assert_nothing_left()
        return list(answers), tokens

    answers, tokens = asyncio.run(main())
    assert answers == ["done", "done"]
    assert len(tokens) == 2 and tokens[0] is tokens[1]


def test_the_guest_run_ends_with_the_last_session_and_the_next_starts_a_new_one(
    project: Path,
) -> None:
    """After a query no Trio run remains; the next query starts its own."""

    async def main() -> list[bool]:
        seen = []
        for answer in ("one", "two"):
            assert await result_of("q", answer_options(project, answer)) == answer
            seen.append(trio.lowlevel.in_trio_run())
        return seen

    assert asyncio.run(main()) == [False, False]


def test_queries_run_while_other_tasks_of_the_loop_keep_running(project: Path) -> None:
    """A handler-like task ticking on the loop keeps its pace while a query waits on the model."""

    async def main() -> int:
        ticks = 0
        stop = asyncio.Event()

        async def ticker() -> None:  # like a web server answering other requests
            nonlocal ticks
            while not stop.is_set():
                ticks += 1
                await asyncio.sleep(0.01)

        background = asyncio.create_task(ticker())
        assert await result_of("q", answer_options(project, latency=0.3)) == "ok"
        stop.set()
        await background
        return ticks

    assert asyncio.run(main()) >= 10


def test_a_query_runs_under_uvloop(project: Path) -> None:
    """uvloop.run, the same program."""
    try:
        uvloop = importlib.import_module("uvloop")
    except ImportError:
        pytest.skip("uvloop is not installed (pip install uvloop; it is in the test extra)")
    assert uvloop.run(result_of("q", answer_options(project, "from uvloop"))) == "from uvloop"


def test_two_concurrent_queries_run_under_uvloop(project: Path) -> None:
    """uvloop: two queries at once share one guest run, as on the default loop."""
    try:
        uvloop = importlib.import_module("uvloop")
    except ImportError:
        pytest.skip("uvloop is not installed (pip install uvloop; it is in the test extra)")

    async def main() -> list[Any]:
        server, tokens = token_probe()
        await asyncio.gather(
            result_of("a", probing_options(project, server)),
            result_of("b", probing_options(project, server)),
        )
        return tokens

    tokens = uvloop.run(main())
    assert len(tokens) == 2 and tokens[0] is tokens[1]


def test_a_query_runs_under_anyio_on_asyncio(project: Path) -> None:
    """anyio.run (asyncio backend): callbacks written with anyio run on the loop."""
    import anyio

    @tool("nap", "Sleep a little", {})
    async def nap(args: dict[str, Any]) -> dict[str, Any]:
        await anyio.sleep(0.001)
        return {"content": "rested"}

    backend = ScriptedBackend([Step([tool_use("mcp__a__nap", {})]), Step([text("awake")])])
    options = ClaudeAgentOptions(
        cwd=str(project),
        tools=[],
        backend=backend,
        mcp_servers={"a": create_sdk_mcp_server("a", tools=[nap])},
        allowed_tools=["mcp__a__nap"],
    )
    assert anyio.run(result_of, "q", options) == "awake"


def test_under_anyio_on_trio_agents_asyncio_query_is_the_native_one(project: Path) -> None:
    """anyio.run(backend="trio"): the same program runs on Trio itself, no guest run."""
    import anyio

    async def main() -> tuple[str | None, bool]:
        answer = await result_of("q", answer_options(project, "native"))
        return answer, trio.lowlevel.in_trio_task()

    assert anyio.run(main, backend="trio") == ("native", True)


def test_agents_query_under_asyncio_says_to_import_it_from_agents_asyncio(
    project: Path,
) -> None:
    """The Trio query() under asyncio: a RuntimeError pointing at agents.asyncio."""

    async def main() -> None:
        async for _ in agents.query(prompt="q", options=answer_options(project)):
            pass

    with pytest.raises(
        RuntimeError,
        match=r"^agents\.query\(\) must run inside Trio \(trio\.run\); from asyncio .*"
        r"'from agents\.asyncio import query'$",
    ):
        asyncio.run(main())


def test_agents_client_under_asyncio_says_to_import_it_from_agents_asyncio(
    project: Path,
) -> None:
    async def main() -> None:
        async with agents.AgentClient(answer_options(project)):
            pass

    with pytest.raises(RuntimeError, match=r"'from agents\.asyncio import AgentClient'$"):
        asyncio.run(main())


def test_agents_asyncio_exports_its_all_each_once_none_private() -> None:
    """agents.asyncio: __all__ sorted, each name once, each defined, none private; it has every
    public name of agents and of its types module."""
    for module in (agents.asyncio, agents.asyncio.types):
        names = module.__all__
        assert names == sorted(names) and len(names) == len(set(names))
        for name in names:
            assert not name.startswith("_") and hasattr(module, name), name
    assert set(agents.__all__) <= set(agents.asyncio.__all__)
    assert set(agents.asyncio.types.__all__) <= set(agents.asyncio.__all__)


def test_the_sdk_names_are_the_trio_agents_objects() -> None:
    """ClaudeAgentOptions is AgentOptions everywhere; ClaudeSDKClient is each side's client."""
    assert agents.ClaudeAgentOptions is agents.AgentOptions
    assert agents.asyncio.ClaudeAgentOptions is agents.AgentOptions
    assert agents.asyncio.types.ClaudeAgentOptions is agents.AgentOptions
    assert agents.ClaudeSDKClient is agents.AgentClient
    assert agents.asyncio.ClaudeSDKClient is agents.asyncio.AgentClient
    assert agents.asyncio.HookMatcher is agents.HookMatcher
    assert agents.asyncio.types.TextBlock is agents.TextBlock


def test_run_in_trio_returns_a_trio_functions_value_and_raises_its_exception() -> None:
    """run_in_trio: the value of a Trio function; its exception as the same object."""
    raised = KeyError("missing")

    async def trio_work(x: int) -> int:
        await trio.sleep(0.001)  # Trio code, awaited from asyncio
        return x * 2

    async def trio_failure() -> None:
        await trio.lowlevel.checkpoint()
        raise raised

    async def main() -> int:
        value = await agents.asyncio.run_in_trio(trio_work, 21)
        with pytest.raises(KeyError) as caught:
            await agents.asyncio.run_in_trio(trio_failure)
        assert caught.value is raised
        assert_nothing_left()
        return value

    assert asyncio.run(main()) == 42


def test_cancelling_run_in_trio_cancels_the_trio_function() -> None:
    """asyncio.timeout around run_in_trio: the Trio function sees Cancelled, then TimeoutError."""
    seen: list[str] = []

    async def forever() -> None:
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            seen.append("cancelled")
            raise

    async def main() -> None:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.05):
                await agents.asyncio.run_in_trio(forever)
        assert_nothing_left()

    asyncio.run(main())
    assert seen == ["cancelled"]


def test_a_backend_the_program_made_serves_several_queries_and_closes_with_run_in_trio(
    project: Path,
) -> None:
    """One AnthropicBackend for three queries (each its own guest run): one HTTP connection,
    reused, and closed by run_in_trio(backend.aclose)."""
    from agents.backends import AnthropicBackend

    from .conftest import serving, wait_until_closed

    with serving(lambda request: Step([text("ok")])) as server:  # type: ignore[arg-type]

        async def main() -> list[str | None]:
            backend = AnthropicBackend(api_key="test", base_url=server.base_url)
            options = ClaudeAgentOptions(cwd=str(project), tools=[], backend=backend)
            answers = [await result_of(p, options) for p in ("a", "b", "c")]
            await agents.asyncio.run_in_trio(backend.aclose)
            return answers

        assert asyncio.run(main()) == ["ok", "ok", "ok"]
        assert server.connections_opened == 1
        assert wait_until_closed(server) == 0


def test_list_sessions_and_get_session_messages_are_awaited_from_asyncio(project: Path) -> None:
    """The session-listing functions of agents.asyncio read what a query recorded."""

    async def main() -> tuple[list[str], int, str]:
        messages = [m async for m in query(prompt="q", options=answer_options(project, "hi"))]
        session_id = next(m for m in messages if isinstance(m, ResultMessage)).session_id
        listed = await agents.asyncio.list_sessions(cwd=project)
        recorded = await agents.asyncio.get_session_messages(session_id, cwd=project)
        assert_nothing_left()
        return [s.session_id for s in listed], len(recorded), session_id

    listed, recorded, session_id = asyncio.run(main())
    assert listed == [session_id]
    assert recorded >= 2
