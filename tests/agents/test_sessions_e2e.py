"""Sessions end to end: every message recorded, resume, continue, fork, truncate, corrupt lines."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

import agents
from agents import (
    AgentOptions,
    PermissionResultDeny,
    ResultMessage,
    SystemMessage,
    ToolAnnotations,
    UserMessage,
    create_sdk_mcp_server,
    tool,
)
from agents._loop.session import Session, Transcripts
from agents.messages import AssistantMessage
from agents.sessions import (
    INTERRUPTED_TOOL_RESULT,
    FileSessionStore,
    InMemorySessionStore,
    SessionKey,
    SessionNotFoundError,
    get_session_messages,
    project_key_for,
)
from agents.testing import ScriptedBackend, Step, text, tool_use

from .helpers import collect, result_of, timed_tools

#: a well-formed session id no store holds
UNKNOWN_SESSION = "00000000-0000-4000-8000-000000000000"

_REPO = Path(agents.__file__).resolve().parents[1]


def tool_script() -> list[Step]:
    return [
        Step([text("Looking."), tool_use("mcp__t__look", {"key": "a"})]),
        Step([text("Done with the first.")]),
    ]


def options(project: Path, backend: ScriptedBackend, **kw: Any) -> AgentOptions:
    log: list[tuple[str, str, float]] = []
    return AgentOptions(
        cwd=str(project),
        backend=backend,
        tools=[],
        mcp_servers={"t": timed_tools(log, {"a": 1})},
        **kw,
    )


async def first_session(project: Path, **kw: Any) -> tuple[str, list[Any]]:
    """Run a tool-using prompt; returns its session id and the history it built."""
    backend = ScriptedBackend(tool_script())
    messages, error = await collect("first", options(project, backend, **kw))
    assert error is None
    return result_of(messages).session_id, [
        *backend.requests[1].messages,
        {"role": "assistant", "content": [{"type": "text", "text": "Done with the first."}]},
    ]


def transcript_file(project: Path, session_id: str) -> Path:
    """The main transcript's file of session ``session_id`` in the default store."""
    return FileSessionStore().path_for(SessionKey(project_key_for(project), session_id))


async def test_every_message_of_the_main_agent_is_recorded(project: Path) -> None:
    """Prompt, each assistant block, the tool result and the result are in the transcript."""
    backend = ScriptedBackend(tool_script())
    messages, _ = await collect("first", options(project, backend))
    sid = result_of(messages).session_id
    recorded = await get_session_messages(sid, cwd=project)
    kinds = [type(m).__name__ for m in recorded]
    assert kinds == [
        "UserMessage",
        "AssistantMessage",
        "AssistantMessage",
        "UserMessage",
        "AssistantMessage",
        "ResultMessage",
    ]
    streamed = [m for m in messages if not isinstance(m, SystemMessage)]
    assert recorded[1:] == streamed
    assert recorded[0] == UserMessage(content="first", uuid=recorded[0].uuid, session_id=sid)


async def test_resume_restores_the_history_and_appends_to_the_same_transcript(
    project: Path,
) -> None:
    """resume=<id>: the next request carries the whole earlier conversation."""
    sid, history = await first_session(project)
    backend = ScriptedBackend([Step([text("second answer")])])
    messages, _ = await collect("second", options(project, backend, resume=sid))
    assert result_of(messages).session_id == sid
    assert backend.requests[0].messages == [*history, {"role": "user", "content": "second"}]
    recorded = await get_session_messages(sid, cwd=project)
    assert isinstance(recorded[-1], ResultMessage) and recorded[-1].result == "second answer"
    assert len([m for m in recorded if isinstance(m, ResultMessage)]) == 2


async def test_fork_copies_under_a_new_id_and_leaves_the_original_untouched(
    project: Path,
) -> None:
    """fork_session=True: new id, same history, original file byte-identical."""
    sid, history = await first_session(project)
    path = transcript_file(project, sid)
    before = path.read_bytes()
    new_id = str(uuid.uuid4())
    backend = ScriptedBackend([Step([text("forked answer")])])
    messages, _ = await collect(
        "in the fork", options(project, backend, resume=sid, fork_session=True, session_id=new_id)
    )
    assert result_of(messages).session_id == new_id
    assert backend.requests[0].messages[:-1] == history
    assert path.read_bytes() == before
    forked = await get_session_messages(new_id, cwd=project)
    assert isinstance(forked[-1], ResultMessage) and forked[-1].result == "forked answer"


