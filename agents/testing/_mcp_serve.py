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


_TRACE_FILE = os.environ.get("AGENTS_MCP_TRACE")


def _trace(event: str) -> None:
    """With ``AGENTS_MCP_TRACE=<file>``: append ``<event> <monotonic s>`` (the benchmark's trace
    of when the server started and ended each call; the clock is the host's, as the client's)."""
    path = _TRACE_FILE
    if path:
        import time

        with open(path, "a") as out:
            out.write(f"{event} {time.monotonic():.6f}\n")


# -- the well-behaved server (the mcp package's server API) ----------------------------------------
#
# Built on the package's low-level ``Server`` (``on_list_tools`` / ``on_call_tool``) rather than
# ``MCPServer``: a call costs what the protocol needs — the package's request checks and result
# serialisation — and not a pydantic model of each tool's arguments, the conversion of each
# return value, or an OpenTelemetry span per message (dropped from ``server.middleware``). The
# tool list is built once. A fan-out of ten calls pays this CPU ten times on the critical path.


def _echo(args: dict[str, Any]) -> str:
    return str(args["text"])


def _add(args: dict[str, Any]) -> str:
    return str(float(args["a"]) + float(args["b"]))


async def _sleep(args: dict[str, Any]) -> str:
    import anyio

    seconds = args["seconds"]
    _trace("start")
    await anyio.sleep(seconds)
    _trace("end")
    return f"slept {seconds}"


def _sleep_sync(args: dict[str, Any]) -> str:
    import time

    time.sleep(args["seconds"])  # run in a worker thread, as the mcp package runs a plain tool
    return f"slept {args['seconds']}"


def _upper(args: dict[str, Any]) -> str:
    return str(args["text"]).upper()


def _big(args: dict[str, Any]) -> str:
    return "x" * int(args["chars"])


class _ToolFailed(Exception):
    """A tool's own failure: an error result with its message."""


def _fail(args: dict[str, Any]) -> str:
    raise _ToolFailed(str(args["message"]))


def _pid(args: dict[str, Any]) -> str:
    return str(os.getpid())


#: name → (description, {argument: JSON type}, read-only, the function, runs in a worker thread)
_TOOLS: dict[str, tuple[str, dict[str, str], bool, Any, bool]] = {
    "echo": ("Return the text unchanged.", {"text": "string"}, True, _echo, False),
    "add": ("Add two numbers.", {"a": "number", "b": "number"}, False, _add, False),
    "sleep": ("Sleep for some seconds, then answer.", {"seconds": "number"}, True, _sleep, False),
    "sleep_sync": (
        "Sleep for some seconds in a plain function, then answer.",
        {"seconds": "number"},
        True,
        _sleep_sync,
        True,
    ),
    "big": ("Return that many characters.", {"chars": "integer"}, True, _big, False),
    "fail": ("Fail with a message.", {"message": "string"}, False, _fail, False),
    "pid": ("The server process's pid.", {}, True, _pid, False),
    # MCP allows a dot in a name, the Messages API does not: the client makes it fit
    "text.upper": ("Return the text in upper case.", {"text": "string"}, True, _upper, False),
}

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
}


def _argument_error(name: str, wanted: dict[str, str], args: dict[str, Any]) -> str | None:
    """Why ``args`` do not fit the tool's schema (missing, unknown or mistyped), or None."""
    for arg, kind in wanted.items():
        if arg not in args:
            return f"tool {name!r}: missing argument {arg!r} ({kind})"
        value = args[arg]
        if isinstance(value, bool) or not isinstance(value, _JSON_TYPES[kind]):
            return f"tool {name!r}: argument {arg!r} must be a {kind}, got {value!r}"
    unknown = sorted(set(args) - set(wanted))
    if unknown:
        return f"tool {name!r}: unknown argument {unknown[0]!r}"
    return None


