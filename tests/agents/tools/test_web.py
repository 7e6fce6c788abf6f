"""WebFetch against a local server (conversion, redirects, limits, cache, prompt answering) and
WebSearch's backend requirement."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

import attrs
import pytest
import trio

from agents.backends.base import (
    BackendEvent,
    ContentBlockDelta,
    ContentBlockStart,
    ContentBlockStop,
    MessageStart,
    MessageStop,
    ModelRequest,
)
from agents.tools import bodies, web
from agents.tools.base import ToolContext, truncate
from agents.tools.web import web_fetch_tool, web_search_tool

from .toolkit import call, printed_within_a_deadline, text_of

FETCH, SEARCH = web_fetch_tool(), web_search_tool()

PAGE = (
    b"<html><body><h1>Title</h1><p>Hello <a href='/x'>world</a></p>"
    b"<script>x()</script></body></html>"
)


@attrs.define
class Server:
    port: int = 0
    hits: dict[str, int] = attrs.Factory(dict)
    #: HTML pages a test adds, by path
    pages: dict[str, bytes] = attrs.Factory(dict)
    #: the content type of a page a test added, when not text/html
    page_types: dict[str, str] = attrs.Factory(dict)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def route(self, path: str) -> tuple[str, list[tuple[str, str]], bytes]:
        if path in self.pages:
            ctype = self.page_types.get(path, "text/html")
            return "200 OK", [("content-type", ctype)], self.pages[path]
        if path == "/page":
            return "200 OK", [("content-type", "text/html; charset=utf-8")], PAGE
        if path == "/text":
            return "200 OK", [("content-type", "text/plain")], b"plain text body"
        if path == "/redirect":
            return "302 Found", [("location", "/page")], b""
        if path == "/offsite":
            return "301 Moved", [("location", "http://elsewhere.example/new")], b""
        if path == "/other-port":
            return "302 Found", [("location", f"http://127.0.0.1:{self.port + 1}/page")], b""
        if path == "/other-scheme":
            return "302 Found", [("location", f"https://127.0.0.1:{self.port}/page")], b""
        if path == "/loop":
            return "302 Found", [("location", "/loop")], b""
        if path == "/big":
            return "200 OK", [("content-type", "text/plain")], b"a" * (web.MAX_BODY_BYTES + 10)
        if path.startswith("/charset/"):
            ctype = f"text/plain; charset={path.removeprefix('/charset/')}"
            return "200 OK", [("content-type", ctype)], "h\u00e9llo".encode()
        if path == "/bin":
            return "200 OK", [("content-type", "application/octet-stream")], b"\x00\x01"
        return "404 Not Found", [("content-type", "text/plain")], b"nope"

    async def handle(self, stream: trio.SocketStream) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = await stream.receive_some(4096)
            if not chunk:
                return
            data += chunk
        path = data.split(b" ", 2)[1].decode()
        self.hits[path] = self.hits.get(path, 0) + 1
        status, headers, body = self.route(path)
        head = f"HTTP/1.1 {status}\r\ncontent-length: {len(body)}\r\nconnection: close\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
        with contextlib.suppress(trio.BrokenResourceError):
            await stream.send_all(head.encode() + body)
        await stream.aclose()


@pytest.fixture
async def server(nursery: trio.Nursery) -> Server:
    srv = Server()
    listeners = await nursery.start(partial(trio.serve_tcp, srv.handle, 0, host="127.0.0.1"))
    srv.port = listeners[0].socket.getsockname()[1]
    return srv


async def test_fetch_converts_html_to_markdown(server: Server, ctx: ToolContext) -> None:
    out = await call(FETCH, {"url": server.url("/page"), "prompt": "summarize"}, ctx)
    text = text_of(out)
    assert not out.is_error
    assert text.startswith("(No model is available to answer the prompt")
    assert "# Title" in text
    assert f"[world]({server.url('/x')})" in text
    assert "x()" not in text


async def test_fetch_answers_the_prompt_with_the_model(server: Server, ctx: ToolContext) -> None:
    asked: list[tuple[str, str | None]] = []

    async def complete(prompt: str, system: str | None) -> str:
        asked.append((prompt, system))
        return "The title is Title."

    ctx.complete = complete
    out = await call(FETCH, {"url": server.url("/page"), "prompt": "What is the title?"}, ctx)
    assert text_of(out) == "The title is Title."
    assert "# Title" in asked[0][0] and asked[0][0].rstrip().endswith(
        "Answer based only on the content above."
    )
    assert "What is the title?" in asked[0][0]
    assert out.data is not None and out.data["answered"] is True


async def test_fetch_plain_text_as_is(server: Server, ctx: ToolContext) -> None:
    out = text_of(await call(FETCH, {"url": server.url("/text"), "prompt": "p"}, ctx))
    assert out.endswith("plain text body")


@pytest.mark.parametrize(
    "charset", ["punycode", "idna", "undefined", "no-such-charset", "base64", "rot13"]
)
async def test_fetch_reads_a_charset_no_page_is_written_in_as_utf8(
    server: Server, ctx: ToolContext, charset: str
) -> None:
    """The server names the charset: Python's punycode (quadratic), idna and undefined (they
    raised UnicodeError), codecs that are no text encoding (a LookupError) and unknown names
    are read as UTF-8."""
    out = await call(FETCH, {"url": server.url(f"/charset/{charset}"), "prompt": "p"}, ctx)
    assert not out.is_error
    assert text_of(out).endswith("h\u00e9llo")


async def test_a_page_that_decodes_to_a_lone_surrogate_is_converted(
    server: Server, ctx: ToolContext
) -> None:
    """UTF-7 can spell a lone surrogate; the page crossed the pipe to its converting process
    with ``surrogateescape``, which refused it (a UnicodeEncodeError out of the tool)."""
    server.pages["/utf7"] = b"<html><body><p>a +2AA- b</p></body></html>"
    server.page_types["/utf7"] = "text/html; charset=utf-7"
    out = await call(FETCH, {"url": server.url("/utf7"), "prompt": "p"}, ctx)
    assert not out.is_error
    assert text_of(out).endswith("a \ud800 b")


async def test_a_long_page_is_decoded_as_a_whole_decode_reads_it(
    server: Server, ctx: ToolContext
) -> None:
    """A page longer than a piece of decoding, in UTF-7 (by pieces) and in UTF-16 (in a
    process of its own), reads as the whole body decoded at once."""
    from agents.tools.bodies import DECODE_PIECE, decode_body

    bodies = {
        "utf-7": b"x+AOk-\xff" * DECODE_PIECE,  # (a byte it must replace: its slowest case)
        "utf-16": "h\u00e9llo \U0001f600 ".encode("utf-16") * DECODE_PIECE,
    }
    for charset, body in bodies.items():
        server.pages[f"/{charset}"] = body
        server.page_types[f"/{charset}"] = f"text/plain; charset={charset}"
        out = await call(FETCH, {"url": server.url(f"/{charset}"), "prompt": "p"}, ctx)
        assert text_of(out).split("\n\n", 1)[1] == truncate(
            decode_body(body, charset), web.MAX_CONTENT_CHARS
        )


def test_a_body_the_server_calls_punycode_is_read_at_once() -> None:
    """2 MB the server calls punycode: decoded as punycode, hours on the event loop (320 KB
    took 4.7 s); read as UTF-8, at once."""
    script = (
        "from agents.tools.bodies import decode_body\n"
        "print(len(decode_body(b'a' * 1_000_000 + b'-' + b'z' * 1_000_000, 'punycode')))"
    )
    assert printed_within_a_deadline(script, seconds=30) == "2000001"


async def test_fetch_follows_same_host_redirects(server: Server, ctx: ToolContext) -> None:
    out = await call(FETCH, {"url": server.url("/redirect"), "prompt": "p"}, ctx)
    assert "# Title" in text_of(out)
    assert out.data is not None and out.data["url"] == server.url("/page")


async def test_fetch_reports_cross_host_redirects(server: Server, ctx: ToolContext) -> None:
    out = await call(FETCH, {"url": server.url("/offsite"), "prompt": "p"}, ctx)
    assert not out.is_error
    assert text_of(out).startswith("REDIRECT DETECTED: The URL redirects to a different host.")
    assert "Redirect URL: http://elsewhere.example/new" in text_of(out)


@pytest.mark.parametrize("route", ["/other-port", "/other-scheme"])
async def test_fetch_reports_redirects_to_another_port_or_scheme(
    server: Server, ctx: ToolContext, route: str
) -> None:
    """A redirect is followed only to the same scheme, host and port: another port of the same
    host is another service, which the call was not approved for."""
    out = await call(FETCH, {"url": server.url(route), "prompt": "p"}, ctx)
    assert not out.is_error
    assert text_of(out).startswith("REDIRECT DETECTED: The URL redirects to a different host.")
    assert out.data is not None and "/page" in out.data["redirect"]
    assert "/page" not in server.hits


async def test_fetch_limits_redirects(server: Server, ctx: ToolContext) -> None:
    out = await call(FETCH, {"url": server.url("/loop"), "prompt": "p"}, ctx)
    assert out.is_error
    assert text_of(out).startswith("Too many redirects (more than 10)")
    assert server.hits["/loop"] == 11


async def test_fetch_http_errors(server: Server, ctx: ToolContext) -> None:
    out = await call(FETCH, {"url": server.url("/missing"), "prompt": "p"}, ctx)
    assert out.is_error
    assert text_of(out).startswith("Request failed with status code 404")


async def test_fetch_caps_the_body(server: Server, ctx: ToolContext) -> None:
    out = await call(FETCH, {"url": server.url("/big"), "prompt": "p"}, ctx)
    assert out.data is not None and out.data["bytes"] == web.MAX_BODY_BYTES
    assert text_of(out).endswith(
        f"... [output truncated: {web.MAX_BODY_BYTES - web.MAX_CONTENT_CHARS} more characters "
        f"not shown]\n\n[content cut: the body exceeded {web.MAX_BODY_BYTES} bytes]"
    )
    (_, cached, _) = ctx.session_state["web_fetch_cache"][server.url("/big")]
    assert cached == text_of(out).split("\n\n", 1)[1]  # what the model is shown, no more


async def test_fetch_refuses_binary(server: Server, ctx: ToolContext) -> None:
    out = await call(FETCH, {"url": server.url("/bin"), "prompt": "p"}, ctx)
    assert out.is_error
    assert text_of(out).startswith("Unsupported content type 'application/octet-stream'")


async def test_fetch_caches_for_15_minutes(server: Server, ctx: ToolContext) -> None:
    for _ in range(2):
        await call(FETCH, {"url": server.url("/text"), "prompt": "p"}, ctx)
    assert server.hits["/text"] == 1
    url, (at, text, meta) = next(iter(ctx.session_state["web_fetch_cache"].items()))
    ctx.session_state["web_fetch_cache"][url] = (at - web.CACHE_TTL_S, text, meta)
    await call(FETCH, {"url": server.url("/text"), "prompt": "p"}, ctx)
    assert server.hits["/text"] == 2


async def test_fetches_share_one_tls_context_made_in_a_worker_thread(
    server: Server, ctx: ToolContext, thread_calls: list[object], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client made without a TLS context loads the roots itself, 21 ms on the event loop
    each fetch: every fetch's client verifies with the one context, made once, off the loop."""
    import ssl

    import httpx

    monkeypatch.setattr(bodies, "_TLS_CONTEXT", [])
    verified: list[object] = []
    real = httpx.AsyncClient

    class Spy(real):  # type: ignore[misc,valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            verified.append(kwargs.get("verify"))
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(httpx, "AsyncClient", Spy)
    for path in ("/page", "/text", "/redirect"):
        assert not (await call(FETCH, {"url": server.url(path), "prompt": "p"}, ctx)).is_error
    assert thread_calls.count(bodies._make_tls) == 1
    assert isinstance(verified[0], ssl.SSLContext)
    assert verified == [bodies._TLS_CONTEXT[0]] * 3


