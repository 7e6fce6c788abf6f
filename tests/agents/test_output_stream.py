"""The session's output stream (``agents._loop.output``): a memory channel's semantics, cheaper.

Backpressure (a full buffer holds the writer until the reader takes a message), no message lost
or duplicated on cancellation, the ends' closing as a memory channel's, and a slow reader of a
real query holding the loop back.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from agents import (
    AgentOptions,
    SystemMessage,
    ToolAnnotations,
    create_sdk_mcp_server,
    query,
    tool,
)
from agents._loop.output import open_output_stream
from agents.backends.base import ModelRequest
from agents.messages import Message
from agents.testing.scripted import ScriptedBackend, Step, text, tool_use


def _msg(i: int) -> Message:
    return SystemMessage(subtype="informational", data={"i": i})


def _numbers(messages: list[Message]) -> list[int]:
    return [m.data["i"] for m in messages if isinstance(m, SystemMessage)]


async def test_a_full_stream_holds_the_writer_until_the_reader_takes_one(
    autojump_clock: trio.testing.MockClock,
) -> None:
    send, receive = open_output_stream(2)
    assert send.put_nowait(_msg(0)) and send.put_nowait(_msg(1))
    assert not send.put_nowait(_msg(2))  # full: nothing sent
    with pytest.raises(trio.WouldBlock):
        send.send_nowait(_msg(2))
    sent = trio.Event()

    async def writer() -> None:
        await send.send(_msg(2))
        sent.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(writer)
        await trio.sleep(1)
        assert not sent.is_set()  # still held back: the reader has taken nothing
        got = [receive.receive_nowait()]
        await trio.sleep(1)
        assert sent.is_set()
    got += [receive.receive_nowait(), receive.receive_nowait()]
    assert _numbers(got) == [0, 1, 2]


async def test_a_cancelled_send_sends_nothing(autojump_clock: trio.testing.MockClock) -> None:
    send, receive = open_output_stream(1)
    send.send_nowait(_msg(0))
    with trio.move_on_after(1) as scope:
        await send.send(_msg(1))
    assert scope.cancelled_caught
    send.close()
    got = [m async for m in receive]
    assert _numbers(got) == [0]


async def test_a_send_cancelled_once_woken_is_still_delivered_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A writer the reader woke cannot be cancelled out of its wait: its message goes in."""
    send, receive = open_output_stream(1)
    send.send_nowait(_msg(0))
    done: list[bool] = []

    async def writer(scope: trio.CancelScope) -> None:
        with scope:
            await send.send(_msg(1))
            done.append(True)

    scope = trio.CancelScope()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(writer, scope)
        await trio.sleep(1)
        first = receive.receive_nowait()  # wakes the writer ...
        scope.cancel()  # ... which is cancelled before it runs again
    send.close()
    rest = [m async for m in receive]
    assert _numbers([first, *rest]) == [0, 1] and done == [True]


async def test_a_waiting_reader_is_woken_by_a_send_and_ends_at_the_close(
    autojump_clock: trio.testing.MockClock,
) -> None:
    send, receive = open_output_stream(4)
    got: list[Message] = []

    async def reader() -> None:
        async for message in receive:
            got.append(message)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(reader)
        await trio.sleep(1)
        for i in range(3):
            send.send_nowait(_msg(i))
        await trio.sleep(1)
        assert _numbers(got) == [0, 1, 2]
        send.send_nowait(_msg(3))
        with send:  # closed: the reader takes what is left, then ends
            pass
    assert _numbers(got) == [0, 1, 2, 3]
    with pytest.raises(trio.EndOfChannel):
        receive.receive_nowait()
    with pytest.raises(trio.ClosedResourceError):
        send.send_nowait(_msg(4))


async def test_closing_the_reader_breaks_the_writers_and_drops_the_rest(
    autojump_clock: trio.testing.MockClock,
) -> None:
    send, receive = open_output_stream(1)
    send.send_nowait(_msg(0))
    broken: list[BaseException] = []

    async def writer() -> None:
        try:
            await send.send(_msg(1))
        except trio.BrokenResourceError as exc:
            broken.append(exc)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(writer)
        await trio.sleep(1)
        with receive:
            pass
    assert len(broken) == 1
    with pytest.raises(trio.BrokenResourceError):
        send.put_nowait(_msg(2))
    with pytest.raises(trio.ClosedResourceError):
        receive.receive_nowait()


async def test_a_cancelled_reader_loses_no_message(autojump_clock: trio.testing.MockClock) -> None:
    send, receive = open_output_stream(4)
    with trio.move_on_after(1):
        await receive.receive()
    send.send_nowait(_msg(0))
    send.close()
    assert _numbers([m async for m in receive]) == [0]


def test_a_stream_needs_room_for_one_message() -> None:
    with pytest.raises(ValueError, match="capacity must be >= 1, got 0"):
        open_output_stream(0)


async def test_a_slow_reader_holds_the_loop_back(
    autojump_clock: trio.testing.MockClock, tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a buffer of one message, each model request waits for the reader: before the k-th
    request the loop has emitted 1 + 2k messages (the init, then a tool call and its result per
    turn), and at most the buffer's one and the one in the reader's hands are unread."""
    from agents._assembly import query as query_module

    monkeypatch.setattr(query_module, "OUTPUT_BUFFER", 1)

    @tool("noop", "does nothing", {}, annotations=ToolAnnotations(readOnlyHint=True))
    async def noop(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "ok"}]}

    unread_at_ask: list[int] = []
    read: list[Message] = []

    def respond(request: ModelRequest) -> Step:
        turn = len(unread_at_ask)
        unread_at_ask.append(1 + 2 * turn - len(read))
        if turn == 5:
            return Step([text("done")])
        return Step([tool_use("mcp__s__noop", {})])

    options = AgentOptions(
        cwd=str(tmp_path),
        backend=ScriptedBackend(respond),
        tools=[],
        mcp_servers={"s": create_sdk_mcp_server("s", "1", [noop])},
    )
    async for message in query(prompt="go", options=options):
        read.append(message)
        await trio.sleep(1)  # a slow reader
    assert len(unread_at_ask) == 6
    assert max(unread_at_ask) <= 2, unread_at_ask


async def test_two_waiting_readers_get_one_message_each(
    autojump_clock: trio.testing.MockClock,
) -> None:
    send, receive = open_output_stream(4)
    got: list[Message] = []

    async def reader() -> None:
        got.append(await receive.receive())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(reader)
        nursery.start_soon(reader)
        await trio.sleep(1)
        send.send_nowait(_msg(0))
        send.send_nowait(_msg(1))
    assert sorted(_numbers(got)) == [0, 1]
