"""Cancellation and errors in both directions between an asyncio caller and its Trio session."""

from __future__ import annotations

import asyncio
import gc
import os
import time
from pathlib import Path
from typing import Any

import pytest
import trio

from agents.asyncio import (
    ClaudeAgentOptions,
    ClaudeSDKClient,
    ResultMessage,
    StreamEvent,
    ToolResultBlock,
    UserMessage,
    create_sdk_mcp_server,
    query,
    tool,
)
from agents.testing import ScriptedBackend, Step, text, tool_use

from .conftest import assert_nothing_left, leftover_tasks, serving, wait_until_closed


class Boom(Exception):
    """An exception of the program's own."""


def blocking_tool(events: list[str], started: asyncio.Event) -> Any:
    """A server whose ``wait`` tool blocks on asyncio until cancelled, logging what happens."""

    @tool("wait", "Wait for a long time", {"key": str})
    async def wait(args: dict[str, Any]) -> dict[str, Any]:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            events.append("tool cancelled")
            raise
        return {"content": "never"}

    return create_sdk_mcp_server("slow", tools=[wait])


def options_with_blocking_tool(
    project: Path, events: list[str], started: asyncio.Event
) -> ClaudeAgentOptions:
    return ClaudeAgentOptions(
        cwd=str(project),
        tools=[],
        backend=ScriptedBackend([Step([tool_use("mcp__slow__wait", {"key": "x"})])]),
        mcp_servers={"slow": blocking_tool(events, started)},
        allowed_tools=["mcp__slow__wait"],
    )


def test_cancelling_the_reading_task_cancels_the_session_and_leaves_nothing(
    project: Path,
) -> None:
    """task.cancel() on the reader: the tool's asyncio task is cancelled, the reader gets
    CancelledError only once the session has ended, and no task or Trio run is left."""

    async def main() -> list[str]:
        events: list[str] = []
        started = asyncio.Event()
        options = options_with_blocking_tool(project, events, started)

        async def read() -> None:
            async for _ in query(prompt="wait", options=options):
                pass

        reader = asyncio.create_task(read())
        await started.wait()
        reader.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reader
        events.append("reader done")
        assert_nothing_left()
        return events

    assert asyncio.run(main()) == ["tool cancelled", "reader done"]


def test_asyncio_timeout_ends_a_slow_query_with_timeout_error(project: Path) -> None:
    """asyncio.timeout around a query whose model takes a minute: TimeoutError, at once."""
    backend = ScriptedBackend([Step([text("too late")], latency=60)])

    async def main() -> float:
        options = ClaudeAgentOptions(cwd=str(project), tools=[], backend=backend)
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.05):
                async for _ in query(prompt="slow", options=options):
                    pass
        assert_nothing_left()
        return time.monotonic() - started

    assert asyncio.run(main()) < 5


def test_asyncio_timeout_around_a_client_call_ends_its_session(project: Path) -> None:
    """asyncio.timeout around receive_response of a client: TimeoutError; disconnect is clean."""

    async def main() -> list[str]:
        events: list[str] = []
        started = asyncio.Event()
        options = options_with_blocking_tool(project, events, started)
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.2), ClaudeSDKClient(options) as client:
                await client.query("wait")
                async for _ in client.receive_response():
                    pass
        assert_nothing_left()
        return events

    assert asyncio.run(main()) == ["tool cancelled"]


def test_breaking_out_of_a_query_ends_its_session(project: Path) -> None:
    """break after the first message (and closing the generator): the session is over."""

    async def main() -> list[str]:
        events: list[str] = []
        started = asyncio.Event()
        options = options_with_blocking_tool(project, events, started)
        messages = query(prompt="wait", options=options)
        async for _ in messages:
            await started.wait()
            break
        await messages.aclose()  # type: ignore[attr-defined]
        assert_nothing_left()
        return events

    assert asyncio.run(main()) == ["tool cancelled"]


