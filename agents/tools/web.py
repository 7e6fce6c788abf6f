"""WebFetch and WebSearch.

**WebFetch** ``{url, prompt}`` fetches a page with ``httpx`` (which runs on Trio natively), turns
HTML into Markdown with ``html2text`` (in a Python process of its own, within
:data:`CONVERT_SECONDS`: it is quadratic on some pages), and asks the session's model ``prompt``
over it through ``ctx.complete`` — so a 200 KB page costs the main context only the answer. Limits,
as Claude Code's: ``http`` is upgraded to ``https`` (except for
``localhost``/``127.0.0.1``/``::1``), at most 10 redirects are followed and only within the same
scheme, host and port (a redirect elsewhere is reported to the model, which may fetch it knowingly,
with its own permission check), bodies over 10 MB are cut (and the answer says so), and the whole
fetch has a cancel scope. Pages are cached per session for 15 minutes (Trio time), as the model is
shown them (at most ``MAX_CONTENT_CHARS``), and at most ``CACHE_MAX_CHARS`` characters in all: the
oldest entries go first. With no ``ctx.complete`` (unit tests, a bare context) the converted page
itself is returned, with a note.

**WebSearch** ``{query, allowed_domains?, blocked_domains?}`` uses the Messages API's server-side
``web_search`` tool, so it needs the Anthropic backend (checked by class name, so ``anthropic`` is
never imported here); other backends get an error result saying so.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Annotated, Any

import msgspec
import trio

from ._apart import last_error_line, run_python
from .base import Tool, ToolContext, ToolOutput, truncate
from .bodies import DECODE_PIECE, DECODE_SECONDS, decode_in_pieces, read_capped, tls_context

__all__ = ["web_fetch_tool", "web_search_tool"]

MAX_BODY_BYTES = 10 * 1024 * 1024
MAX_REDIRECTS = 10
#: Characters of converted content handed to the model (or returned without one).
MAX_CONTENT_CHARS = 100_000
FETCH_DEADLINE_S = 60.0
#: How long converting one page to Markdown may take. html2text runs in a Python process of its
#: own, which the deadline or a cancellation kills: it is quadratic or worse on some pages (8 KB
#: of blank lines took 0.5 s, 64 KB 33 s; 64 KB of nested lists made 67 MB of Markdown in 7.5 s),
#: the page is the server's, and on the event loop nothing could cancel it.
CONVERT_SECONDS = 10.0
CACHE_TTL_S = 15 * 60.0
#: Characters the session's page cache holds at most (about 500 pages cut to the content cap).
CACHE_MAX_CHARS = 50_000_000
USER_AGENT = "trio-agents/0.1 (WebFetch; +https://github.com/)"
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
_TEXT_TYPES = (
    "text/",
    "application/json",
    "application/xml",
    "application/xhtml+xml",
    "application/javascript",
    "application/ld+json",
    "application/rss+xml",
)

WEB_FETCH_SYSTEM = (
    "You answer a question about a web page using only the page content given. Be concise. "
    "Quote exactly only short passages; never reproduce song lyrics or long verbatim text."
)


class WebFetchInput(msgspec.Struct):
    """WebFetch's input: ``{url, prompt}``."""

    url: Annotated[str, msgspec.Meta(min_length=1, max_length=2000)]
    prompt: str


WEB_FETCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "url": {"type": "string", "format": "uri", "description": "The URL to fetch content from"},
        "prompt": {"type": "string", "description": "The prompt to run on the fetched content"},
    },
    "required": ["url", "prompt"],
    "additionalProperties": False,
    "$schema": "http://json-schema.org/draft-07/schema#",
}

WEB_FETCH_DESCRIPTION = """- Fetches content from a specified URL and processes it using an AI model
- Takes a URL and a prompt as input
- Fetches the URL content, converts HTML to markdown
- Processes the content with the prompt using a small, fast model
- Returns the model's response about the content
- HTTP URLs will be automatically upgraded to HTTPS
- Includes a self-cleaning 15-minute cache for faster responses when repeatedly accessing the same URL
- When a URL redirects to a different host (or port, or scheme), the tool will inform you and provide the redirect URL. You should then make a new WebFetch request with the redirect URL to fetch the content."""  # noqa: E501


def _is_local(host: str) -> bool:
    if host in _LOCAL_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(url: Any) -> tuple[str, str, int | None]:
    """An ``httpx.URL``'s scheme, host (lower case) and port (the scheme's default if none)."""
    scheme = str(url.scheme).lower()
    return scheme, str(url.host).lower(), url.port or _DEFAULT_PORTS.get(scheme)