async def test_continue_conversation_resumes_the_newest_session_of_cwd(
    project: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """continue_conversation=True picks the most recent session of the directory."""
    await first_session(project)
    await trio.sleep(1)
    sid, history = await first_session(project)
    backend = ScriptedBackend([Step([text("continued")])])
    messages, _ = await collect("again", options(project, backend, continue_conversation=True))
    assert result_of(messages).session_id == sid
    assert backend.requests[0].messages[:-1] == history


async def test_continue_conversation_without_sessions_starts_a_new_one(project: Path) -> None:
    backend = ScriptedBackend([Step([text("fresh")])])
    messages, _ = await collect("hi", options(project, backend, continue_conversation=True))
    assert backend.requests[0].messages == [{"role": "user", "content": "hi"}]
    assert result_of(messages).result == "fresh"


async def test_resume_session_at_truncates_after_that_message(project: Path) -> None:
    """resume_session_at=<uuid>: the history stops at that message."""
    sid, _ = await first_session(project)
    recorded = await get_session_messages(sid, cwd=project)
    first_text = recorded[1]
    assert isinstance(first_text, AssistantMessage)
    backend = ScriptedBackend([Step([text("from the branch")])])
    await collect(
        "branch", options(project, backend, resume=sid, resume_session_at=first_text.uuid)
    )
    assert backend.requests[0].messages == [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": [{"type": "text", "text": "Looking."}]},
        {"role": "user", "content": "branch"},
    ]


async def test_session_id_names_a_new_session(project: Path) -> None:
    sid = str(uuid.uuid4())
    backend = ScriptedBackend([Step([text("hi")])])
    messages, _ = await collect("hi", options(project, backend, session_id=sid))
    assert messages[0].data["session_id"] == sid  # type: ignore[union-attr]
    assert result_of(messages).session_id == sid
    assert len(await get_session_messages(sid, cwd=project)) == 3


async def test_a_session_id_already_in_use_is_refused(project: Path) -> None:
    """A new session under an id the project holds would have appended a second conversation
    to the first's transcript, whose resume then no longer followed the first one (as Claude
    Code's ``--session-id``, it is refused, naming what to do); a fork onto one too."""
    sid, _ = await first_session(project)
    before = transcript_file(project, sid).read_bytes()
    backend = ScriptedBackend([Step([text("never")])])
    wanted = rf"^session_id '{sid}' is already in use in this project: resume it with resume="
    with pytest.raises(ValueError, match=wanted):
        await collect("again", options(project, backend, session_id=sid))
    other, _ = await first_session(project)
    with pytest.raises(ValueError, match=wanted):
        await collect("fork", options(project, backend, resume=other, fork_session=True,
                                      session_id=sid))  # fmt: skip
    assert transcript_file(project, sid).read_bytes() == before
    assert backend.requests == []


async def test_resuming_an_unknown_session_raises(project: Path) -> None:
    backend = ScriptedBackend([Step([text("never")])])
    with pytest.raises(SessionNotFoundError, match=rf"^no session '{UNKNOWN_SESSION}' in project "):
        await collect("hi", options(project, backend, resume=UNKNOWN_SESSION))


def test_resume_session_at_without_resume_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^resume_session_at needs resume=<session id>"):
        AgentOptions(resume_session_at="x")


async def test_a_custom_store_receives_the_transcript(project: Path) -> None:
    """session_store=InMemorySessionStore(): recorded there, resumable from there."""
    store = InMemorySessionStore()
    sid, history = await first_session(project, session_store=store)
    backend = ScriptedBackend([Step([text("again")])])
    await collect("more", options(project, backend, resume=sid, session_store=store))
    assert backend.requests[0].messages[:-1] == history
    assert len(await get_session_messages(sid, cwd=project, store=store)) == 9


async def test_a_corrupt_line_is_reported_with_file_and_line(project: Path) -> None:
    """A corrupt line: resume uses the entries before it and says so in an informational message."""
    sid, _ = await first_session(project)
    path = transcript_file(project, sid)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join([*lines[:4], b'{"not": "an entry"\n', *lines[5:]]))
    backend = ScriptedBackend([Step([text("ok")])])
    messages, _ = await collect("more", options(project, backend, resume=sid))
    notes = [
        m.data["message"]
        for m in messages
        if isinstance(m, SystemMessage) and m.subtype == "informational"
    ]
    assert notes[0].startswith(f"{path}:5: corrupt line")
    assert notes[1:] == [
        f"{path}: kept 4 of 6 entries, dropped 2: 1 unreadable, 1 descending from dropped entries"
    ]
    # the 4 entries before it: prompt, two blocks and the tool result
    assert len(backend.requests[0].messages) == 4


