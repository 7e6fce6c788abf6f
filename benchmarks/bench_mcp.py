"""External MCP server benchmarks: the cost of a tool call over stdio and streamable HTTP, and
read-only MCP calls fanned out in one turn.

Prints one JSON line per measurement::

    python benchmarks/bench_mcp.py            # full sizes
    python benchmarks/bench_mcp.py --quick    # tiny sizes (the smoke test)

* ``mcp_call``: ``calls`` sequential ``echo`` calls through the tool object the loop calls, per
  transport: ``inprocess`` (a ``create_sdk_mcp_server`` tool, the control), ``stdio`` (the
  shipped test server as a child process) and ``http`` (the same server over streamable HTTP on
  127.0.0.1). ``us_per_call`` and ``overhead_us`` (minus the in-process control), and the CPU per
  call in this process (``client_cpu_us``) and in the server's (``server_cpu_us``, from ``/proc``);
  stdio against the shipped server on its own transport (``server="fast"``) and on the ``mcp``
  package's ``stdio_server`` (``server="mcp"``).
* ``mcp_fanout``: one ``query()`` turn whose response asks for ``n`` read-only MCP calls of
  ``sleep(seconds)`` on the stdio server, against the same query with one call (the control, in
  the same run): the time from the response that asks for the calls to the last result.
  ``ratio`` = many / one; the scheduler runs read-only calls concurrently, so it stays near 1.
  Per server transport, with the CPU per call of the fanned-out turns in both processes.
* ``mcp_fanout_bare``: the control for it, the same calls made concurrently over the ``mcp``
  package's own ``ClientSession`` in a bare nursery, with no agent runtime.
* ``--callgrind ROUNDS``: ``mcp_server_instructions``, only the shipped stdio server's
  instructions per call over ROUNDS fan-outs of ten (the server under valgrind's callgrind):
  the stable figure of the server's CPU per call.
* ``--trace``: ``mcp_fanout_trace``, each fanned-out turn with, per call, when its request was
  handed to the transport (``queued_ms``) and written (``written_ms``), when the server started
  and ended the tool (``server_start_ms``/``server_end_ms``, from the server's own clock, the
  host's monotonic one) and when the response was read (``answered_ms``), all from the first
  request; then when the response asking for the calls reached the user (``asked_ms``,
  negative: before the first request), how far apart the server started the calls
  (``server_start_spread_ms``), when it ended the last, and when the results reached the user
  (``delivered_ms``); ``first_answer_ms`` and ``last_written_ms`` say whether every request was
  written before the first answer came back.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import time
from typing import Any

import trio

from agents import (
    AgentClient,
    AgentOptions,
    AssistantMessage,
    ToolAnnotations,
    ToolResultBlock,
    UserMessage,
    create_sdk_mcp_server,
    tool,
)
from agents.backends.base import ModelRequest
from agents.mcp import McpServers, open_mcp_servers
from agents.testing.mcp_servers import open_http_server, stdio_server_config
from agents.testing.scripted import ScriptedBackend, Step, text, tool_use
from agents.tools.base import Tool, ToolContext

CTX = ToolContext(cwd="/", agent_id="main", tool_use_id="bench", session_id="bench")


#: ``--trace``: (event, request id, monotonic s) of the stdio transport, and the server's file.
TRACE: list[tuple[str, Any, float]] = []
SERVER_TRACE = f"/tmp/bench_mcp_trace.{os.getpid()}"
#: when the turn's response asking for the calls and the message with their results reached
#: the user (monotonic s)
LOOP_TRACE: dict[str, float] = {}


def emit(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


@tool("echo", "Return the text unchanged.", {"text": str}, ToolAnnotations(readOnlyHint=True))
async def _echo(args: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": args["text"]}]}


async def _time_calls(
    echo: Tool, calls: int, server_pid: int = 0, arguments: dict[str, Any] | None = None
) -> tuple[float, float, float]:
    """(wall µs, this process's CPU µs, the server process's CPU µs) per call: the CPU parts
    are the client's and the server's own costs, the rest is waiting (for the other side, the
    pipe or socket, a core)."""
    args = echo.validate(arguments or {"text": "hello"})
    for _ in range(min(20, calls)):  # warm up: first calls import and connect lazily
        await echo.handler(args, CTX)
    cpu = _Cpu(server_pid)
    start = time.perf_counter()
    with cpu:
        for _ in range(calls):
            await echo.handler(args, CTX)
    wall = (time.perf_counter() - start) / calls * 1e6
    return wall, cpu.client / calls * 1e6, cpu.server / calls * 1e6


def _tool_of(servers: McpServers, name: str) -> Tool:
    return next(t for t in servers.tools() if t.name.endswith(f"__{name}"))


async def _pid_of(servers: McpServers) -> int:
    pid = _tool_of(servers, "pid")
    output = await pid.handler(pid.validate({}), CTX)
    return int(str(output.content[0]["text"]))  # type: ignore[index]


async def bench_calls(calls: int) -> None:
    inprocess = create_sdk_mcp_server("bench", tools=[_echo]).as_tools("bench")[0]
    control, _, _ = await _time_calls(inprocess, calls)
    emit(bench="mcp_call", transport="inprocess", calls=calls, us_per_call=round(control, 1))
    for server in ("fast", "mcp"):
        config = stdio_server_config(stdio_transport=server)
        async with open_mcp_servers({"bench": config}) as servers:
            measured = await _time_calls(_tool_of(servers, "echo"), calls, await _pid_of(servers))
            _report("stdio", calls, control, measured, server=server)
    async with open_http_server() as config, open_mcp_servers({"bench": config}) as servers:
        measured = await _time_calls(_tool_of(servers, "echo"), calls, await _pid_of(servers))
        _report("http", calls, control, measured)


def _report(
    transport: str,
    calls: int,
    control: float,
    measured: tuple[float, float, float],
    server: str | None = None,
) -> None:
    wall, cpu, server_cpu = measured
    emit(
        bench="mcp_call",
        transport=transport,
        **({} if server is None else {"server": server}),
        calls=calls,
        us_per_call=round(wall, 1),
        overhead_us=round(wall - control, 1),
        client_cpu_us=round(cpu, 1),
        server_cpu_us=round(server_cpu, 1),
    )


def _fanout_backend(n: int, seconds: float) -> ScriptedBackend:
    """A prompt "<k>" asks for k read-only calls of ``sleep(seconds)``; their results end it."""

    def respond(request: ModelRequest) -> Step:
        last = request.messages[-1]["content"]
        if last == "pid":
            return Step([tool_use("mcp__bench__pid", {})])
        if isinstance(last, str):
            calls = int(last)
            return Step([tool_use("mcp__bench__sleep", {"seconds": seconds}) for _ in range(calls)])
        return Step([text("done")])

    return ScriptedBackend(respond)


async def _tool_phase(client: AgentClient, calls: int) -> float:
    """Seconds from the response asking for the calls to the last of their results."""
    await client.query(str(calls))
    asked = done = 0.0
    async for message in client.receive_response():
        if isinstance(message, AssistantMessage) and not asked:
            asked = time.perf_counter()
            LOOP_TRACE["asked"] = time.monotonic()
        elif isinstance(message, UserMessage):
            done = time.perf_counter()
            LOOP_TRACE["delivered"] = time.monotonic()
    return done - asked


async def _server_pid(client: AgentClient) -> int:
    """The server process's pid (its ``pid`` tool), to read its CPU time."""
    await client.query("pid")
    found = 0
    async for message in client.receive_response():
        if isinstance(message, UserMessage) and not isinstance(message.content, str):
            for block in message.content:
                if isinstance(block, ToolResultBlock):
                    content = block.content or ""
                    raw = content if isinstance(content, str) else str(content[0]["text"])
                    found = int(raw)
    return found


