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

from agents.mcp._rpc import ConnectionLost, LineClient, RpcError, decode_call_result

Reply = Callable[[dict[str, Any]], list[bytes]]


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
                    got[n] = json.loads(bytes(await client.request("m", {"n": n})))["n"]

                nursery.start_soon(one)
    assert got == {n: n for n in range(5)}
    assert peer.writes == 1  # the five requests of one step left in one write


async def test_a_line_that_is_not_json_rpc_is_noted_and_the_calls_in_flight_go_on() -> None:
    def garble_first(message: dict[str, Any]) -> list[bytes]:
        return [b"this is not json {\n", b'{"id": "x", "result": 5, "error": 3}\n', *echo(message)]

    with trio.fail_after(5):
        async with connected(garble_first) as (client, _):
            raw = await client.request("m", {"a": 1})
    assert json.loads(bytes(raw)) == {"echo": {"a": 1}}
    assert client.last_error is not None and "not JSON-RPC" in client.last_error


async def test_a_line_nested_too_deeply_is_noted_and_the_calls_in_flight_go_on() -> None:
    """A server's line nested past Python's recursion limit is a line that is not JSON-RPC,
    not a RecursionError that ends the connection's task (and the session with it)."""
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
    assert json.loads(bytes(raw)) == {"echo": {"a": 1}}
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
                        done.append(json.loads(bytes(await client.request("m")))["id"])

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