def test_cancelling_while_the_model_streams_closes_the_http_connection(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cancelled mid-response from the fake API: the client's HTTP connection is closed."""
    slow = Step([text(f"part {i}") for i in range(200)], token_latency=0.05)  # 10 s of stream
    with serving([slow]) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")

        async def main() -> None:
            options = ClaudeAgentOptions(cwd=str(project), tools=[], include_partial_messages=True)
            streaming = asyncio.Event()

            async def read() -> None:
                async for message in query(prompt="talk", options=options):
                    if isinstance(message, StreamEvent):
                        streaming.set()

            reader = asyncio.create_task(read())
            await streaming.wait()
            assert server.open_connections == 1
            reader.cancel()
            with pytest.raises(asyncio.CancelledError):
                await reader
            assert_nothing_left()

        asyncio.run(main())
        assert wait_until_closed(server) == 0


def test_cancelling_kills_a_bash_child_process(project: Path) -> None:
    """A Bash tool's child process dies with the cancelled session."""
    pid_file = project / "pid"
    command = f"echo $$ > {pid_file}; exec sleep 300"
    backend = ScriptedBackend([Step([tool_use("Bash", {"command": command})])])

    async def main() -> int:
        options = ClaudeAgentOptions(
            cwd=str(project), tools=["Bash"], backend=backend, permission_mode="bypassPermissions"
        )

        async def read() -> None:
            async for _ in query(prompt="sleep", options=options):
                pass

        reader = asyncio.create_task(read())
        deadline = time.monotonic() + 10
        while not pid_file.exists() or not pid_file.read_text().strip():
            assert time.monotonic() < deadline, "the Bash tool never started"
            await asyncio.sleep(0.01)
        pid = int(pid_file.read_text())
        reader.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reader
        assert_nothing_left()
        return pid

    pid = asyncio.run(main())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_an_exception_from_the_prompt_stream_reaches_the_caller_as_it_is(
    project: Path,
) -> None:
    """The asyncio prompt generator raises: the same exception object reaches the reader."""
    backend = ScriptedBackend([Step([text("one")])])
    raised: list[Boom] = []

    async def main() -> Boom:
        async def prompts() -> Any:
            yield "first"
            await asyncio.sleep(0)
            raised.append(Boom("the input broke"))
            raise raised[0]

        options = ClaudeAgentOptions(cwd=str(project), tools=[], backend=backend)
        with pytest.raises(Boom) as caught:
            async for _ in query(prompt=prompts(), options=options):
                pass
        assert_nothing_left()
        return caught.value

    assert asyncio.run(main()) is raised[0]


def test_an_exception_of_an_asyncio_tool_handler_becomes_its_error_result(
    project: Path,
) -> None:
    """A tool handler raises on asyncio: as under Trio, the model gets an error result naming
    the exception, and the loop goes on."""

    @tool("explode", "Raise", {})
    async def explode(args: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(0)
        raise Boom("the handler broke")

    backend = ScriptedBackend([Step([tool_use("mcp__x__explode", {})]), Step([text("sorry")])])

    async def main() -> list[Any]:
        options = ClaudeAgentOptions(
            cwd=str(project),
            tools=[],
            backend=backend,
            mcp_servers={"x": create_sdk_mcp_server("x", tools=[explode])},
            allowed_tools=["mcp__x__explode"],
        )
        return [m async for m in query(prompt="explode", options=options)]

    messages = asyncio.run(main())
    [error] = [
        b
        for m in messages
        if isinstance(m, UserMessage) and isinstance(m.content, list)
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]
    assert error.is_error and "the handler broke" in str(error.content)
    assert isinstance(messages[-2], ResultMessage) and messages[-2].result == "sorry"


def test_an_error_of_a_client_command_is_raised_by_that_command(project: Path) -> None:
    """set_permission_mode('yolo') raises the session's ValueError; the client goes on."""
    backend = ScriptedBackend([Step([text("still here")])])

    async def main() -> str | None:
        options = ClaudeAgentOptions(cwd=str(project), tools=[], backend=backend)
        async with ClaudeSDKClient(options) as client:
            with pytest.raises(ValueError, match="yolo"):
                await client.set_permission_mode("yolo")
            await client.query("hello")
            results = [m async for m in client.receive_response() if isinstance(m, ResultMessage)]
        return results[0].result

    assert asyncio.run(main()) == "still here"


def test_a_client_left_connected_is_ended_when_asyncio_run_shuts_the_loop(
    project: Path,
) -> None:
    """asyncio.run returns with a client still connected and waiting a minute on its model:
    the loop's shutdown cancels the session at once and leaves no Trio run behind."""
    backend = ScriptedBackend([Step([text("in a minute")], latency=60)])

    async def main() -> None:
        client = ClaudeSDKClient(ClaudeAgentOptions(cwd=str(project), tools=[], backend=backend))
        await client.connect()
        await client.query("wait")
        await asyncio.sleep(0.05)
        # returns without disconnect()

    started = time.monotonic()
    asyncio.run(main())
    assert time.monotonic() - started < 10
    assert not trio.lowlevel.in_trio_run()


def test_the_reader_task_is_the_only_task_while_no_callback_runs(project: Path) -> None:
    """While the model streams, the loop holds the reader and the guest run's keeper only."""
    backend = ScriptedBackend([Step([text("slow")], latency=0.2)])

    async def main() -> set[str]:
        options = ClaudeAgentOptions(cwd=str(project), tools=[], backend=backend)
        names: set[str] = set()

        async def read() -> None:
            async for _ in query(prompt="x", options=options):
                pass

        reader = asyncio.create_task(read(), name="reader")
        await asyncio.sleep(0.05)
        names = {t.get_name() for t in leftover_tasks()}
        await reader
        assert_nothing_left()
        return names

    assert asyncio.run(main()) == {"reader", "agents.asyncio guest run"}


def test_a_reader_of_a_client_ends_quietly_when_another_task_disconnects(
    project: Path,
) -> None:
    """receive_messages() in one task, disconnect() in another: the reader's loop just ends."""
    backend = ScriptedBackend([Step([text("in a minute")], latency=60)])

    async def main() -> int:
        client = ClaudeSDKClient(ClaudeAgentOptions(cwd=str(project), tools=[], backend=backend))
        await client.connect()
        await client.query("wait")

        async def read() -> int:
            return len([m async for m in client.receive_messages()])

        reader = asyncio.create_task(read())
        await asyncio.sleep(0.05)
        await client.disconnect()
        count = await reader
        assert_nothing_left()
        return count

    assert asyncio.run(main()) >= 1  # the init message, then the end


def test_asyncio_run_returning_while_a_query_runs_a_tool_ends_it_without_errors(
    project: Path,
) -> None:
    """main() returns with a reader task still inside a running asyncio tool: the shutdown
    cancels the handler, the session and the guest run; nothing is reported to the loop."""
    events: list[str] = []
    reported: list[dict[str, Any]] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda _, context: reported.append(context))
        started = asyncio.Event()
        options = options_with_blocking_tool(project, events, started)

        async def read() -> None:
            async for _ in query(prompt="wait", options=options):
                pass

        asyncio.create_task(read())  # noqa: RUF006  (left running on purpose)
        await started.wait()

    asyncio.run(main())
    gc.collect()  # a task's unretrieved exception is reported when it is collected
    assert events == ["tool cancelled"]
    assert reported == []
    assert not trio.lowlevel.in_trio_run()


def test_a_prompt_stream_left_early_is_closed_on_its_loop_before_the_caller_resumes(
    project: Path,
) -> None:
    """An asyncio prompt generator the session stops reading (an item refused) is closed
    then, on the caller's loop: its ``finally`` has run when the ValueError reaches the caller
    (before, it ran whenever asyncio's collector found the generator)."""
    backend = ScriptedBackend([Step([text("one")])])

    async def main() -> list[str]:
        closed: list[str] = []

        async def prompts(name: str) -> Any:
            try:
                yield {"type": "user", "message": {"role": "user", "content": 5}}
                yield "never"
            finally:
                await asyncio.sleep(0)  # asyncio code: it runs on the caller's loop
                closed.append(name)

        options = ClaudeAgentOptions(cwd=str(project), tools=[], backend=backend)
        with pytest.raises(ValueError, match=r"^streaming prompt item content must be"):
            async for _ in query(prompt=prompts("query"), options=options):
                pass
        assert closed == ["query"]
        async with ClaudeSDKClient(options) as client:
            with pytest.raises(ValueError, match=r"^streaming prompt item content must be"):
                await client.query(prompts("client"))
            assert closed == ["query", "client"]
        assert_nothing_left()
        return closed

    assert asyncio.run(main()) == ["query", "client"]


def test_a_client_used_from_another_event_loop_says_so_and_its_session_goes_on(
    project: Path,
) -> None:
    """A client connected on one loop, used from a second loop in another thread: its command
    would run the session's Trio code from a second guest run (measured: a bare
    AssertionError from inside Trio). It raises a RuntimeError saying which loop to use, and
    the session still answers on its own loop."""
    import threading

    backend = ScriptedBackend(lambda request: Step([text("ok")]))
    options = ClaudeAgentOptions(cwd=str(project), tools=[], backend=backend)
    errors: list[BaseException] = []
    read: list[str] = []

    async def main() -> list[str | None]:
        async with ClaudeSDKClient(options) as client:

            def other_thread() -> None:
                async def use() -> None:
                    await client.query("from another loop")

                try:
                    asyncio.run(use())
                except BaseException as exc:
                    errors.append(exc)
                read.append(client.session_id)  # with no loop running: a plain read

            thread = threading.Thread(target=other_thread)
            thread.start()
            while thread.is_alive():
                await asyncio.sleep(0.01)
            async with asyncio.timeout(10):  # (a session left hung says so, in time)
                await client.query("from its own loop")
                return [
                    m.result
                    async for m in client.receive_response()
                    if isinstance(m, ResultMessage)
                ]

    assert asyncio.run(main()) == ["ok"]
    assert [type(e) for e in errors] == [RuntimeError]
    assert str(errors[0]).startswith("AgentClient is connected on another event loop")
    assert len(read) == 1


def test_a_command_to_a_client_whose_session_failed_says_it_is_closed(project: Path) -> None:
    """The session ended by a tool's BaseException (the reader got it): a later command
    raised the mailbox's ClosedResourceError (query) or did nothing (interrupt, set_model);
    each says the client is closed."""

    class Fatal(BaseException):
        """A BaseException of the program's own."""

    @tool("boom", "Raise", {"x": str})
    async def boom(args: dict[str, Any]) -> dict[str, Any]:
        raise Fatal("stop")

    options = ClaudeAgentOptions(
        cwd=str(project),
        tools=[],
        backend=ScriptedBackend(lambda request: Step([tool_use("mcp__t__boom", {"x": "1"})])),
        mcp_servers={"t": create_sdk_mcp_server("t", tools=[boom])},
        permission_mode="bypassPermissions",
    )

    async def main() -> list[str]:
        client = ClaudeSDKClient(options)
        await client.connect()
        await client.query("go")
        with pytest.raises(Fatal):
            async for _ in client.receive_messages():
                pass
        said: list[str] = []
        for command in (
            lambda: client.query("again"),
            client.interrupt,
            lambda: client.set_model("opus"),
        ):
            with pytest.raises(RuntimeError) as info:
                await command()
            said.append(str(info.value))
        await client.disconnect()
        assert_nothing_left()
        return said

    closed = "AgentClient is closed: its session has ended; open it again with 'async with client'"
    assert asyncio.run(main()) == [closed] * 3