def _cpu_of(pid: int) -> float:
    """Seconds a process's threads have run so far: the sum of each thread's ``schedstat``
    (Linux ``/proc``, in ns; ``/proc/<pid>/stat`` counts 10 ms ticks, too coarse for the fifty
    calls of a fan-out)."""
    total = 0
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0.0
    for tid in threads:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as stat:
                total += int(stat.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile
    return total / 1e9


class _Cpu:
    """CPU seconds used by this process and by the server over measured phases: the sums, and
    each phase's own (a phase that met a full garbage collection stands out; the median does
    not move with it)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.client = self.server = 0.0
        self.phases: list[tuple[float, float]] = []

    def __enter__(self) -> _Cpu:
        self._client0, self._server0 = time.process_time(), _cpu_of(self.pid)
        return self

    def __exit__(self, *exc: object) -> None:
        client = time.process_time() - self._client0
        server = _cpu_of(self.pid) - self._server0
        self.client += client
        self.server += server
        self.phases.append((client, server))


async def bench_fanout(
    n: int, seconds: float, repeats: int, server: str, trace: bool = False
) -> None:
    """The tool phase of one turn with ``n`` read-only calls, and with one (the control), in
    one session whose server has answered a first call (a warm server, as mid-session)."""
    env = {"AGENTS_MCP_TRACE": SERVER_TRACE} if trace else None
    options = AgentOptions(
        backend=_fanout_backend(n, seconds),
        mcp_servers={"bench": stdio_server_config(env=env, stdio_transport=server)},
        allowed_tools=["mcp__bench"],
        tools=[],
    )
    ones, manys = [], []
    async with AgentClient(options) as client:
        await _tool_phase(client, 1)  # warm-up
        cpu = _Cpu(await _server_pid(client))
        for _ in range(repeats):
            ones.append(await _tool_phase(client, 1))
            _start_trace()
            with cpu:
                manys.append(await _tool_phase(client, n))
            if trace:
                _emit_trace(n)
    one, many = min(ones), min(manys)
    emit(
        bench="mcp_fanout",
        server=server,
        calls=n,
        seconds_each=seconds,
        one_call_s=round(one, 4),
        n_calls_s=round(many, 4),
        ratio=round(many / one, 3),
        **_per_call_cpu(cpu, n),
    )


def _per_call_cpu(cpu: _Cpu, calls: int) -> dict[str, float]:
    """µs of CPU per call in the fanned-out turns, in this process and in the server: the
    median phase's (``calls`` per phase)."""
    clients = sorted(c for c, _ in cpu.phases)
    servers = sorted(s for _, s in cpu.phases)
    middle = len(cpu.phases) // 2
    return {
        "client_cpu_us_per_call": round(clients[middle] / calls * 1e6, 1),
        "server_cpu_us_per_call": round(servers[middle] / calls * 1e6, 1),
    }


async def _bare_phase(n: int, seconds: float, server: str, cpu: _Cpu | None = None) -> float:
    """The control: ``n`` concurrent calls over the ``mcp`` package's own client, no agent."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    config = stdio_server_config(stdio_transport=server)
    params = StdioServerParameters(command=config["command"], args=config["args"])
    with open(os.devnull, "w") as errlog:  # noqa: ASYNC230 - /dev/null does not block
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await session.call_tool("sleep", {"seconds": 0})  # warm, as the agent's server is
            if cpu is not None:
                answer = await session.call_tool("pid", {})
                cpu.pid = int(getattr(answer.content[0], "text", "0"))
            with cpu or contextlib.nullcontext():
                start = time.perf_counter()
                async with trio.open_nursery() as nursery:
                    for _ in range(n):
                        nursery.start_soon(session.call_tool, "sleep", {"seconds": seconds})
                return time.perf_counter() - start


async def bench_bare_fanout(n: int, seconds: float, repeats: int, server: str) -> None:
    cpu = _Cpu(0)
    ones = [await _bare_phase(1, seconds, server) for _ in range(repeats)]
    manys = [await _bare_phase(n, seconds, server, cpu) for _ in range(repeats)]
    emit(
        bench="mcp_fanout_bare",
        server=server,
        calls=n,
        seconds_each=seconds,
        one_call_s=round(min(ones), 4),
        n_calls_s=round(min(manys), 4),
        ratio=round(min(manys) / min(ones), 3),
        **_per_call_cpu(cpu, n),
    )


# -- the trace of one fanned-out turn ------------------------------------------------------------


def _install_trace() -> None:
    """Have every stdio connection note when each request was queued and written and its
    response read (``written`` is when the pipe took the request; the server's start says when
    it was read there)."""
    import agents.mcp._connection as connection  # the benchmark reaches in, the package does not

    def note(event: str, key: Any) -> None:
        TRACE.append((event, key, time.monotonic()))

    connection.TRACER = note


def _start_trace() -> None:
    TRACE.clear()
    with contextlib_suppress():
        os.remove(SERVER_TRACE)


def contextlib_suppress() -> Any:
    import contextlib

    return contextlib.suppress(FileNotFoundError)


def _emit_trace(n: int) -> None:
    """One line per call of the last fanned-out turn, times in ms from its first request."""
    calls: dict[Any, dict[str, float]] = {}
    for event, key, at in TRACE:
        if key is not None:
            calls.setdefault(key, {}).setdefault(event, at)
    calls = {k: v for k, v in calls.items() if "written" in v}
    if not calls:
        return
    origin = min(c["queued"] for c in calls.values())
    server: dict[str, list[float]] = {"start": [], "end": []}
    with contextlib_suppress(), open(SERVER_TRACE) as lines:
        for line in lines:
            event, stamp = line.split()
            server[event].append(float(stamp))
    starts, ends = sorted(server["start"]), sorted(server["end"])

    def ms(at: float) -> float:
        return round((at - origin) * 1000, 2)

    for i, (key, stamps) in enumerate(sorted(calls.items(), key=lambda kv: kv[1]["queued"])):
        emit(
            bench="mcp_fanout_trace",
            request=key,
            queued_ms=ms(stamps["queued"]),
            written_ms=ms(stamps["written"]),
            server_start_ms=ms(starts[i]) if i < len(starts) else None,
            server_end_ms=ms(ends[i]) if i < len(ends) else None,
            answered_ms=ms(stamps["answered"]) if "answered" in stamps else None,
        )
    emit(
        bench="mcp_fanout_trace",
        calls=n,
        asked_ms=ms(LOOP_TRACE["asked"]),
        server_start_spread_ms=round((starts[-1] - starts[0]) * 1000, 2) if starts else None,
        last_server_end_ms=ms(ends[-1]) if ends else None,
        delivered_ms=ms(LOOP_TRACE["delivered"]),
        last_written_ms=max(ms(c["written"]) for c in calls.values()),
        first_answer_ms=min(ms(c["answered"]) for c in calls.values() if "answered" in c),
        last_answer_ms=max(ms(c["answered"]) for c in calls.values() if "answered" in c),
    )


async def bench_callgrind(rounds: int) -> None:
    """``--callgrind``: the shipped stdio server's instructions per call over ``rounds``
    fan-outs of ten ``sleep(0)`` calls from the stdio client, the server run under valgrind's
    callgrind with instrumentation on only around them: the figure that does not move with the
    machine's load (the server is slow under valgrind, so the connect timeout is long)."""
    import glob
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "callgrind.out")
        config = stdio_server_config()
        config["args"] = [
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={out}",
            config["command"],
            *config["args"],
        ]
        config["command"] = "valgrind"
        config["env"] = {"PYTHONHASHSEED": "0"}
        async with open_mcp_servers({"bench": config}, connect_timeout=600) as servers:
            pid = await _pid_of(servers)
            sleep = _tool_of(servers, "sleep")
            args = sleep.validate({"seconds": 0})

            async def fan_out() -> None:
                async with trio.open_nursery() as nursery:
                    for _ in range(10):
                        nursery.start_soon(sleep.handler, args, CTX)

            async def control(*command: str) -> None:
                command = ("callgrind_control", *command, str(pid))
                await trio.run_process(command, capture_stdout=True, capture_stderr=True)

            await fan_out()
            await control("-i", "on")
            await fan_out()  # the first instrumented calls translate code afresh
            await control("-z")
            for _ in range(rounds):
                await fan_out()
            await control("-d")
            await control("-i", "off")
        # the dump asked for (``<out>.1``), not the one at exit (counts since the zeroing lost)
        counts = [_callgrind_total(path) for path in glob.glob(out + ".*")]
    total = max(counts, default=0)
    emit(
        bench="mcp_server_instructions",
        calls=rounds * 10,
        instructions_per_call=round(total / (rounds * 10)),
    )