def _build_server(name: str) -> Any:
    from mcp.server.lowlevel import Server
    from mcp.types import CallToolResult, ListToolsResult, TextContent, Tool, ToolAnnotations

    listing = ListToolsResult(
        tools=[
            Tool(
                name=tool,
                description=description,
                input_schema={
                    "type": "object",
                    "properties": {arg: {"type": kind} for arg, kind in wanted.items()},
                    "required": list(wanted),
                },
                annotations=ToolAnnotations(read_only_hint=True) if read_only else None,
            )
            for tool, (description, wanted, read_only, _, _) in _TOOLS.items()
        ]
    )

    async def list_tools(ctx: Any, params: Any) -> ListToolsResult:
        return listing

    def answer(text: str, is_error: bool = False) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=text)], is_error=is_error)

    async def call_tool(ctx: Any, params: Any) -> CallToolResult:
        import anyio

        entry = _TOOLS.get(params.name)
        if entry is None:
            return answer(f"unknown tool {params.name!r} (known: {', '.join(_TOOLS)})", True)
        _, wanted, _, function, threaded = entry
        args = params.arguments or {}
        problem = _argument_error(params.name, wanted, args)
        if problem is not None:
            return answer(problem, True)
        try:
            if threaded:
                out = await anyio.to_thread.run_sync(function, args)
            else:
                out = function(args)
                if not isinstance(out, str):
                    out = await out
        except _ToolFailed as exc:
            return answer(str(exc), True)
        return answer(out)

    server = Server(name, version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)
    server.middleware.clear()  # no OpenTelemetry span per message (no exporter in a test)
    return server


def _serve_stdio(name: str, transport: str = "fast") -> None:
    """Serve over stdin/stdout: through :func:`agents.mcp.jsonrpc_line_streams` (the
    default), or with ``--stdio-transport mcp`` through the ``mcp`` package's ``stdio_server``
    (worker threads reading a line and writing and flushing a message at a time: a fan-out's
    answers leave one by one), kept as the benchmark's control.

    The default runs on anyio's asyncio backend, on uvloop when it is installed: the package's
    request path (a task, cancel scopes and events per request) costs less there than on Trio
    through anyio's wrappers — callgrind, instructions per fanned-out call: Trio 622k, asyncio
    543k, uvloop 512k. The server is a process of its own; the client side stays on Trio."""
    import anyio

    server = _build_server(name)
    if transport == "mcp":
        anyio.run(_run_package_stdio, server)
        return
    anyio.run(_run_fast_stdio, server, backend="asyncio", backend_options=_asyncio_options())


def _asyncio_options() -> dict[str, Any]:
    """uvloop's event loop when it is installed (it is optional, not a dependency)."""
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return {}
    return {"use_uvloop": True}


async def _run_package_stdio(server: Any) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


async def _run_fast_stdio(server: Any) -> None:
    """The server on non-blocking pipes: every complete request of a read is dispatched at
    once (the lowlevel server runs each in a task of its own, a sync tool in a worker thread),
    and every answer queued is written in one write. Stdin and stdout are moved to private
    descriptors, fd 0 to the null device and fd 1 to stderr, so that a tool's stray print or a
    child process never corrupts the wire (as the ``mcp`` package's transport does)."""
    from agents.mcp import jsonrpc_line_streams

    stdin_fd, stdout_fd = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    receive, send = _FdBytes(stdin_fd), _FdBytes(stdout_fd)
    try:
        async with jsonrpc_line_streams(receive, send) as (read, write):
            await _serve_lines(server, read, write)
    finally:
        os.close(stdin_fd)
        os.close(stdout_fd)