def _same_origin(a: Any, b: Any) -> bool:
    """Whether a redirect from ``b`` to ``a`` stays on the same scheme, host and port: only
    then is it followed (another port or scheme is another service the call was not approved
    for)."""
    return _origin(a) == _origin(b)


_CONVERT = """
import sys
import html2text
converter = html2text.HTML2Text(baseurl=sys.argv[1])
converter.body_width = 0  # no hard wrapping: the model reads long lines fine
converter.ignore_images = True
html = sys.stdin.buffer.read().decode("utf-8", "surrogatepass")
text = str(converter.handle(html)).strip()
# only what the model can be shown comes back, after the whole text's length
sys.stdout.buffer.write(b"%d\\n" % len(text))
sys.stdout.buffer.write(text[: int(sys.argv[2])].encode("utf-8", "surrogatepass"))
"""


async def _to_markdown(html: str, base_url: str) -> str | ToolOutput:
    """``html`` as Markdown, converted in a process of its own within ``CONVERT_SECONDS`` and cut
    to ``MAX_CONTENT_CHARS`` there (a hostile page made 67 MB of Markdown: only what the model
    can be shown crosses the pipe), or the error to return instead. The page crosses the pipe
    in UTF-8 with its lone surrogates as they are (a page in UTF-7 may decode to one, which
    ``surrogateescape`` refused with a UnicodeEncodeError out of the tool)."""
    done = await run_python(
        _CONVERT, [base_url, str(MAX_CONTENT_CHARS)], await _utf8(html), CONVERT_SECONDS
    )
    if done is None:
        return ToolOutput.error(
            f"Converting {base_url} to Markdown took longer than {CONVERT_SECONDS:g} s "
            "(html2text is slow on some pages: fetch another)"
        )
    if done.returncode != 0:
        return ToolOutput.error(
            f"Converting {base_url} to Markdown failed: {last_error_line(done)}"
        )
    total, _, head = done.stdout.decode("utf-8", "surrogatepass").partition("\n")
    return truncate(head, MAX_CONTENT_CHARS, total=int(total))


async def _utf8(text: str) -> bytes:
    """``text`` in UTF-8, lone surrogates passed, :data:`DECODE_PIECE` characters at a time
    with a checkpoint after each (10 MB of CJK took 70 ms in one call). Each character is
    encoded on its own, so the pieces join to the whole text's encoding."""
    if len(text) <= DECODE_PIECE:
        return text.encode("utf-8", "surrogatepass")
    parts: list[bytes] = []
    for start in range(0, len(text), DECODE_PIECE):
        parts.append(text[start : start + DECODE_PIECE].encode("utf-8", "surrogatepass"))
        await trio.lowlevel.checkpoint()
    return b"".join(parts)


async def _fetch(url: str) -> tuple[str, Mapping[str, Any]] | ToolOutput:
    """(converted text, metadata) for ``url``, or the ToolOutput to return instead."""
    import httpx

    timeout = httpx.Timeout(30.0, connect=10.0)
    headers = {"user-agent": USER_AGENT, "accept": "text/markdown, text/html, */*"}
    tls = await tls_context()
    async with httpx.AsyncClient(timeout=timeout, headers=headers, verify=tls) as client:
        current = httpx.URL(url)
        for _ in range(MAX_REDIRECTS + 1):
            async with client.stream("GET", current) as response:
                if response.is_redirect and "location" in response.headers:
                    target = current.join(response.headers["location"])
                    if not _same_origin(target, current):
                        text = (
                            "REDIRECT DETECTED: The URL redirects to a different host.\n\n"
                            f"Original URL: {url}\nRedirect URL: {target}\n"
                            f"Status: {response.status_code} {response.reason_phrase}\n\n"
                            "To complete your request, use WebFetch again with the redirect URL."
                        )
                        return ToolOutput(text, data={"redirect": str(target)})
                    current = target
                    continue
                if response.status_code >= 400:
                    return ToolOutput.error(
                        f"Request failed with status code {response.status_code} "
                        f"({response.reason_phrase}) for {current}"
                    )
                body, cut = await read_capped(response, MAX_BODY_BYTES)
                ctype = response.headers.get("content-type", "").split(";")[0].strip().lower()
                charset = response.charset_encoding or "utf-8"
                status = response.status_code
                break
        else:
            return ToolOutput.error(f"Too many redirects (more than {MAX_REDIRECTS}) for {url}")
    if ctype and not ctype.startswith(_TEXT_TYPES):
        return ToolOutput.error(f"Unsupported content type {ctype!r} at {current}")
    raw = await decode_in_pieces(body, charset)
    if raw is None:
        return ToolOutput.error(
            f"Decoding {current} from {charset} failed or took longer than {DECODE_SECONDS:g} s"
        )
    if ctype in ("text/html", "application/xhtml+xml") or (not ctype and "<html" in raw[:1000]):
        converted = await _to_markdown(raw, str(current))  # (cut as it was made)
        if isinstance(converted, ToolOutput):
            return converted
        text = converted
    else:
        text = truncate(raw, MAX_CONTENT_CHARS)  # the rest is never shown: not kept either
    meta = {"url": str(current), "code": status, "bytes": len(body), "contentType": ctype}
    if cut:
        text += f"\n\n[content cut: the body exceeded {MAX_BODY_BYTES} bytes]"
    return text, meta