def _callgrind_total(path: str) -> int:
    with open(path) as dump:
        for line in dump:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    return 0


async def main(quick: bool, trace: bool, only: str | None, callgrind: int = 0) -> None:
    if callgrind:
        await bench_callgrind(callgrind)
        return
    if trace:
        _install_trace()
    n, repeats = (3, 1) if quick else (10, 5)
    if only in (None, "calls"):
        await bench_calls(calls=20 if quick else 500)
    if only in (None, "fanout"):
        # the runtime and the bare control, against the shipped server on its fast transport and
        # on the mcp package's, alternated in the same run
        for _ in range(1 if quick else 3):
            for server in ("fast", "mcp"):
                await bench_fanout(n=n, seconds=0.1, repeats=repeats, server=server, trace=trace)
                await bench_bare_fanout(n=n, seconds=0.1, repeats=repeats, server=server)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--trace", action="store_true", help="stamp each call of the fan-out")
    parser.add_argument("--only", choices=["calls", "fanout"])
    parser.add_argument(
        "--callgrind",
        type=int,
        metavar="ROUNDS",
        default=0,
        help="only count the shipped stdio server's instructions per call (valgrind)",
    )
    args = parser.parse_args()
    trio.run(main, args.quick, args.trace, args.only, args.callgrind)
