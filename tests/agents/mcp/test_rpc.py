"""The lean stdio client (``LineClient``) against a scripted peer on memory streams: responses
matched by id, lines that are not JSON-RPC, answers to no request, a peer that goes away, huge
messages, and one of ten calls cancelled while the others complete."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import msgspec
import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.mcp._rpc import (
    ConnectionLost,
    Decoded,
    LineClient,
    RpcError,
    decode_call_result,
    validated,
)

Reply = Callable[[dict[str, Any]], list[bytes]]


def json_of(answer: msgspec.Raw | Decoded) -> Any:
    """A short result, which comes raw, as Python values."""
    assert isinstance(answer, msgspec.Raw)
    return json.loads(bytes(answer))


def result(message: dict[str, Any], payload: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": payload}).encode() + b"\n"


class Peer:
    """The server's side: every line the client writes is kept; ``reply`` says what to answer."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.seen: list[dict[str, Any]] = []
        self.writes = 0

    async def run(self, receive: trio.abc.ReceiveStream, send: trio.abc.SendStream) -> None:
        buffer = b""
        while chunk := await receive.receive_some():
            self.writes += 1
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                message = json.loads(line)
                self.seen.append(message)
                out = self.reply(message)
                if out:
                    await send.send_all(b"".join(out))


@asynccontextmanager
async def connected(reply: Reply, **kwargs: Any) -> AsyncIterator[tuple[LineClient, Peer]]:
    """A client whose peer answers with ``reply``; ``peer_send`` closed ends the connection."""
    to_server_send, to_server_receive = trio.testing.memory_stream_one_way_pair()
    to_client_send, to_client_receive = trio.testing.memory_stream_one_way_pair()
    client = LineClient(to_client_receive, to_server_send, name="demo", **kwargs)
    peer = Peer(reply)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(client.serve)

        async def peer_task() -> None:
            async with to_client_send:
                await peer.run(to_server_receive, to_client_send)

        nursery.start_soon(peer_task)
        client.peer_send = to_client_send  # type: ignore[attr-defined]
        yield client, peer
        nursery.cancel_scope.cancel()


def echo(message: dict[str, Any]) -> list[bytes]:
    if "id" not in message:
        return []
    return [result(message, {"echo": message.get("params")})]


async def test_concurrent_requests_get_their_own_responses_even_out_of_order() -> None:
    held: list[dict[str, Any]] = []

    def reply_when_all_came(message: dict[str, Any]) -> list[bytes]:
        held.append(message)
        if len(held) < 5:
            return []
        return [result(m, {"n": m["params"]["n"]}) for m in reversed(held)]

    got: dict[int, Any] = {}
    with trio.fail_after(5):
        async with connected(reply_when_all_came) as (client, peer), trio.open_nursery() as nursery:
            for n in range(5):

                async def one(n: int = n) -> None:
                    got[n] = json_of(await client.request("m", {"n": n}))["n"]

                nursery.start_soon(one)
    assert got == {n: n for n in range(5)}
    assert peer.writes == 1  # the five requests of one step left in one write


async def test_a_line_that_is_not_json_rpc_is_noted_and_the_calls_in_flight_go_on() -> None:
    def garble_first(message: dict[str, Any]) -> list[bytes]:
        return [b"this is not json {\n", b'{"id": "x", "result": 5, "error": 3}\n', *echo(message)]

    with trio.fail_after(5):
        async with connected(garble_first) as (client, _):
            raw = await client.request("m", {"a": 1})
    assert json_of(raw) == {"echo": {"a": 1}}
    assert client.last_error is not None and "not JSON-RPC" in client.last_error


