"""External MCP servers against real processes: the shipped stdio server and HTTP servers on
127.0.0.1, plus servers that misbehave on purpose. Every test is bounded by a deadline."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from agents.mcp import McpServers, open_mcp_servers
from agents.testing.mcp_servers import open_http_server, stdio_server_config
from agents.tools.base import Tool, ToolContext, ToolOutput

# The mcp package's HTTP transports leave httpx2 async generators to the garbage collector when
# their tasks are cancelled; Trio warns about that. It is theirs, not a leak of ours.
pytestmark = [
    pytest.mark.filterwarnings("ignore:Async generator 'httpx2.:ResourceWarning"),
    pytest.mark.filterwarnings(
        "ignore:Exception ignored in. <async_generator object"
        ":pytest.PytestUnraisableExceptionWarning"
    ),
]

#: Each test's bound: process start-up (the mcp package imports slowly on a busy machine).
BOUND = 90

CTX = ToolContext(cwd="/", agent_id="main", tool_use_id="t1", session_id="s1")


@asynccontextmanager
async def servers(configs: dict[str, Any], **kwargs: Any) -> AsyncIterator[McpServers]:
    kwargs.setdefault("connect_timeout", 60)
    async with open_mcp_servers(configs, **kwargs) as manager:
        yield manager


def tool(manager: McpServers, name: str) -> Tool:
    tools = {t.name: t for t in manager.tools()}
    assert name in tools, f"{name} not in {sorted(tools)}"
    return tools[name]


async def call(manager: McpServers, name: str, args: dict[str, Any]) -> ToolOutput:
    return await tool(manager, name).handler(args, CTX)


def text(output: ToolOutput) -> str:
    if isinstance(output.content, str):
        return output.content
    return "".join(b.get("text", "") for b in output.content)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("transport", ["stdio", "http", "sse"])
async def test_each_transport_connects_lists_and_calls(transport: str) -> None:
    with trio.fail_after(BOUND):
        if transport == "stdio":
            async with servers({"demo": stdio_server_config()}) as manager:
                output = await call(manager, "mcp__demo__echo", {"text": "hello"})
        else:
            async with open_http_server(transport) as config, servers({"demo": config}) as manager:
                output = await call(manager, "mcp__demo__echo", {"text": "hello"})
    assert output == ToolOutput(content=[{"type": "text", "text": "hello"}])


async def test_tools_carry_the_read_only_hint() -> None:
    with trio.fail_after(BOUND):
        async with servers({"demo": stdio_server_config()}) as manager:
            flags = {t.name: t.read_only for t in manager.tools()}
            schema = tool(manager, "mcp__demo__add").input_schema
    assert flags["mcp__demo__echo"] is True
    assert flags["mcp__demo__add"] is False
    assert schema["required"] == ["a", "b"]


async def test_status_reports_connected_with_server_info() -> None:
    with trio.fail_after(BOUND):
        async with servers({"demo": stdio_server_config(name="shipped")}) as manager:
            (status,) = manager.status()
    assert status.to_dict()["status"] == "connected"
    assert status.server_info == {"name": "shipped", "version": "1.0.0"}
    assert "mcp__demo__echo" in status.tools


async def test_tool_error_is_an_error_result_with_the_servers_message() -> None:
    with trio.fail_after(BOUND):
        async with servers({"demo": stdio_server_config()}) as manager:
            output = await call(manager, "mcp__demo__fail", {"message": "disk on fire"})
    assert output.is_error
    assert "disk on fire" in text(output)


async def test_a_slow_server_does_not_hold_back_the_others() -> None:
    configs = {"slow": stdio_server_config("hang-on-initialize"), "demo": stdio_server_config()}
    with trio.fail_after(BOUND):
        async with servers(configs, startup_wait=0) as manager:
            await manager.wait_settled("demo")
            statuses = {s.name: s.status for s in manager.status()}
            output = await call(manager, "mcp__demo__echo", {"text": "ok"})
    assert statuses == {"slow": "pending", "demo": "connected"}
    assert text(output) == "ok"


async def test_startup_wait_leaves_unsettled_servers_pending() -> None:
    with trio.fail_after(BOUND):
        async with servers(
            {"slow": stdio_server_config("hang-on-initialize")}, startup_wait=0.01
        ) as manager:
            (status,) = manager.status()
            output = await tool_free_call(manager)
    assert status.status == "pending"
    assert output.is_error and "'slow' is still connecting" in text(output)


async def tool_free_call(manager: McpServers) -> ToolOutput:
    return await manager.call("slow", "echo", {"text": "x"})


async def test_a_server_that_never_answers_fails_at_the_connect_timeout() -> None:
    with trio.fail_after(BOUND):
        async with servers(
            {"slow": stdio_server_config("hang-on-initialize")}, connect_timeout=3
        ) as manager:
            await manager.wait_settled()
            (status,) = manager.status()
    assert status.status == "failed"
    assert status.error is not None and status.error.startswith(
        "MCP server 'slow' did not connect within 3 s"
    )


async def test_bad_json_fails_the_server_naming_it() -> None:
    with trio.fail_after(BOUND):
        async with servers(
            {"garbled": stdio_server_config("bad-json")}, connect_timeout=3
        ) as manager:
            await manager.wait_settled()
            (status,) = manager.status()
    assert status.status == "failed"
    assert status.error is not None and "'garbled'" in status.error


async def test_exit_after_initialize_fails_naming_the_server() -> None:
    with trio.fail_after(BOUND):
        async with servers({"quitter": stdio_server_config("exit-after-initialize")}) as manager:
            await manager.wait_settled()
            (status,) = manager.status()
    assert status.status == "failed"
    assert status.error is not None and status.error.startswith(
        "MCP server 'quitter' failed while connecting"
    )


async def test_a_missing_command_fails_with_the_os_error() -> None:
    with trio.fail_after(BOUND):
        async with servers({"ghost": {"command": "/nonexistent/mcp-server"}}) as manager:
            (status,) = manager.status()
    assert status.status == "failed"
    assert status.error is not None and "No such file or directory" in status.error


async def test_an_unreachable_http_server_fails_naming_it() -> None:
    with socket_port() as port:
        pass  # the port is free again: nothing listens there
    config = {"type": "http", "url": f"http://127.0.0.1:{port}/mcp"}
    with trio.fail_after(BOUND):
        async with servers({"web": config}, connect_timeout=5) as manager:
            await manager.wait_settled()
            (status,) = manager.status()
    assert status.status == "failed"
    assert status.error is not None and status.error.startswith("MCP server 'web'")


class socket_port:
    def __enter__(self) -> int:
        import socket

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        return int(self.sock.getsockname()[1])

    def __exit__(self, *exc: object) -> None:
        self.sock.close()


async def test_a_server_killed_mid_session_gives_error_results_naming_it() -> None:
    with trio.fail_after(BOUND):
        async with servers({"demo": stdio_server_config()}) as manager:
            pid = int(text(await call(manager, "mcp__demo__pid", {})))
            echo = tool(manager, "mcp__demo__echo")
            os.kill(pid, signal.SIGKILL)
            while manager.status()[0].status == "connected":
                await trio.sleep(0.02)
            output = await echo.handler({"text": "x"}, CTX)
            status = manager.status()[0]
    assert status.status == "failed"
    assert status.error is not None and status.error.startswith(
        "MCP server 'demo' closed the connection"
    )
    assert output.is_error and text(output).startswith("MCP server 'demo' closed the connection")


async def test_a_call_in_flight_when_the_server_dies_ends_with_an_error() -> None:
    with trio.fail_after(BOUND):
        async with servers({"demo": stdio_server_config()}) as manager:
            pid = int(text(await call(manager, "mcp__demo__pid", {})))
            results: list[ToolOutput] = []
            async with trio.open_nursery() as nursery:

                async def slow_call() -> None:
                    results.append(await call(manager, "mcp__demo__sleep", {"seconds": 60}))

                nursery.start_soon(slow_call)
                await trio.sleep(0.5)
                os.kill(pid, signal.SIGKILL)
    (output,) = results
    assert output.is_error and "'demo'" in text(output)


async def test_a_hanging_tool_is_an_error_result_at_the_call_timeout() -> None:
    with trio.fail_after(BOUND):
        async with servers({"demo": stdio_server_config()}, call_timeout=1) as manager:
            output = await call(manager, "mcp__demo__sleep", {"seconds": 60})
            after = await call(manager, "mcp__demo__echo", {"text": "still here"})
    assert output.is_error
    assert (
        text(output)
        == "MCP server 'demo' did not answer tool 'sleep' within 1 s; the call was abandoned"
    )
    assert text(after) == "still here"


async def test_an_http_server_that_dies_gives_error_results_naming_it() -> None:
    with trio.fail_after(BOUND):
        async with (
            open_http_server() as config,
            servers({"web": config}, call_timeout=20) as manager,
        ):
            pid = int(text(await call(manager, "mcp__web__pid", {})))
            os.kill(pid, signal.SIGKILL)
            output = await call(manager, "mcp__web__echo", {"text": "x"})
    assert output.is_error and "'web'" in text(output)


@pytest.mark.parametrize("stdio_transport", ["fast", "mcp"])
@pytest.mark.parametrize("sleep", ["sleep", "sleep_sync"])
async def test_read_only_calls_run_concurrently_on_one_server(
    stdio_transport: str, sleep: str
) -> None:
    """Async and plain tool functions alike: the server runs each request in a task of its
    own (a plain function in a worker thread), on either stdio transport."""
    config = stdio_server_config(stdio_transport=stdio_transport)
    with trio.fail_after(BOUND):
        async with servers({"demo": config}) as manager:
            start = trio.current_time()
            async with trio.open_nursery() as nursery:
                for _ in range(5):
                    nursery.start_soon(call, manager, f"mcp__demo__{sleep}", {"seconds": 1})
            elapsed = trio.current_time() - start
    assert elapsed < 3, f"5 calls of 1 s took {elapsed:.2f} s: they did not overlap"


async def test_large_output_is_capped_with_a_note() -> None:
    with trio.fail_after(BOUND):
        async with servers({"demo": stdio_server_config()}, max_output_tokens=10) as manager:
            output = await call(manager, "mcp__demo__big", {"chars": 100})
    assert isinstance(output.content, list)
    assert output.content[0] == {"type": "text", "text": "x" * 40}
    assert output.content[-1]["text"].startswith(
        "[output truncated: the MCP tool's output is larger than 10 tokens; 60 more characters"
    )


async def test_reconnect_starts_a_new_server_process() -> None:
    with trio.fail_after(BOUND):
        async with servers({"demo": stdio_server_config()}) as manager:
            first = int(text(await call(manager, "mcp__demo__pid", {})))
            status = await manager.reconnect("demo")
            second = int(text(await call(manager, "mcp__demo__pid", {})))
            first_alive = alive(first)
    assert status.status == "connected"
    assert first != second
    assert not first_alive


async def test_a_disabled_server_gives_error_results_until_enabled() -> None:
    with trio.fail_after(BOUND):
        async with servers({"demo": stdio_server_config()}) as manager:
            echo = tool(manager, "mcp__demo__echo")
            off = await manager.toggle("demo", enabled=False)
            disabled = await echo.handler({"text": "x"}, CTX)
            tools_when_off = manager.tools()
            on = await manager.toggle("demo", enabled=True)
            enabled = await echo.handler({"text": "back"}, CTX)
    assert off.status == "disabled"
    assert text(disabled) == "MCP server 'demo' is disabled; tool 'echo' was not called"
    assert tools_when_off == []
    assert on.status == "connected"
    assert text(enabled) == "back"


async def test_unknown_server_name_is_a_value_error() -> None:
    with trio.fail_after(BOUND):
        async with servers({}) as manager:
            with pytest.raises(
                ValueError, match=r"^unknown MCP server 'nope' \(configured: none\)$"
            ):
                await manager.reconnect("nope")


async def test_server_processes_end_with_the_block() -> None:
    with trio.fail_after(BOUND):
        async with servers({"demo": stdio_server_config()}) as manager:
            pid = int(text(await call(manager, "mcp__demo__pid", {})))
    assert not alive(pid)


async def test_server_processes_end_when_the_block_is_cancelled() -> None:
    pids: list[int] = []
    with trio.fail_after(BOUND):
        with trio.CancelScope() as scope:
            async with servers({"demo": stdio_server_config()}) as manager:
                pids.append(int(text(await call(manager, "mcp__demo__pid", {}))))
                scope.cancel()
                await trio.sleep_forever()
    assert scope.cancelled_caught
    assert not alive(pids[0])


async def test_cancelled_while_connecting_leaves_no_process() -> None:
    with trio.fail_after(BOUND):
        with trio.move_on_after(1.0):
            async with servers({"slow": stdio_server_config("hang-on-initialize")}):
                pass
    # the misbehaving server is a child of the process group the transport made; none left
    assert not [p for p in _children() if "hang-on-initialize" in p]


def _children() -> list[str]:
    out = []
    me = str(os.getpid())
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = f.read().rsplit(")", 1)[1].split()[1]
            with open(f"/proc/{entry}/cmdline") as f:
                cmd = f.read().replace("\0", " ")
        except OSError:
            continue
        if ppid == me:
            out.append(cmd)
    return out


async def test_an_error_in_the_block_propagates_unwrapped() -> None:
    with trio.fail_after(BOUND), pytest.raises(KeyError):
        async with servers({}):
            raise KeyError("mine")


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_stdio_server_serves_the_mcp_packages_own_client_in_either_era(
    mode: str,
) -> None:
    """The shipped stdio server answers a handshake-era client (``initialize`` first, served
    by the package's handshake loop) and one of the per-request era (its first request
    carries the protocol version in ``_meta``, served by ``Server.run``, which picks the
    era)."""
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters

    config = stdio_server_config()
    params = StdioServerParameters(command=config["command"], args=config["args"])
    with trio.fail_after(BOUND):
        async with Client(params, mode=mode) as client:  # type: ignore[arg-type]
            result = await client.call_tool("echo", {"text": "hi"})
    assert [getattr(block, "text", None) for block in result.content] == ["hi"]


async def test_a_result_over_the_http_event_limit_is_an_error_naming_it() -> None:
    """Over streamable HTTP the ``mcp`` package reads one event of at most 1 MiB: a result
    larger than that fails the call with the package's reason (it said only that the server
    closed the connection, which it had not), and the connection serves the next call."""
    with trio.fail_after(BOUND):
        async with open_http_server() as config, servers({"demo": config}) as manager:
            output = await call(manager, "mcp__demo__big", {"chars": 2_000_000})
            after = await call(manager, "mcp__demo__echo", {"text": "still here"})
    assert output.is_error
    assert text(output) == (
        "MCP server 'demo' closed the connection during tool 'big': SSE stream failed: "
        "Server-sent event exceeded the 1048576 byte limit."
    )
    assert text(after) == "still here"
