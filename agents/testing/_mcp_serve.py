"""The process behind :mod:`agents.testing.mcp_servers` (``python -m agents.testing._mcp_serve``).

Kept apart from the helpers so that importing them never imports the ``mcp`` package.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from .mcp_servers import BEHAVIOURS

_MODULE = "agents.testing._mcp_serve"


# -- the well-behaved server (the mcp package's server API) ----------------------------------------


def _build_server(name: str) -> Any:
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    server = MCPServer(name, version="1.0.0", log_level="ERROR")
    read_only = ToolAnnotations(read_only_hint=True)
    # structured_output=False: text results only, no output schema for either side to validate

    @server.tool(
        description="Return the text unchanged.", annotations=read_only, structured_output=False
    )
    def echo(text: str) -> str:
        return text

    @server.tool(description="Add two numbers.", structured_output=False)
    def add(a: float, b: float) -> str:
        return str(a + b)

    @server.tool(
        description="Sleep for some seconds, then answer.",
        annotations=read_only,
        structured_output=False,
    )
    async def sleep(seconds: float) -> str:
        import anyio

        await anyio.sleep(seconds)
        return f"slept {seconds}"

    @server.tool(
        description="Return that many characters.", annotations=read_only, structured_output=False
    )
    def big(chars: int) -> str:
        return "x" * chars

    @server.tool(description="Fail with a message.", structured_output=False)
    def fail(message: str) -> str:
        from mcp.server.mcpserver.exceptions import ToolError

        raise ToolError(message)

    @server.tool(
        description="The server process's pid.", annotations=read_only, structured_output=False
    )
    def pid() -> str:
        return str(os.getpid())

    return server


def _serve_stdio(name: str) -> None:
    import anyio

    server = _build_server(name)
    anyio.run(server.run_stdio_async)


def _serve_http(name: str, transport: str) -> None:
    import socket

    import anyio
    import uvicorn

    server = _build_server(name)
    app = server.streamable_http_app() if transport == "http" else server.sse_app()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="error", lifespan="on")
    uv = uvicorn.Server(config)

    async def main() -> None:
        async def announce() -> None:
            while not uv.started:  # noqa: ASYNC110 - uvicorn offers a flag, not an event
                await anyio.sleep(0.01)
            print(f"PORT {port}", flush=True)

        async with anyio.create_task_group() as tg:
            tg.start_soon(announce)
            await uv.serve(sockets=[sock])

    anyio.run(main)


# -- misbehaving servers (plain JSON-RPC, no SDK) ------------------------------------------------


def _reply(message_id: Any, result: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message_id, "result": result}) + "\n")
    sys.stdout.flush()


def _initialize_result(request: dict[str, Any], name: str) -> dict[str, Any]:
    version = (request.get("params") or {}).get("protocolVersion", "2025-06-18")
    return {
        "protocolVersion": version,
        "capabilities": {"tools": {}},
        "serverInfo": {"name": name, "version": "1.0.0"},
    }


def _serve_misbehaving(behaviour: str, name: str) -> None:
    initialized = False
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError:
            continue
        if "id" not in request:
            continue  # a notification
        if behaviour == "bad-json":
            sys.stdout.write("this is not json {\n")
            sys.stdout.flush()
        elif behaviour == "hang-on-initialize":
            continue
        elif behaviour == "exit-after-initialize":
            if initialized:
                os._exit(3)
            if request.get("method") == "initialize":
                _reply(request["id"], _initialize_result(request, name))
                initialized = True
    # stdin closed: the client is done with us


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog=f"python -m {_MODULE}")
    parser.add_argument("transport", choices=["stdio", "http", "sse"], default="stdio", nargs="?")
    parser.add_argument("--behaviour", choices=BEHAVIOURS, default="ok")
    parser.add_argument("--name", default="test")
    args = parser.parse_args(argv)
    if args.transport == "stdio":
        if args.behaviour == "ok":
            _serve_stdio(args.name)
        else:
            _serve_misbehaving(args.behaviour, args.name)
    else:
        _serve_http(args.name, args.transport)


if __name__ == "__main__":
    main()