@pytest.mark.parametrize("long_line_bytes", [None, 64])
async def test_a_line_nested_too_deeply_is_noted_and_the_calls_in_flight_go_on(
    monkeypatch: pytest.MonkeyPatch, long_line_bytes: int | None
) -> None:
    """A server's line nested past Python's recursion limit is a line that is not JSON-RPC,
    not a RecursionError that ends the connection's task (and the session with it): decoded
    on the loop, or (a read over ``LONG_LINE_BYTES``, lowered here) by pieces in a thread."""
    if long_line_bytes is not None:
        from agents.mcp import _rpc

        monkeypatch.setattr(_rpc, "LONG_LINE_BYTES", long_line_bytes)
    deep = b'{"jsonrpc": "2.0", "id": "x", "result": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"

    def nest_first(message: dict[str, Any]) -> list[bytes]:
        return [deep + b"\n", *echo(message)]

    with trio.fail_after(5):
        async with connected(nest_first) as (client, _):
            raw = await client.request("m", {"a": 1})
    assert json.loads(bytes(raw)) == {"echo": {"a": 1}}
    assert client.last_error is not None
    assert client.last_error.startswith("a line that is not JSON-RPC (nested too deeply")


async def test_a_response_with_an_unknown_id_is_ignored() -> None:
    def also_a_stranger(message: dict[str, Any]) -> list[bytes]:
        stranger = {"jsonrpc": "2.0", "id": 999, "result": {"who": "?"}}
        return [json.dumps(stranger).encode() + b"\n", *echo(message)]

    with trio.fail_after(5):
        async with connected(also_a_stranger) as (client, _):
            raw = await client.request("m", {"a": 1})
    assert json_of(raw) == {"echo": {"a": 1}}
    assert client.last_error == "a response to no pending request (id 999)"


async def test_an_error_response_raises_rpc_error_with_code_and_message() -> None:
    def refuse(message: dict[str, Any]) -> list[bytes]:
        error = {"code": -32602, "message": "bad params"}
        return [
            json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}).encode() + b"\n"
        ]

    with trio.fail_after(5):
        async with connected(refuse) as (client, _):
            with pytest.raises(RpcError) as caught:
                await client.request("m")
    assert (caught.value.code, caught.value.message) == (-32602, "bad params")


async def test_a_peer_that_goes_away_mid_call_fails_every_waiting_request() -> None:
    failures: list[str] = []
    with trio.fail_after(5):
        async with connected(lambda m: []) as (client, peer):
            async with trio.open_nursery() as nursery:
                for _ in range(3):

                    async def waiting() -> None:
                        with pytest.raises(ConnectionLost) as caught:
                            await client.request("m")
                        failures.append(str(caught.value))

                    nursery.start_soon(waiting)
                while len(peer.seen) < 3:
                    await trio.sleep(0.01)
                await client.peer_send.aclose()  # type: ignore[attr-defined]
            await client.ended.wait()
            with pytest.raises(ConnectionLost):  # and later requests fail at once
                await client.request("m")
    assert failures == ["MCP server 'demo' closed the connection"] * 3


async def test_a_huge_response_arrives_whole() -> None:
    text = "x" * 3_000_000

    def big(message: dict[str, Any]) -> list[bytes]:
        return [result(message, {"content": [{"type": "text", "text": text}]})]

    with trio.fail_after(30):
        async with connected(big) as (client, _):
            output = decode_call_result(await client.request("tools/call"))
    assert output.content == [{"type": "text", "text": text}]


async def test_a_message_longer_than_the_limit_ends_the_connection_naming_it() -> None:
    def big(message: dict[str, Any]) -> list[bytes]:
        return [result(message, {"text": "x" * 300_000})]

    with trio.fail_after(10):
        async with connected(big, max_line=100_000) as (client, _):
            with pytest.raises(ConnectionLost) as caught:
                await client.request("m")
    assert str(caught.value) == "MCP server 'demo' sent a message longer than 100000 bytes"