async def _web_fetch(args: WebFetchInput, ctx: ToolContext) -> ToolOutput:
    await tls_context()  # (httpx imported in a worker thread the first time)
    import httpx

    try:
        url = httpx.URL(args.url)
    except httpx.InvalidURL as exc:
        return ToolOutput.error(f"Invalid URL {args.url!r}: {exc}")
    if url.scheme not in ("http", "https") or not url.host:
        return ToolOutput.error(f"Invalid URL {args.url!r}: expected an http(s) URL with a host")
    if url.scheme == "http" and not _is_local(url.host):
        url = url.copy_with(scheme="https")
    key = str(url)
    cache: dict[str, tuple[float, str, Mapping[str, Any]]] = ctx.session_state.setdefault(
        "web_fetch_cache", {}
    )
    now = trio.current_time()
    hit = cache.get(key)
    if hit is not None and now - hit[0] < CACHE_TTL_S:
        text, meta = hit[1], hit[2]
    else:
        fetched: tuple[str, Mapping[str, Any]] | ToolOutput | None = None
        try:
            with trio.move_on_after(FETCH_DEADLINE_S):
                fetched = await _fetch(key)
        except httpx.HTTPError as exc:
            return ToolOutput.error(f"Failed to fetch {key}: {exc!r}")
        if fetched is None:
            return ToolOutput.error(f"Fetching {key} timed out after {FETCH_DEADLINE_S:g}s")
        if isinstance(fetched, ToolOutput):
            return fetched
        text, meta = fetched
        _remember(cache, key, (now, text, meta))
    content = text
    if ctx.complete is None:
        note = "(No model is available to answer the prompt; here is the page content.)"
        return ToolOutput(f"{note}\n\n{content}", data={**meta, "answered": False})
    question = (
        f"Web page content ({meta['url']}):\n---\n{content}\n---\n\n{args.prompt}\n\n"
        "Answer based only on the content above."
    )
    answer = await ctx.complete(question, WEB_FETCH_SYSTEM)
    return ToolOutput(answer, data={**meta, "answered": True})


def _remember(
    cache: dict[str, tuple[float, str, Mapping[str, Any]]],
    key: str,
    entry: tuple[float, str, Mapping[str, Any]],
) -> None:
    """Cache ``entry``: expired entries dropped, then the oldest until the cache holds at most
    ``CACHE_MAX_CHARS`` characters (entries are kept in the order they were fetched)."""
    now = entry[0]
    cache.pop(key, None)
    cache[key] = entry
    held = 0
    for k, (at, text, _) in list(cache.items()):
        if now - at >= CACHE_TTL_S:
            del cache[k]
        else:
            held += len(text)
    for k in list(cache):
        if held <= CACHE_MAX_CHARS or k == key:
            break
        held -= len(cache.pop(k)[1])


def web_fetch_tool() -> Tool:
    """A fresh ``WebFetch`` tool (read-only)."""
    return Tool(
        name="WebFetch",
        description=WEB_FETCH_DESCRIPTION,
        input_schema=WEB_FETCH_SCHEMA,
        handler=_web_fetch,
        read_only=True,
        input_type=WebFetchInput,
    )


# --- WebSearch --------------------------------------------------------------------------------