async def test_fetch_upgrades_http_to_https_except_localhost(ctx: ToolContext) -> None:
    out = await call(FETCH, {"url": "http://example.invalid/doc", "prompt": "p"}, ctx)
    assert out.is_error
    assert text_of(out).startswith("Failed to fetch https://example.invalid/doc")
    assert web._is_local("localhost") and web._is_local("127.0.0.1") and web._is_local("::1")
    assert not web._is_local("example.com")


@pytest.mark.parametrize("url", ["ftp://x.org/f", "not a url", "https://"])
async def test_fetch_rejects_bad_urls(url: str, ctx: ToolContext) -> None:
    out = await call(FETCH, {"url": url, "prompt": "p"}, ctx)
    assert out.is_error
    assert text_of(out).startswith("Invalid URL")


async def test_fetch_timeout_is_reported(
    ctx: ToolContext, nursery: trio.Nursery, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def silent(stream: trio.SocketStream) -> None:
        await trio.sleep_forever()

    listeners = await nursery.start(partial(trio.serve_tcp, silent, 0, host="127.0.0.1"))
    port = listeners[0].socket.getsockname()[1]
    monkeypatch.setattr(web, "FETCH_DEADLINE_S", 0.2)
    out = await call(FETCH, {"url": f"http://127.0.0.1:{port}/", "prompt": "p"}, ctx)
    assert out.is_error
    assert text_of(out) == f"Fetching http://127.0.0.1:{port}/ timed out after 0.2s"


# --- WebSearch ------------------------------------------------------------------------------


async def test_search_needs_the_anthropic_backend(ctx: ToolContext) -> None:
    out = await call(SEARCH, {"query": "trio structured concurrency"}, ctx)
    assert out.is_error
    assert text_of(out).startswith("WebSearch requires the Anthropic backend")


class AnthropicBackend:
    """Stands in for the real one (WebSearch checks the class name only)."""

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[BackendEvent]:
        self.requests.append(request)
        result: dict[str, Any] = {
            "type": "web_search_tool_result",
            "tool_use_id": "srvtoolu_1",
            "content": [
                {"type": "web_search_result", "title": "Trio docs", "url": "https://trio.rtfd.io"}
            ],
        }
        events: list[BackendEvent] = [
            MessageStart(message={"id": "m", "usage": {"input_tokens": 1}}),
            ContentBlockStart(0, result),
            ContentBlockStop(0),
            ContentBlockStart(1, {"type": "text", "text": ""}),
            ContentBlockDelta(1, {"type": "text_delta", "text": "Trio is a library."}),
            ContentBlockStop(1),
            MessageStop(),
        ]
        for event in events:
            yield event


async def test_search_through_the_server_side_tool(ctx: ToolContext) -> None:
    backend = AnthropicBackend()
    ctx.backend = backend
    ctx.model = "claude-test"
    out = await call(SEARCH, {"query": "trio", "allowed_domains": ["rtfd.io"]}, ctx)
    assert not out.is_error
    assert text_of(out) == (
        'Web search results for query: "trio"\n\n'
        'Links: [{"title":"Trio docs","url":"https://trio.rtfd.io"}]\n\nTrio is a library.'
    )
    tool = backend.requests[0].tools[0]
    assert tool["type"] == "web_search_20250305" and tool["allowed_domains"] == ["rtfd.io"]


async def test_search_rejects_both_domain_lists(ctx: ToolContext) -> None:
    ctx.backend = AnthropicBackend()
    out = await call(
        SEARCH, {"query": "q q", "allowed_domains": ["a"], "blocked_domains": ["b"]}, ctx
    )
    assert text_of(out) == "Cannot specify both allowed_domains and blocked_domains"


_HOSTILE_PAGE_SCRIPT = """
import trio
from agents.tools import bodies, web
from agents.tools.base import ToolContext

web.CONVERT_SECONDS = 1.0
PAGE = b"<html>" + b" \\n" * 128_000  # 256 KB of blank lines: minutes of html2text
HEAD = b"HTTP/1.1 200 OK\\r\\ncontent-type: text/html\\r\\nconnection: close\\r\\n"

async def handle(stream):
    data = b""
    while b"\\r\\n\\r\\n" not in data:
        data += await stream.receive_some(4096)
    await stream.send_all(HEAD + b"content-length: %d\\r\\n\\r\\n" % len(PAGE) + PAGE)

async def main():
    ticks = 0
    async def tick():
        nonlocal ticks
        while True:
            await trio.sleep(0.01)
            ticks += 1
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(trio.serve_tcp, handle, 0)
        port = listeners[0].socket.getsockname()[1]
        nursery.start_soon(tick)
        tool = web.web_fetch_tool()
        ctx = ToolContext(cwd="/", agent_id="main", tool_use_id="t1", session_id="s")
        url = f"http://127.0.0.1:{port}/blank"
        out = await tool.handler(tool.validate({"url": url, "prompt": "p"}), ctx)
        print(out.is_error, out.content.replace(str(port), "PORT"), ticks > 10, sep="|")
        nursery.cancel_scope.cancel()

trio.run(main)
"""


def test_a_page_html2text_cannot_convert_in_time_is_an_error_and_never_holds_the_loop() -> None:
    """256 KB of blank lines (html2text: 8 KB took 0.5 s, 64 KB 33 s, quadratic): converted in
    a process of its own, killed at the deadline, an error naming the page and the deadline,
    and the event loop ran other tasks all along."""
    printed = printed_within_a_deadline(_HOSTILE_PAGE_SCRIPT, seconds=30)
    assert printed == (
        "True|Converting http://127.0.0.1:PORT/blank to Markdown took longer than 1 s "
        "(html2text is slow on some pages: fetch another)|True"
    )


async def test_the_page_cache_holds_at_most_its_limit_oldest_out_first(
    server: Server, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages fetched past the cache's limit of characters push the oldest out: the cache
    never holds more than the limit, the newest pages are served from it, the oldest fetched
    again."""
    page = b"<html><body><p>" + b"x" * 1000 + b"</p></body></html>"
    for i in range(5):
        server.pages[f"/p{i}"] = page
    monkeypatch.setattr(web, "CACHE_MAX_CHARS", 3_000)
    for i in range(5):
        await call(FETCH, {"url": server.url(f"/p{i}"), "prompt": "p"}, ctx)
        cache = ctx.session_state["web_fetch_cache"]
        assert sum(len(text) for _, text, _ in cache.values()) <= 3_000
    assert list(cache) == [server.url(f"/p{i}") for i in (2, 3, 4)]
    await call(FETCH, {"url": server.url("/p4"), "prompt": "p"}, ctx)
    await call(FETCH, {"url": server.url("/p0"), "prompt": "p"}, ctx)
    assert (server.hits["/p4"], server.hits["/p0"]) == (1, 2)
    assert list(cache) == [server.url(f"/p{i}") for i in (3, 4, 0)]


async def test_long_markdown_is_cut_where_it_is_made(
    server: Server, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page whose Markdown is longer than the model can be shown is cut in the converting
    process: the text is what cutting the whole Markdown gives, and no more than that crosses
    the pipe (a hostile page made 67 MB of Markdown)."""
    import html2text

    page = b"<html><body>" + b"<p>hello <b>world</b> and more</p>" * 8_000 + b"</body></html>"
    server.pages["/long-md"] = page
    converter = html2text.HTML2Text(baseurl=server.url("/long-md"))
    converter.body_width, converter.ignore_images = 0, True
    whole = str(converter.handle(page.decode())).strip()
    assert len(whole) > 2 * web.MAX_CONTENT_CHARS
    piped: list[int] = []
    real = web.run_python

    async def counted(*args: Any) -> Any:
        done = await real(*args)
        piped.append(len(done.stdout))
        return done

    monkeypatch.setattr(web, "run_python", counted)
    out = await call(FETCH, {"url": server.url("/long-md"), "prompt": "p"}, ctx)
    assert text_of(out).split("\n\n", 1)[1] == truncate(whole, web.MAX_CONTENT_CHARS)
    assert piped == [len(f"{len(whole)}\n") + web.MAX_CONTENT_CHARS]  # (ASCII: a byte each)
