"""AgentClient used the wrong way: each misuse is refused at once with an error saying what is
wrong, and the session (if one is open) goes on as if nothing had happened."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from agents import AgentClient, AgentOptions, ResultMessage, query
from agents.testing import ScriptedBackend, Step, text

CLOSED = r"^AgentClient is closed: its session has ended; open it again with 'async with client'$"


def answering_options(project: Path) -> AgentOptions:
    backend = ScriptedBackend(lambda request: Step([text("ok")]))
    return AgentOptions(cwd=str(project), backend=backend, tools=[])


async def answer(client: AgentClient, prompt: str) -> ResultMessage:
    await client.query(prompt)
    result = None
    async for message in client.receive_response():
        if isinstance(message, ResultMessage):
            result = message
    assert result is not None
    return result


async def test_entering_an_open_client_again_is_refused_and_its_session_goes_on(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """A second ``async with`` on an open client would start a second session over the first
    and leave its nursery open (Trio's cancel scope stack corrupted): it is refused."""
    client = AgentClient(answering_options(project))
    async with client:
        with pytest.raises(RuntimeError, match=r"^AgentClient is already open"):
            async with client:
                pass  # pragma: no cover
        assert (await answer(client, "still there?")).result == "ok"
    await trio.lowlevel.checkpoint()  # the run is healthy


COMMANDS: dict[str, Callable[[AgentClient], Awaitable[Any]]] = {
    "query": lambda c: c.query("hi"),
    "interrupt": lambda c: c.interrupt(),
    "set_model": lambda c: c.set_model("claude-sonnet-4-5"),
    "set_permission_mode": lambda c: c.set_permission_mode("plan"),
    "stop_task": lambda c: c.stop_task("main/worker-1"),
    "spawn": lambda c: c.spawn("general-purpose"),
    "mcp_server_status": lambda c: c.mcp_server_status(),
}


@pytest.mark.parametrize("command", COMMANDS)
async def test_a_command_to_a_closed_client_says_it_is_closed(
    project: Path, autojump_clock: trio.testing.MockClock, command: str
) -> None:
    """After the block, a command would act on nothing (interrupt, set_model: silently) or fail
    with the mailbox's ClosedResourceError: each says the client is closed instead."""
    async with AgentClient(answering_options(project)) as client:
        await answer(client, "hi")
    with pytest.raises(RuntimeError, match=CLOSED):
        await COMMANDS[command](client)


@pytest.mark.parametrize("reader", ["receive_messages", "receive_response"])
async def test_reading_a_closed_client_says_it_is_closed(
    project: Path, autojump_clock: trio.testing.MockClock, reader: str
) -> None:
    """Reading after the block found an empty stream, as if the session had said nothing."""
    async with AgentClient(answering_options(project)) as client:
        await answer(client, "hi")
    with pytest.raises(RuntimeError, match=CLOSED):
        getattr(client, reader)()


async def test_a_closed_client_still_tells_its_session_id_and_spend(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """What the ended session was (its id, to resume it; what it spent) stays readable."""
    async with AgentClient(answering_options(project)) as client:
        session_id = client.session_id
        await answer(client, "hi")
    assert client.session_id == session_id
    assert client.spend() is not None
    assert client.statistics() is not None


async def test_a_closed_client_opens_again_with_a_new_session(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """Closing is not the end of the object: ``async with`` again starts a fresh session."""
    client = AgentClient(answering_options(project))
    async with client:
        first = client.session_id
    async with client:
        assert (await answer(client, "again")).result == "ok"
        assert client.session_id != first


async def test_leaving_a_client_never_entered_says_it_is_not_open(project: Path) -> None:
    """``__aexit__`` without ``__aenter__`` (an ExitStack gone wrong): a clear error, not a bare
    AssertionError."""
    client = AgentClient(answering_options(project))
    with pytest.raises(RuntimeError, match=r"^AgentClient is not open"):
        await client.__aexit__(None, None, None)


async def test_stop_task_refuses_the_main_agent_and_the_session_goes_on(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """The main agent is not a task: stopping it ended the whole session silently (the next
    prompt was queued, never answered, and the stream ended). It is refused, naming what
    cancels the main agent's turn instead."""
    async with AgentClient(answering_options(project)) as client:
        with pytest.raises(
            ValueError, match=r"^'main' is the main agent, not a task: interrupt\(\) cancels its"
        ):
            await client.stop_task("main")
        assert (await answer(client, "still there?")).result == "ok"


def user(content: Any) -> dict[str, Any]:
    return {"type": "user", "message": {"role": "user", "content": content}}


#: stream items of the Agent SDK's shape whose content is wrong, and what the error says
MALFORMED = {
    "a number": (
        user(5),
        r"^streaming prompt item content must be a str or a list of content blocks "
        r"\(dicts with a 'type'\), got int$",
    ),
    "None": (
        user(None),
        r"^streaming prompt item content must be a str or a list of content blocks "
        r"\(dicts with a 'type'\), got NoneType$",
    ),
    "a list with a number": (
        user([{"type": "text", "text": "a"}, 5]),
        r"^streaming prompt item content\[1\] must be a dict with a 'type', got int$",
    ),
    "a text block without text": (
        user([{"type": "text"}]),
        r"^streaming prompt item content\[0\] is not a valid 'text' block: "
        r"Object missing required field `text`$",
    ),
    "a message that is a string": (
        {"type": "user", "message": "hello"},
        r"^streaming prompt items must be str or \{'type': 'user', 'message': ",
    ),
}


async def stream_of(*items: Any) -> AsyncIterator[Any]:
    for item in items:
        yield item


@pytest.mark.parametrize("case", MALFORMED)
async def test_a_malformed_stream_item_is_refused_by_client_query_and_the_session_goes_on(
    project: Path, autojump_clock: trio.testing.MockClock, case: str
) -> None:
    """An item whose content is not the Messages API's was queued, then crashed the whole
    session deep in the loop (TypeError, AttributeError, msgspec's ValidationError out of
    ``async with``). ``client.query`` refuses it with a ValueError naming what is wrong."""
    item, message = MALFORMED[case]
    async with AgentClient(answering_options(project)) as client:
        with pytest.raises(ValueError, match=message):
            await client.query(stream_of(item))
        assert (await answer(client, "still there?")).result == "ok"


@pytest.mark.parametrize("case", MALFORMED)
async def test_a_malformed_stream_item_ends_a_query_with_a_value_error(
    project: Path, autojump_clock: trio.testing.MockClock, case: str
) -> None:
    """The same item in ``query(prompt=stream)``: the caller gets the ValueError itself (as
    for any failure of the stream: the session is cancelled), not the loop's TypeError."""
    item, message = MALFORMED[case]
    with pytest.raises(ValueError, match=message):
        async for _ in query(prompt=stream_of("first", item), options=answering_options(project)):
            pass


async def test_a_well_formed_list_of_blocks_still_goes_to_the_model(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """The control: text and image blocks (a type the stream does not show) pass as they are."""
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": ""}}
    content = [{"type": "text", "text": "look"}, image]
    backend = ScriptedBackend(lambda request: Step([text("ok")]))
    options = AgentOptions(cwd=str(project), backend=backend, tools=[])
    async with AgentClient(options) as client:
        await client.query(stream_of(user(content)))
        async for _ in client.receive_response():
            pass
    assert backend.requests[0].messages == [{"role": "user", "content": content}]


async def test_a_prompt_stream_left_early_is_closed_at_once(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """A stream the session stops reading (an item refused, a cancellation) is closed then, so
    its ``finally`` runs before ``client.query`` raises, not whenever the collector finds it."""
    closed: list[str] = []

    async def prompts(name: str) -> AsyncIterator[Any]:
        try:
            yield user(5)
            yield "never"
        finally:
            closed.append(name)

    async def waiting() -> AsyncIterator[Any]:
        try:
            await trio.sleep_forever()
            yield "never"  # pragma: no cover
        finally:
            closed.append("waiting")

    async with AgentClient(answering_options(project)) as client:
        with pytest.raises(ValueError):
            await client.query(prompts("refused"))
        assert closed == ["refused"]
        with trio.move_on_after(1):
            await client.query(waiting())
        assert closed == ["refused", "waiting"]
    with pytest.raises(ValueError):
        async for _ in query(prompt=prompts("query"), options=answering_options(project)):
            pass
    assert closed == ["refused", "waiting", "query"]