class _FdBytes:
    """A pipe's descriptor, non-blocking, read and written on whichever event loop anyio runs
    (Trio's ``FdStream`` is Trio's only)."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self.fd = fd

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        import anyio

        while True:
            try:
                data = os.read(self.fd, max_bytes or 65536)
            except BlockingIOError:
                await anyio.wait_readable(self.fd)
                continue
            await anyio.lowlevel.checkpoint()  # a reader of a busy pipe lets the others run
            return data

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        import anyio

        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.fd, view) :]
            except BlockingIOError:
                await anyio.wait_writable(self.fd)


async def _serve_lines(server: Any, read: Any, write: Any) -> None:
    """A client that opens with the ``initialize`` handshake (every client of this era) is
    served by the package's handshake-era loop (``serve_loop``) directly; any other one by
    ``Server.run``, which reads the first request to pick the era and then relays every
    message to that era's loop through one more stream and task: a fifth of the server's CPU
    per call (callgrind: 799k instructions per fanned-out call through ``Server.run``, 611k
    here)."""
    from mcp.server.runner import serve_loop
    from mcp.types import JSONRPCRequest

    first = await read.peek()
    message = getattr(first, "message", None)
    if not (isinstance(message, JSONRPCRequest) and message.method == "initialize"):
        await server.run(read, write, server.create_initialization_options())
        return
    async with server.lifespan(server) as state:
        try:
            await serve_loop(
                server,
                read,
                write,
                lifespan_state=state,
                init_options=server.create_initialization_options(),
            )
        finally:
            await write.aclose()  # as Server.run does: the connection's end is the answers' end


def _serve_http(name: str, transport: str) -> None:
    import socket

    import anyio
    import uvicorn

    server = _build_server(name)
    if transport == "sse":
        app = _sse_app(server)
    else:  # (http-json: each answer a JSON response, not an event stream)
        app = server.streamable_http_app(json_response=transport == "http-json")
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


def _sse_app(server: Any) -> Any:
    """The server over the older SSE transport (the ``mcp`` package's ``SseServerTransport``):
    ``GET /sse`` opens the event stream, ``POST /messages/`` carries the requests."""
    from mcp.server.sse import SseServerTransport
    from starlette.applications import Starlette
    from starlette.responses import Response
    from starlette.routing import Mount, Route

    sse = SseServerTransport("/messages/")

    async def handle_sse(request: Any) -> Response:
        async with sse.connect_sse(request.scope, request.receive, request._send) as streams:
            await server.run(streams[0], streams[1], server.create_initialization_options())
        return Response()

    routes = [
        Route("/sse", endpoint=handle_sse, methods=["GET"]),
        Mount("/messages/", app=sse.handle_post_message),
    ]
    return Starlette(routes=routes)


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


def _notify(method: str) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "method": method}) + "\n")
    sys.stdout.flush()


def _tool_entry(tool: str, description: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    return {
        "name": tool,
        "description": description,
        "inputSchema": schema,
        "annotations": {"readOnlyHint": True},
    }


def _serve_dynamic(name: str) -> None:
    """``dynamic``: a server whose tool list changes, announced with
    ``notifications/tools/list_changed``. Tools: ``grow{text}`` adds a tool named ``text``;
    ``retitle{text}`` gives ``grow`` the description ``text``; ``spam{text}`` sends the
    notification ten times with the list unchanged; ``echo{text}``; every added tool echoes."""
    tools = {
        "grow": "Add a tool named by the text.",
        "retitle": "Change grow's description.",
        "spam": "Announce a change that is none.",
        "echo": "Return the text.",
    }
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError:
            continue
        method, message_id = request.get("method"), request.get("id")
        if message_id is None:
            continue
        params = request.get("params") or {}
        if method == "initialize":
            result = _initialize_result(request, name)
            result["capabilities"] = {"tools": {"listChanged": True}}
            _reply(message_id, result)
        elif method == "tools/list":
            _reply(message_id, {"tools": [_tool_entry(t, d) for t, d in tools.items()]})
        elif method == "tools/call":
            tool, text = params.get("name"), (params.get("arguments") or {}).get("text", "")
            if tool == "grow":
                tools[text] = f"Added by grow: {text}."
                _notify("notifications/tools/list_changed")
            elif tool == "retitle":
                tools["grow"] = text
                _notify("notifications/tools/list_changed")
            elif tool == "spam":
                for _ in range(10):
                    _notify("notifications/tools/list_changed")
            _reply(message_id, {"content": [{"type": "text", "text": f"{tool}: {text}"}]})
        else:
            _reply(message_id, {})


def _serve_misbehaving(behaviour: str, name: str) -> None:
    if behaviour == "dynamic":
        _serve_dynamic(name)
        return
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
    parser.add_argument(
        "transport", choices=["stdio", "http", "http-json", "sse"], default="stdio", nargs="?"
    )
    parser.add_argument("--behaviour", choices=BEHAVIOURS, default="ok")
    parser.add_argument("--name", default="test")
    parser.add_argument("--stdio-transport", choices=["fast", "mcp"], default="fast")
    args = parser.parse_args(argv)
    if args.transport == "stdio":
        if args.behaviour == "ok":
            _serve_stdio(args.name, args.stdio_transport)
        else:
            _serve_misbehaving(args.behaviour, args.name)
    else:
        _serve_http(args.name, args.transport)


if __name__ == "__main__":
    main()