async def test_a_dangling_tool_call_is_answered_as_interrupted_and_reported(
    project: Path,
) -> None:
    """A transcript ending in an unanswered tool call resumes with an interrupted result."""
    sid, _ = await first_session(project)
    path = transcript_file(project, sid)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:3]))  # prompt, text block, tool_use block
    for attempt in range(2):  # reported once: the repair is recorded
        backend = ScriptedBackend([Step([text("ok")])])
        messages, _ = await collect("more", options(project, backend, resume=sid))
        sent = backend.requests[0].messages
        assert sent[2]["content"][0]["content"] == INTERRUPTED_TOOL_RESULT
        assert sent[2]["content"][0]["is_error"] is True
        notes = [
            m for m in messages if isinstance(m, SystemMessage) and m.subtype == "informational"
        ]
        if attempt == 0:
            assert len(notes) == 1 and "answered as interrupted" in notes[0].data["message"]
        else:
            assert notes == []


async def test_a_subagent_transcript_goes_under_the_session(project: Path) -> None:
    """Session.agent_transcript: <session>/subagents/agent-<id>, its own chain."""
    store = InMemorySessionStore()

    class FakeSession:
        session_id = "s1"
        transcripts: Any = None

    session: Any = FakeSession()
    assert Session.agent_transcript(session, "a1") is None
    session.transcripts = Transcripts(store, "-p")
    transcript = Session.agent_transcript(session, "a1")
    assert transcript is not None
    await transcript.record(UserMessage(content="task"))
    key = SessionKey("-p", "s1", "subagents/agent-a1")
    loaded = await store.load(key)
    assert loaded is not None and loaded[0].agent_id == "a1"
    assert await store.list_subkeys(SessionKey("-p", "s1")) == ["subagents/agent-a1"]


# -- a real query killed with SIGKILL --------------------------------------------------------------