class WebSearchInput(msgspec.Struct):
    """WebSearch's input: ``{query, allowed_domains?, blocked_domains?}``."""

    query: Annotated[str, msgspec.Meta(min_length=2)]
    allowed_domains: list[str] | None = None
    blocked_domains: list[str] | None = None


WEB_SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 2, "description": "The search query to use"},
        "allowed_domains": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Only include search results from these domains",
        },
        "blocked_domains": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Never include search results from these domains",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
    "$schema": "http://json-schema.org/draft-07/schema#",
}

WEB_SEARCH_TOOL_TYPE = "web_search_20250305"
WEB_SEARCH_MAX_USES = 8


def web_search_request(args: WebSearchInput, model: str, agent_id: str) -> Any:
    """The :class:`ModelRequest` that runs one server-side search."""
    from ..backends.base import ModelRequest

    tool: dict[str, Any] = {
        "type": WEB_SEARCH_TOOL_TYPE,
        "name": "web_search",
        "max_uses": WEB_SEARCH_MAX_USES,
    }
    if args.allowed_domains:
        tool["allowed_domains"] = list(args.allowed_domains)
    if args.blocked_domains:
        tool["blocked_domains"] = list(args.blocked_domains)
    return ModelRequest(
        model=model,
        max_tokens=4096,
        messages=[{"role": "user", "content": f"Perform a web search for the query: {args.query}"}],
        system=[
            {"type": "text", "text": "You are an assistant for performing a web search tool use"}
        ],
        tools=[tool],
        agent_id=agent_id,
        purpose="web_search",
    )


async def _web_search(args: WebSearchInput, ctx: ToolContext) -> ToolOutput:
    await trio.lowlevel.checkpoint()
    if args.allowed_domains and args.blocked_domains:
        return ToolOutput.error("Cannot specify both allowed_domains and blocked_domains")
    backend = ctx.backend
    if type(backend).__name__ != "AnthropicBackend":
        name = type(backend).__name__ if backend is not None else "none"
        return ToolOutput.error(
            f"WebSearch requires the Anthropic backend (server-side web search); "
            f"the session's backend is {name}"
        )
    from ..backends.base import BackendError, ContentBlockDelta, ContentBlockStart

    request = web_search_request(args, ctx.model or "claude-sonnet-4-5", ctx.agent_id)
    texts: dict[int, list[str]] = {}
    links: list[dict[str, str]] = []
    errors: list[str] = []
    try:
        stream = backend.stream(request)
        try:
            async for event in stream:
                if isinstance(event, ContentBlockStart):
                    block = event.content_block
                    if block.get("type") == "web_search_tool_result":
                        _collect_results(block.get("content"), links, errors)
                    elif block.get("type") == "text":
                        texts.setdefault(event.index, []).append(block.get("text", ""))
                elif (
                    isinstance(event, ContentBlockDelta) and event.delta.get("type") == "text_delta"
                ):
                    texts.setdefault(event.index, []).append(event.delta.get("text", ""))
        finally:
            await stream.aclose()
    except BackendError as exc:
        return ToolOutput.error(f"Web search failed: {exc}")
    if errors and not links:
        return ToolOutput.error(f"Web search failed: {', '.join(errors)}")
    summary = "\n\n".join("".join(parts) for _, parts in sorted(texts.items())).strip()
    text = (
        f'Web search results for query: "{args.query}"\n\n'
        f"Links: {msgspec.json.encode(links).decode()}\n\n{summary}"
    ).strip()
    return ToolOutput(text, data={"query": args.query, "results": links})


def _collect_results(content: Any, links: list[dict[str, str]], errors: list[str]) -> None:
    if isinstance(content, dict):  # web_search_tool_result_error
        errors.append(str(content.get("error_code", "unknown error")))
        return
    for item in content or ():
        if isinstance(item, dict) and item.get("type") == "web_search_result":
            links.append({"title": str(item.get("title", "")), "url": str(item.get("url", ""))})


def web_search_tool() -> Tool:
    """A fresh ``WebSearch`` tool (read-only)."""
    return Tool(
        name="WebSearch",
        description="- Allows Claude to search the web and use the results to inform responses\n"
        "- Provides up-to-date information for current events and recent data\n"
        "- Returns search result information formatted as search result blocks, including "
        "links as markdown hyperlinks\n- Domain filtering is supported to include or block "
        "specific websites\n- Requires the Anthropic backend (server-side web search)",
        input_schema=WEB_SEARCH_SCHEMA,
        handler=_web_search,
        read_only=True,
        input_type=WebSearchInput,
    )