async def test_one_of_ten_calls_cancelled_while_the_others_complete() -> None:
    held: list[dict[str, Any]] = []

    def answer_all_but_the_cancelled(message: dict[str, Any]) -> list[bytes]:
        if message.get("method") == "notifications/cancelled":
            cancelled = message["params"]["requestId"]
            return [result(m, {"id": m["id"]}) for m in held if m["id"] != cancelled]
        held.append(message)
        return []

    done: list[int] = []
    with trio.fail_after(5):
        async with (
            connected(answer_all_but_the_cancelled) as (client, peer),
            trio.open_nursery() as nursery,
        ):
            scopes = []
            for _ in range(10):
                scope = trio.CancelScope()
                scopes.append(scope)

                async def one(scope: trio.CancelScope = scope) -> None:
                    with scope:
                        done.append(json_of(await client.request("m"))["id"])

                nursery.start_soon(one)
            while len(held) < 10:
                await trio.sleep(0.01)
            scopes[3].cancel()
    (cancel,) = [m for m in peer.seen if m.get("method") == "notifications/cancelled"]
    cancelled = cancel["params"]["requestId"]
    assert sorted(done) == [n for n in range(1, 11) if n != cancelled]
    assert client._pending == {}


async def test_a_ping_from_the_server_is_answered_and_other_requests_refused() -> None:
    def ask_back(message: dict[str, Any]) -> list[bytes]:
        if message.get("method") == "m":
            ping = {"jsonrpc": "2.0", "id": "p1", "method": "ping"}
            roots = {"jsonrpc": "2.0", "id": "r1", "method": "roots/list"}
            return [json.dumps(ping).encode() + b"\n", json.dumps(roots).encode() + b"\n"]
        if message.get("id") == "r1":
            return [result({"id": 1}, {"done": True})]
        return []

    with trio.fail_after(5):
        async with connected(ask_back) as (client, peer):
            await client.request("m")
    answers = {m["id"]: m for m in peer.seen if m.get("id") in ("p1", "r1")}
    assert answers["p1"]["result"] == {}
    assert answers["r1"]["error"]["code"] == -32601


async def test_a_notification_reaches_the_callback() -> None:
    methods: list[str] = []

    def announce(message: dict[str, Any]) -> list[bytes]:
        note = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
        return [json.dumps(note).encode() + b"\n", *echo(message)]

    with trio.fail_after(5):
        async with connected(announce, on_notification=methods.append) as (client, _):
            await client.request("m")
    assert methods == ["notifications/tools/list_changed"]


