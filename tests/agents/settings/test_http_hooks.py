"""Settings-file ``http`` hooks: the hook input POSTed as JSON to a URL, answered in Claude
Code's format, against a real HTTP server on 127.0.0.1 (a thread of this process)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import trio

from agents import AgentOptions, ToolResultBlock, UserMessage
from agents.hooks import HookContext
from agents.settings import HttpHook, http_hook, load_settings
from agents.testing import ScriptedBackend, Step, text, tool_use
from tests.agents.helpers import collect

CTX = HookContext()
INPUT = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}}
BOUND = 30


class Server:
    """Answers each POST with the (status, body) set for its path; records what came in."""

    def __init__(self) -> None:
        self.answers: dict[str, tuple[int, bytes, float]] = {}
        self.seen: list[dict[str, Any]] = []
        self.endless: set[str] = set()
        self.content_types: dict[str, str] = {}
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # the hook request
                length = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(length)
                owner.seen.append(
                    {"path": self.path, "headers": dict(self.headers), "body": json.loads(body)}
                )
                status, answer, delay = owner.answers.get(self.path, (200, b"", 0.0))
                if delay:
                    threading.Event().wait(delay)
                if self.path in owner.endless:
                    self.send_endless(status)
                    return
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", str(len(answer)))
                    if self.path in owner.content_types:
                        self.send_header("Content-Type", owner.content_types[self.path])
                    self.end_headers()
                    self.wfile.write(answer)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # a hook past its timeout: the client hung up, as it should

            def send_endless(self, status: int) -> None:
                """A body with no length that never ends: 64 KiB at a time until the client
                hangs up."""
                self.close_connection = True
                try:
                    self.send_response(status)
                    self.end_headers()
                    chunk = b"a" * 65536
                    while True:
                        self.wfile.write(chunk)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def answer(self, path: str, status: int, body: Any, delay: float = 0.0) -> str:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.answers[path] = (status, raw, delay)
        return self.url + path


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    thread = threading.Thread(target=s.httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield s
    finally:
        s.httpd.shutdown()
        s.httpd.server_close()
        thread.join(5)


def endless(server: Server, path: str, status: int) -> str:
    """A path the server answers with a body that never ends."""
    server.answer(path, status, b"")
    server.endless.add(path)
    return server.url + path


def hook_of(url: str, **fields: Any) -> HttpHook:
    return HttpHook(event="PreToolUse", matcher=None, url=url, source="test", **fields)


async def test_the_hook_input_is_posted_as_json(server: Server) -> None:
    url = server.answer("/pre", 200, b"")
    with trio.fail_after(BOUND):
        assert await http_hook(hook_of(url), {})(INPUT, "t1", CTX) == {}
    assert server.seen[0]["body"] == INPUT
    assert server.seen[0]["headers"]["Content-Type"] == "application/json"


async def test_a_json_object_answer_is_the_hooks_output(server: Server) -> None:
    out = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny"}}
    url = server.answer("/pre", 200, out)
    with trio.fail_after(BOUND):
        assert await http_hook(hook_of(url), {})(INPUT, "t1", CTX) == out


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (500, b"boom", r"answered HTTP 500"),
        (200, b"not json", r"answered with a body that is not a JSON object"),
        (200, b"[1, 2]", r"answered with a body that is not a JSON object"),
    ],
)
async def test_a_bad_answer_is_a_non_blocking_error(
    server: Server, status: int, body: bytes, message: str
) -> None:
    url = server.answer("/pre", status, body)
    with trio.fail_after(BOUND):
        output = await http_hook(hook_of(url), {})(INPUT, "t1", CTX)
    assert set(output) == {"systemMessage"}
    assert url in output["systemMessage"]
    assert __import__("re").search(message, output["systemMessage"])


async def test_an_unreachable_url_is_a_non_blocking_error(server: Server) -> None:
    url = server.url + "/pre"
    server.httpd.shutdown()
    server.httpd.server_close()
    with trio.fail_after(BOUND):
        output = await http_hook(hook_of(url), {})(INPUT, "t1", CTX)
    assert set(output) == {"systemMessage"}
    assert "could not reach" in output["systemMessage"]


async def test_a_slow_server_is_cut_at_the_hooks_timeout(server: Server) -> None:
    url = server.answer("/pre", 200, b"", delay=5)
    with trio.fail_after(BOUND):
        start = trio.current_time()
        output = await http_hook(hook_of(url, timeout=0.3), {})(INPUT, "t1", CTX)
        assert trio.current_time() - start < 4
    assert "did not answer within 0.3 s" in output["systemMessage"]


async def test_headers_expand_only_the_allowed_variables(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("X15_SECRET", "leak")
    url = server.answer("/pre", 200, b"")
    hook = hook_of(
        url,
        headers={"Authorization": "Bearer $X15_TOKEN", "X-Other": "${X15_SECRET}!"},
        allowed_env_vars=("X15_TOKEN",),
    )
    with trio.fail_after(BOUND):
        await http_hook(hook, {"X15_TOKEN": "t0k"})(INPUT, "t1", CTX)
    headers = server.seen[0]["headers"]
    assert headers["Authorization"] == "Bearer t0k"
    assert headers["X-Other"] == "!"


def test_http_hooks_are_read_from_settings(project: Path) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = {
        "type": "http",
        "url": "http://127.0.0.1:9/h",
        "headers": {"A": "b"},
        "allowedEnvVars": ["T"],
        "timeout": 5,
    }
    path.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [entry]}]}}))
    (hook,) = load_settings(str(project), ["project"]).hooks
    assert hook == HttpHook(
        event="PreToolUse",
        matcher="Bash",
        url="http://127.0.0.1:9/h",
        headers={"A": "b"},
        allowed_env_vars=("T",),
        timeout=5.0,
        source=str(path),
    )


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"type": "http"}, r"\.url must be an http:// or https:// URL"),
        ({"type": "http", "url": "ftp://x"}, r"\.url must be an http:// or https:// URL"),
        ({"type": "http", "url": "http://x", "headers": []}, r"\.headers must be"),
        ({"type": "http", "url": "http://x", "allowedEnvVars": "T"}, r"\.allowedEnvVars must"),
    ],
)
def test_a_malformed_http_hook_names_file_and_key(
    project: Path, entry: dict[str, Any], message: str
) -> None:
    from agents.settings import SettingsError

    path = project / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [entry]}]}}))
    with pytest.raises(SettingsError, match=rf"^{path}: hooks\.Stop\[0\]\.hooks\[0\]{message}"):
        load_settings(str(project), ["project"])


async def test_a_settings_http_hook_denies_a_tool_call_in_a_query(
    server: Server, project: Path
) -> None:
    deny = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "the policy server says no",
        }
    }
    url = server.answer("/policy", 200, deny)
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    hook = {"type": "http", "url": url}
    settings.write_text(
        json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [hook]}]}})
    )
    backend = ScriptedBackend(
        [Step([tool_use("Bash", {"command": "echo hi"})]), Step([text("done")])]
    )
    options = AgentOptions(
        backend=backend,
        cwd=str(project),
        setting_sources=["project"],
        permission_mode="bypassPermissions",
    )
    with trio.fail_after(BOUND):
        messages, error = await collect("go", options)
    assert error is None
    (block,) = [
        b
        for m in messages
        if isinstance(m, UserMessage)
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]
    assert block.is_error
    assert "the policy server says no" in str(block.content)
    assert server.seen[0]["body"]["tool_input"] == {"command": "echo hi"}


@pytest.mark.parametrize("status", [200, 500])
async def test_an_endless_body_is_cut_at_the_limit_naming_it(server: Server, status: int) -> None:
    """A server streaming a body without end: the hook reads at most the limit (its memory's
    peak stays near it, the body never ends) and answers an error naming the limit, well before
    its timeout."""
    import tracemalloc

    url = endless(server, "/endless", status)
    tracemalloc.start()
    try:
        with trio.fail_after(BOUND):
            output = await http_hook(hook_of(url, timeout=BOUND * 2), {})(INPUT, "t1", CTX)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert output == {
        "systemMessage": f"PreToolUse http hook {url} answered HTTP {status} with a body over "
        "1048576 bytes (the limit of an http hook's answer); it is ignored"
    }
    assert peak < 8 << 20


async def test_a_json_answer_up_to_the_limit_is_read(server: Server) -> None:
    context = "c" * ((1 << 20) - 200)
    out = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": context}}
    url = server.answer("/big", 200, out)
    assert await http_hook(hook_of(url), {})(INPUT, "t1", CTX) == out


@pytest.mark.parametrize("charset", ["idna", "undefined", "punycode", "no-such-charset"])
async def test_an_answer_in_a_charset_that_is_no_web_charset_is_read_as_utf8(
    server: Server, charset: str
) -> None:
    """The server names the charset: idna and undefined refuse to decode with replacements
    (a UnicodeError out of the hook), punycode decodes in quadratic time; each is read as
    UTF-8, as an unknown one is, and the decision applies."""
    out = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny"}}
    url = server.answer("/pre", 200, out)
    server.content_types["/pre"] = f"application/json; charset={charset}"
    with trio.fail_after(BOUND):
        assert await http_hook(hook_of(url), {})(INPUT, "t1", CTX) == out


async def test_a_large_answer_is_decoded_by_pieces(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A body of 270 KB in UTF-7 (1 MiB held the event loop about 160 ms in one decode) goes
    through the decoder by pieces, and the decision in it applies; when a charset that must be
    decoded whole fails to, the answer is ignored and says why."""
    from agents.settings import _http_hooks

    out = {
        "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny"},
        "systemMessage": "é" * 100_000,
    }
    url = server.answer("/pre", 200, json.dumps(out, ensure_ascii=False).encode("utf-7"))
    server.content_types["/pre"] = "application/json; charset=utf-7"
    decoded: list[int] = []
    by_pieces = _http_hooks.decode_in_pieces

    async def spy(body: bytes | bytearray, charset: str) -> str | None:
        decoded.append(len(body))
        return await by_pieces(body, charset)

    monkeypatch.setattr(_http_hooks, "decode_in_pieces", spy)
    with trio.fail_after(BOUND):
        assert await http_hook(hook_of(url), {})(INPUT, "t1", CTX) == out
    assert decoded and decoded[0] > 200_000  # many pieces of 16 KiB

    async def failed(body: bytes | bytearray, charset: str) -> None:
        return None

    monkeypatch.setattr(_http_hooks, "decode_in_pieces", failed)
    with trio.fail_after(BOUND):
        assert await http_hook(hook_of(url), {})(INPUT, "t1", CTX) == {
            "systemMessage": f"PreToolUse http hook {url} answered HTTP 200 with a body that "
            "could not be decoded in its charset; it is ignored"
        }
