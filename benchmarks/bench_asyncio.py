"""The cost of running sessions from asyncio (``agents.asyncio``, Trio in guest mode) against the
same sessions under ``trio.run`` (``agents``), measured in one run, side by side.

Each JSON line is one case, with the asyncio figure and its native Trio control::

    python benchmarks/bench_asyncio.py            # the full sizes
    python benchmarks/bench_asyncio.py --quick    # tiny sizes (the smoke test)

Cases (medians over ``rounds`` rounds, the two paths alternating round by round; transcripts
in memory, so that the disk's moods stay out of the figures):

* ``sequential_query``: one single-shot query at a time (``ScriptedBackend``, one text answer).
  On asyncio each query is the loop's only session, so it starts and ends a guest run: this is
  the worst case.
* ``concurrent_queries``: ``n`` queries at once on one loop (``asyncio.gather`` / a nursery);
  the figure is the wall time divided by ``n``.
* ``tool_calls``: one query whose model asks for ``n`` calls of an in-process tool, one per turn;
  on asyncio each handler call is an asyncio task awaited by the Trio session. Per call.
* ``http_query``: a query against ``FakeAnthropicServer`` (in a process of its own, over
  127.0.0.1; in a thread with ``--quick``) through the real ``anthropic`` client, one
  ``AnthropicBackend`` per round (its HTTP connection reused by the round's queries).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import trio

import agents
import agents.asyncio
from agents import AgentOptions, create_sdk_mcp_server, tool
from agents.backends import AnthropicBackend
from agents.sessions import InMemorySessionStore
from agents.testing import FakeAnthropicServer, Script, ScriptedBackend, Step, text, tool_use


def emit(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def answer_options() -> AgentOptions:
    backend = ScriptedBackend([Step([text("ok")])])
    return AgentOptions(tools=[], backend=backend, session_store=InMemorySessionStore())


def tool_options(calls: int, sleep: Callable[[float], Awaitable[None]]) -> AgentOptions:
    @tool("ping", "Ping", {})
    async def ping(args: dict[str, Any]) -> dict[str, Any]:
        await sleep(0)  # the handler awaits its own event loop once
        return {"content": "pong"}

    steps = [Step([tool_use("mcp__b__ping", {})]) for _ in range(calls)]
    return AgentOptions(
        tools=[],
        backend=ScriptedBackend([*steps, Step([text("done")])]),
        mcp_servers={"b": create_sdk_mcp_server("b", tools=[ping])},
        allowed_tools=["mcp__b__ping"],
        session_store=InMemorySessionStore(),
    )


def http_options(backend: AnthropicBackend) -> AgentOptions:
    return AgentOptions(tools=[], backend=backend, session_store=InMemorySessionStore())


async def drain(query: Any, options: AgentOptions) -> None:
    async for _ in query(prompt="go", options=options):
        pass


# -- one round of each case, on each path: wall seconds -------------------------------------------
async def trio_sequential(n: int) -> float:
    started = time.perf_counter()
    for _ in range(n):
        await drain(agents.query, answer_options())
    return time.perf_counter() - started


async def asyncio_sequential(n: int) -> float:
    started = time.perf_counter()
    for _ in range(n):
        await drain(agents.asyncio.query, answer_options())
    return time.perf_counter() - started


async def trio_concurrent(n: int) -> float:
    started = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for _ in range(n):
            nursery.start_soon(drain, agents.query, answer_options())
    return time.perf_counter() - started


async def asyncio_concurrent(n: int) -> float:
    started = time.perf_counter()
    await asyncio.gather(*(drain(agents.asyncio.query, answer_options()) for _ in range(n)))
    return time.perf_counter() - started


async def trio_tools(n: int) -> float:
    options = tool_options(n, trio.sleep)
    started = time.perf_counter()
    await drain(agents.query, options)
    return time.perf_counter() - started


async def asyncio_tools(n: int) -> float:
    options = tool_options(n, asyncio.sleep)
    started = time.perf_counter()
    await drain(agents.asyncio.query, options)
    return time.perf_counter() - started


async def trio_http(n: int) -> float:
    async with AnthropicBackend() as backend:  # one client: its connection is reused
        started = time.perf_counter()
        for _ in range(n):
            await drain(agents.query, http_options(backend))
        return time.perf_counter() - started


async def asyncio_http(n: int) -> float:
    backend = AnthropicBackend()
    try:
        started = time.perf_counter()
        for _ in range(n):
            await drain(agents.asyncio.query, http_options(backend))
        return time.perf_counter() - started
    finally:
        await agents.asyncio.run_in_trio(backend.aclose)


def measure(
    case: str,
    n: int,
    rounds: int,
    trio_round: Callable[[int], Awaitable[float]],
    asyncio_round: Callable[[int], Awaitable[float]],
) -> None:
    """Alternate the two paths ``rounds`` times (after one warm-up each); one line of medians."""
    trio.run(trio_round, min(n, 2))
    asyncio.run(asyncio_round(min(n, 2)))  # type: ignore[arg-type]
    trio_times: list[float] = []
    asyncio_times: list[float] = []
    for _ in range(rounds):
        trio_times.append(trio.run(trio_round, n) / n)
        asyncio_times.append(asyncio.run(asyncio_round(n)) / n)  # type: ignore[arg-type]
    trio_us = statistics.median(trio_times) * 1e6
    asyncio_us = statistics.median(asyncio_times) * 1e6
    emit(
        bench="asyncio_overhead",
        case=case,
        n=n,
        rounds=rounds,
        asyncio_us=round(asyncio_us, 1),
        trio_us=round(trio_us, 1),
        overhead_us=round(asyncio_us - trio_us, 1),
        ratio=round(asyncio_us / trio_us, 2),
    )


@contextlib.contextmanager
def serving_thread() -> Iterator[str]:
    """The fake server under its own ``trio.run`` in a thread (quick runs: starts at once)."""
    server = FakeAnthropicServer(lambda request: Step([text("ok")]))
    ready = threading.Event()
    state: dict[str, Any] = {}

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            state["token"] = trio.lowlevel.current_trio_token()
            state["cancel"] = nursery.cancel_scope.cancel
            await nursery.start(server.serve)
            ready.set()

    thread = threading.Thread(target=trio.run, args=(main,), daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield server.base_url
    finally:
        trio.from_thread.run_sync(state["cancel"], trio_token=state["token"])
        thread.join(10)


@contextlib.contextmanager
def serving_subprocess(steps: int) -> Iterator[str]:
    """``python -m agents.testing.fake_api`` in another process, as a remote API would be (a
    server thread in this process would compete with the client for the GIL); its base URL."""
    with tempfile.NamedTemporaryFile("wb", suffix=".json", delete=False) as f:
        f.write(Script({"main": [Step([text("ok")])] * steps}).to_json())
    child = subprocess.Popen(
        [sys.executable, "-m", "agents.testing.fake_api", "--script", f.name],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        yield child.stdout.readline().strip()
    finally:
        child.terminate()
        child.wait(10)
        os.unlink(f.name)


def run(quick: bool) -> None:
    rounds = 1 if quick else 7
    size = 2 if quick else 40
    measure("sequential_query", size, rounds, trio_sequential, asyncio_sequential)
    measure("concurrent_queries", size * 5, rounds, trio_concurrent, asyncio_concurrent)
    measure("tool_calls", size * 2, rounds, trio_tools, asyncio_tools)
    server = serving_thread() if quick else serving_subprocess(steps=2 * (2 + size * rounds))
    with server as base_url:
        os.environ["ANTHROPIC_BASE_URL"] = base_url
        os.environ["ANTHROPIC_API_KEY"] = "bench"
        measure("http_query", size, rounds, trio_http, asyncio_http)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (the smoke test)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data:  # the sessions' transcripts stay in here
        os.environ["TRIO_AGENTS_DATA_DIR"] = data
        run(args.quick)


if __name__ == "__main__":
    main()