def test_a_call_result_of_every_content_type_becomes_messages_api_blocks() -> None:
    raw = msgspec.Raw(
        json.dumps(
            {
                "content": [
                    {"type": "text", "text": "hi"},
                    {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                    {"type": "resource", "resource": {"uri": "f://a", "text": "body"}},
                    {"type": "resource", "resource": {"uri": "f://b", "blob": "AA"}},
                    {"type": "resource_link", "uri": "f://c", "name": "c"},
                    {"type": "audio", "data": "AA", "mimeType": "audio/wav"},
                ],
                "isError": True,
            }
        ).encode()
    )
    output = decode_call_result(raw)
    assert output.is_error
    assert output.content == [
        {"type": "text", "text": "hi"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
        {"type": "text", "text": "body"},
        {"type": "text", "text": "[binary resource f://b (None)]"},
        {"type": "text", "text": "[resource link: f://c (c)]"},
        {"type": "text", "text": "[audio content (audio/wav) omitted]"},
    ]


def test_structured_content_alone_is_its_json_and_an_unknown_block_type_is_an_error() -> None:
    only = msgspec.Raw(b'{"content": [], "structuredContent": {"a": 1}}')
    assert decode_call_result(only).content == [{"type": "text", "text": '{"a": 1}'}]
    with pytest.raises(msgspec.ValidationError):
        decode_call_result(msgspec.Raw(b'{"content": [{"type": "video"}]}'))


async def test_a_long_line_is_decoded_in_a_worker_thread(thread_calls: list[object]) -> None:
    """A result over a mebibyte is split and decoded off the event loop (one 100 MB result
    held it for 400 ms), then handed over decoded; a short one is decoded in place, raw."""
    threads = thread_calls
    text = "é\u2028" * 400_000  # characters JSON escapes, and a separator splitlines ignores

    def reply(message: dict[str, Any]) -> list[bytes]:
        size = message["params"]["size"]
        return [result(message, {"content": [{"type": "text", "text": text[:size]}]})]

    with trio.fail_after(30):
        async with connected(reply) as (client, _):
            short = await client.request("tools/call", {"size": 10})
            assert threads == []
            long = await client.request("tools/call", {"size": len(text)})
    assert isinstance(short, msgspec.Raw)
    assert isinstance(long, Decoded)
    assert len(threads) == 1
    assert decode_call_result(long).content == [{"type": "text", "text": text}]


async def test_a_long_listing_is_validated_as_the_short_one_is() -> None:
    from mcp.types import ListToolsResult

    description = "d" * (2 << 20)
    tools = [{"name": "t", "description": description, "inputSchema": {"type": "object"}}]

    with trio.fail_after(30):
        async with connected(lambda m: [result(m, {"tools": tools})]) as (client, _):
            raw = await client.request("tools/list")
    assert isinstance(raw, Decoded)
    listing = validated(ListToolsResult, raw)
    assert [(t.name, t.description) for t in listing.tools] == [("t", description)]


_line = st.one_of(
    st.builds(
        lambda i, t: json.dumps({"jsonrpc": "2.0", "id": i, "result": {"t": t}}),
        st.integers(0, 5),
        st.text(max_size=40),
    ),
    st.builds(
        lambda i, m: json.dumps({"jsonrpc": "2.0", "id": i, "error": {"code": -1, "message": m}}),
        st.integers(0, 5),
        st.text(max_size=10),
    ),
    st.builds(lambda m: json.dumps({"jsonrpc": "2.0", "method": m}), st.text(max_size=10)),
    st.sampled_from(["", "  ", "not json {", '{"jsonrpc": "2.0", "id": 1}', "[1, 2]"]),
    st.just(json.dumps({"jsonrpc": "2.0", "id": 9, "result": {"t": "x" * 200_000}})),
)


def _plain(message: Any) -> Any:
    if isinstance(message, str):
        return message
    result_ = message.result
    if isinstance(result_, msgspec.Raw):
        result_ = msgspec.json.decode(result_) if result_ else msgspec.UNSET
    error = None if message.error is None else (message.error.code, message.error.message)
    return (message.jsonrpc, message.id, message.method, result_, error)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lines=st.lists(_line, max_size=6),
    ends=st.lists(st.sampled_from(["\n", "\r\n", "\r"]), min_size=1, max_size=3),
)
def test_long_reads_are_split_and_decoded_as_short_ones(
    lines: list[str], ends: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """However long the read, its lines (split at LF, CR or CRLF, blank ones skipped) decode to
    the same messages, or the same complaint, as the in-place path's: a line over the limit
    (here 64 bytes) by pieces, a long string literal among them."""
    from agents.mcp import _rpc

    data = "".join(line + ends[i % len(ends)] for i, line in enumerate(lines)).encode()
    monkeypatch.setattr(_rpc, "LONG_LINE_BYTES", 64)
    long = [_plain(m) for m in _rpc._decode_lines(bytearray(data))]
    short = [_plain(_rpc._decode_line(line)) for line in data.splitlines() if line.strip()]
    assert long == short


@pytest.mark.parametrize("pad", [10, 2 << 20])
async def test_a_response_with_neither_result_nor_error_fails_its_request(pad: int) -> None:
    """Short or long (decoded in the thread), a response carrying nothing is an error."""

    def empty(message: dict[str, Any]) -> list[bytes]:
        line = {"jsonrpc": "2.0", "id": message["id"], "padding": "p" * pad}
        return [json.dumps(line).encode() + b"\n"]

    with trio.fail_after(30):
        async with connected(empty) as (client, _):
            with pytest.raises(RpcError, match=r"^a response with neither result nor error$"):
                await client.request("m")