_RUNNER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[1])
    import trio
    from agents import AgentOptions, query, tool, create_sdk_mcp_server
    from agents.testing import ScriptedBackend, Step, text, tool_use

    @tool("slow", "sleeps", {"i": int})
    async def slow(args):
        await trio.sleep(0.05 if args["i"] < 3 else 60)
        return {"content": [{"type": "text", "text": f"done {args['i']}"}]}

    backend = ScriptedBackend(
        [Step([text(f"step {i}"), tool_use("mcp__s__slow", {"i": i})], latency=0.02)
         for i in range(5)]
    )
    options = AgentOptions(
        cwd=sys.argv[2], backend=backend, tools=[], session_id=sys.argv[3],
        permission_mode="bypassPermissions",
        mcp_servers={"s": create_sdk_mcp_server("s", "1", [slow])},
    )

    async def main():
        async for message in query(prompt="work", options=options):
            print(type(message).__name__, flush=True)

    trio.run(main)
    """
)


async def test_a_query_killed_with_sigkill_resumes_with_every_completed_message(
    project: Path, tmp_path: Path
) -> None:
    """SIGKILL while the 4th tool call runs: resume sees the 3 finished turns and the dangling
    call answered as interrupted."""
    script = tmp_path / "runner.py"
    script.write_text(_RUNNER)
    sid = str(uuid.uuid4())
    proc = await trio.lowlevel.open_process(
        [sys.executable, str(script), str(_REPO), str(project), sid],
        stdout=subprocess.PIPE,
        env=dict(os.environ),
    )
    assert proc.stdout is not None
    out = bytearray()
    try:
        with trio.fail_after(60):
            # init, then per turn: a text block and a tool_use block, then the tool's result
            while out.count(b"AssistantMessage") < 8:
                chunk = await proc.stdout.receive_some()
                assert chunk, f"the runner exited early: {out.decode()}"
                out += chunk
            await trio.sleep(0.2)  # the 4th call is sleeping
    finally:
        proc.send_signal(signal.SIGKILL)
    with trio.fail_after(30):
        assert await proc.wait() == -signal.SIGKILL

    backend = ScriptedBackend([Step([text("resumed")])])
    messages, error = await collect("go on", AgentOptions(cwd=str(project), backend=backend,
                                                           tools=[], resume=sid))  # fmt: skip
    assert error is None
    sent = backend.requests[0].messages
    assert sent[0] == {"role": "user", "content": "work"}
    assert len(sent) == 1 + 4 * 2 + 1
    for i in range(4):
        assistant, results = sent[1 + 2 * i], sent[2 + 2 * i]
        assert [b["type"] for b in assistant["content"]] == ["text", "tool_use"]
        expected = f"done {i}" if i < 3 else INTERRUPTED_TOOL_RESULT
        content = results["content"][0]["content"]
        assert (content if isinstance(content, str) else content[0]["text"]) == expected
    assert sent[-1] == {"role": "user", "content": "go on"}
    notes = [m for m in messages if isinstance(m, SystemMessage) and m.subtype == "informational"]
    assert len(notes) == 1 and "answered as interrupted" in notes[0].data["message"]


@pytest.mark.parametrize("store", ["file", "memory"])
async def test_a_call_finishing_as_the_turn_is_interrupted_is_answered_once(
    project: Path, autojump_clock: trio.testing.MockClock, store: str
) -> None:
    """A call whose result is recorded in the very step a denial interrupts the turn keeps its
    result, once: in the stream, in the history sent to the model and after a resume (it was
    answered a second time, 'Interrupted by user', and the transcript's chain forked)."""
    finished = trio.Event()

    @tool("slow", "waits", {"i": int}, annotations=ToolAnnotations(readOnlyHint=True))
    async def slow(args: dict[str, Any]) -> dict[str, Any]:
        await finished.wait()
        return {"content": [{"type": "text", "text": "slow done"}]}

    @tool("gated", "asks", {"i": int}, annotations=ToolAnnotations(readOnlyHint=True))
    async def gated(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "gated done"}]}

    async def deny(name: str, tool_input: dict[str, Any], context: Any) -> Any:
        await trio.sleep(1)
        finished.set()  # `slow` ends in the step that interrupts the turn
        return PermissionResultDeny(message="stop", interrupt=True)

    server = create_sdk_mcp_server("b", "1", [slow, gated])
    sessions = InMemorySessionStore() if store == "memory" else None
    backend = ScriptedBackend(
        [Step([tool_use("mcp__b__slow", {"i": 1}, id="s1"),
               tool_use("mcp__b__gated", {"i": 2}, id="g1")]),
         Step([text("never")])]
    )  # fmt: skip
    settings = {"permissions": {"ask": ["mcp__b__gated"]}}
    common: dict[str, Any] = {"cwd": str(project), "tools": [], "mcp_servers": {"b": server}}
    messages, _ = await collect(
        "go",
        AgentOptions(
            backend=backend, can_use_tool=deny, settings=settings, session_store=sessions,
            **common,
        ),
    )  # fmt: skip
    streamed = [
        (b.tool_use_id, b.content)
        for m in messages
        if isinstance(m, UserMessage) and isinstance(m.content, list)
        for b in m.content
    ]
    assert sorted(streamed) == [("g1", "stop"), ("s1", [{"type": "text", "text": "slow done"}])]
    again = ScriptedBackend([Step([text("resumed")])])
    await collect(
        "more",
        AgentOptions(
            backend=again, resume=result_of(messages).session_id, session_store=sessions,
            **common,
        ),
    )  # fmt: skip
    results = [
        (item["tool_use_id"], item["content"])
        for message in again.requests[0].messages
        if isinstance(message["content"], list)
        for item in message["content"]
        if item.get("type") == "tool_result"
    ]
    assert sorted(results) == [("g1", "stop"), ("s1", [{"type": "text", "text": "slow done"}])]
