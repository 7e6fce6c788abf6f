"""Work that grows with the input runs off the event loop: large appends, long resumes/rebuilds.

(How long each step holds the loop is measured by benchmarks/bench_event_loop.py; these tests
pin the mechanism: the work happens in a worker thread, not on the Trio thread.)
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agents.sessions.entry
import agents.sessions.file_store
import agents.sessions.history
import agents.sessions.memory_store
import agents.sessions.transcript
from agents.messages import ResultMessage, ToolResultBlock, UserMessage
from agents.sessions import (
    FileSessionStore,
    InMemorySessionStore,
    SessionKey,
    Transcript,
    TranscriptEntry,
    rebuild_history,
)
from agents.sessions.entry import LARGE_APPEND_BYTES, is_large, is_large_entry, rough_size


def threads_of(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    """Patch ``module.name`` to note the thread each call runs in."""
    seen: list[int] = []
    original: Callable[..., Any] = getattr(module, name)

    def noting(*args: Any, **kwargs: Any) -> Any:
        seen.append(threading.get_ident())
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, noting)
    return seen


def big_result(size: int) -> UserMessage:
    return UserMessage(content=[ToolResultBlock("toolu_1", "x" * size)])


def chain(n: int) -> list[TranscriptEntry]:
    out: list[TranscriptEntry] = []
    for i in range(n):
        message = UserMessage(content=f"p{i}")
        parent = out[-1].uuid if out else None
        out.append(TranscriptEntry(uuid=f"u{i}", parent_uuid=parent, session_id="s",
                                   timestamp=float(i), message=message))  # fmt: skip
    return out


def test_is_large_measures_texts_and_stops_early() -> None:
    """A tool result's text counts by length; a message of many items counts each item."""
    [small] = chain(1)
    assert not is_large([small])
    huge = TranscriptEntry(uuid="u", parent_uuid=None, session_id="s", timestamp=0.0,
                           message=big_result(LARGE_APPEND_BYTES + 1))  # fmt: skip
    assert is_large([huge])
    many = TranscriptEntry(uuid="u", parent_uuid=None, session_id="s", timestamp=0.0,
                           message=UserMessage(content=[ToolResultBlock(f"t{i}", [{"a": 1}])
                                                        for i in range(100_000)]))  # fmt: skip
    assert is_large([many])
    assert is_large(chain(20_000))


def test_is_large_entry_agrees_with_is_large() -> None:
    """The one-entry check every recorded message takes says what ``is_large`` says, for the
    shapes it fast-paths (a prompt's text, a tool's flat data) and those it hands on."""
    from agents.messages import AssistantMessage, TextBlock

    def result(**fields: Any) -> ResultMessage:
        return ResultMessage(subtype="success", duration_ms=1, duration_api_ms=1,
                             is_error=False, num_turns=1, session_id="s", **fields)  # fmt: skip

    def entry(message: Any) -> TranscriptEntry:
        return TranscriptEntry(uuid="u", parent_uuid=None, session_id="s", timestamp=0.0,
                               message=message)  # fmt: skip

    big = "x" * (LARGE_APPEND_BYTES // 4 + 1)
    flat = {"status": "async_launched", "agentId": "main/a-1", "n": 3, "ok": None}
    nested = {"status": "done", "files": ["a.py", "b.py"]}
    cases = [
        UserMessage(content="hi"),
        UserMessage(content=big),
        UserMessage(content=[ToolResultBlock("t", "ok")], tool_use_result=flat),
        UserMessage(content=[ToolResultBlock("t", "ok")], tool_use_result={"big": big}),
        UserMessage(content=[ToolResultBlock("t", "ok")], tool_use_result=nested),
        UserMessage(content="hi", tool_use_result={"k": big}),
        AssistantMessage(content=[TextBlock(big)], model="m"),
        big_result(LARGE_APPEND_BYTES + 1),
        result(result="done", model_usage={"m": {"input_tokens": 1}}),
        result(result=big),
    ]
    for message in cases:
        assert is_large_entry(entry(message)) == is_large([entry(message)]), message
    assert [is_large_entry(entry(m)) for m in cases] == [
        False, True, False, True, False, True, False, True, False, True
    ]


#: a tool result's content items: texts (of lengths around a drawn limit), other items
content_items = st.lists(
    st.one_of(
        st.integers(0, 3000).map(lambda n: {"type": "text", "text": "x" * n}),
        st.just({"type": "image", "source": {"data": "abc"}}),
        st.just({"type": "text", "text": "t", "extra": 1}),
    ),
    max_size=8,
)


@settings(max_examples=300, deadline=None)
@given(
    items=content_items,
    limit=st.integers(0, 14_000),
    data=st.one_of(st.none(), st.just({"status": "done", "n": 3})),
)
def test_is_large_entry_agrees_with_is_large_on_content_items(
    items: list[dict[str, Any]], limit: int, data: dict[str, Any] | None
) -> None:
    """A tool result given as content items (an MCP tool's, on every such call's path) is
    measured by the one-entry check as ``is_large`` measures it, whatever the limit."""
    message = UserMessage(content=[ToolResultBlock("t", items)], tool_use_result=data)
    item = TranscriptEntry(uuid="u", parent_uuid=None, session_id="s", timestamp=0.0,
                           message=message)  # fmt: skip
    assert is_large_entry(item, limit) == is_large([item], limit)


def test_a_flat_tool_data_counts_as_the_walk_counts_it() -> None:
    """The flat-dict shortcut for a tool's data adds up to what ``rough_size`` walks to: a
    dict just under the limit by the walk's count is under it by the shortcut's too."""
    flat = {"status": "async_launched", "agentId": "main/a-1", "n": 3, "ok": None}
    message = UserMessage(content="", tool_use_result=flat)
    item = TranscriptEntry(uuid="u", parent_uuid=None, session_id="s", timestamp=0.0,
                           message=message)  # fmt: skip
    size = 128 + 4 * 0 + rough_size(flat, 1 << 30)  # the entry, its empty text, the data
    assert not is_large([item], limit=size)
    assert is_large([item], limit=size - 1)


def test_is_large_measures_text_items_of_a_tool_result_by_length() -> None:
    """A tool result given as text items (an MCP tool's) counts each text by its length, and
    any other item by the walk."""

    def entry(items: list[dict[str, Any]]) -> TranscriptEntry:
        message = UserMessage(content=[ToolResultBlock("t", items)])
        return TranscriptEntry(uuid="u", parent_uuid=None, session_id="s", timestamp=0.0,
                               message=message)  # fmt: skip

    half = "x" * (LARGE_APPEND_BYTES // 2)
    assert not is_large([entry([{"type": "text", "text": "ok"}])])
    assert is_large([entry([{"type": "text", "text": half}, {"type": "text", "text": half}])])
    image = {"type": "image", "source": {"data": half + half}}
    assert is_large([entry([{"type": "text", "text": "ok"}, image])])


def test_is_large_measures_the_parts_of_a_result_that_can_grow() -> None:
    """A ``ResultMessage`` counts its fixed fields as a whole, but its text, errors, denials,
    structured output, deferred call and per-model usage each count by their size."""

    def entry(**fields: Any) -> TranscriptEntry:
        message = ResultMessage(subtype="success", duration_ms=1, duration_api_ms=1,
                                is_error=False, num_turns=1, session_id="s", **fields)
        return TranscriptEntry(uuid="u", parent_uuid=None, session_id="s", timestamp=0.0,
                               message=message)  # fmt: skip

    big = "x" * LARGE_APPEND_BYTES
    usage = {"input_tokens": 1, "output_tokens": 2, "cost_usd": 0.5}
    assert not is_large([entry(result="done", model_usage={"m": usage})])
    assert is_large([entry(result=big)])
    assert is_large([entry(errors=[big])])
    assert is_large([entry(permission_denials=[{"tool_input": {"command": big}}])])
    assert is_large([entry(structured_output={"answer": big})])
    assert is_large([entry(deferred_tool_use={"input": {"x": big}})])
    assert is_large([entry(model_usage={big: usage})])
    assert is_large([entry(model_usage={"m": {"odd": [big]}})])


@pytest.mark.parametrize("store_kind", ["file", "memory"])
async def test_a_huge_tool_result_is_encoded_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store_kind: str
) -> None:
    """Recording a 3 MB tool result encodes it in a worker thread; a small one on the loop."""
    module = agents.sessions.file_store if store_kind == "file" else agents.sessions.memory_store
    # a small append: the file store encodes its lines in one call, the memory store line
    # after line into a reused buffer; a large one: the file store by pieces, the memory store
    # line after line
    small = threads_of(
        monkeypatch,
        module,
        "encode_lines" if module is agents.sessions.file_store else "encode_into",
    )
    large = threads_of(
        monkeypatch,
        module,
        "encode_in_pieces_into" if module is agents.sessions.file_store else "encode_entry_into",
    )
    store = FileSessionStore(tmp_path) if store_kind == "file" else InMemorySessionStore()
    transcript = Transcript(store, SessionKey("-p", "s"))
    await transcript.record(big_result(3 << 20))
    assert large and threading.get_ident() not in large
    assert not small
    await transcript.record(big_result(10))
    assert small == [threading.get_ident()]
    assert len(await store.load(transcript.key) or []) == 2


async def test_a_long_history_is_rebuilt_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """rebuild_history of a long transcript runs in a worker thread; a short one inline."""
    seen = threads_of(monkeypatch, agents.sessions.history, "history_from_entries")
    long = chain(agents.sessions.history.INLINE_REBUILD_ENTRIES + 1)
    history = await rebuild_history(long)
    assert len(history) == 1 and len(history[0]["content"]) == len(long)
    assert seen and threading.get_ident() not in seen
    seen.clear()
    await rebuild_history(long[:3])
    assert seen == [threading.get_ident()]


async def test_a_long_transcript_is_resumed_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Following the branches of a long transcript happens in a worker thread."""
    seen = threads_of(monkeypatch, agents.sessions.transcript, "active_branch")
    store = InMemorySessionStore()
    key = SessionKey("-p", "s")
    long = chain(agents.sessions.history.INLINE_REBUILD_ENTRIES + 1)
    await store.append(key, long)
    _, report = await Transcript.resume(store, key)
    assert report.entries == long
    assert seen and threading.get_ident() not in seen


@pytest.mark.parametrize("store_kind", ["file", "memory"])
async def test_a_batch_with_a_huge_entry_is_encoded_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store_kind: str
) -> None:
    """``record_all`` (a response's blocks) sends a batch that may be large to the store's
    ``append`` (a worker thread), and a small one through ``append_nowait``, on the loop."""
    module = agents.sessions.file_store if store_kind == "file" else agents.sessions.memory_store
    large = threads_of(
        monkeypatch,
        module,
        "encode_in_pieces_into" if module is agents.sessions.file_store else "encode_entry_into",
    )
    small = threads_of(
        monkeypatch,
        module,
        "encode_lines" if module is agents.sessions.file_store else "encode_into",
    )
    store = FileSessionStore(tmp_path) if store_kind == "file" else InMemorySessionStore()
    transcript = Transcript(store, SessionKey("-p", "s"))
    await transcript.record_all([big_result(10), big_result(3 << 20)])
    assert large and threading.get_ident() not in large and not small
    await transcript.record_all([big_result(10), big_result(20)])
    assert small and set(small) == {threading.get_ident()}
    entries = await store.load(transcript.key) or []
    assert len(entries) == 4 and entries[-1].uuid == transcript.last_uuid
    assert [e.parent_uuid for e in entries[1:]] == [e.uuid for e in entries[:-1]]


def result_size_by_the_walk(message: ResultMessage, budget: int) -> int:
    """The rough size of a result as first written: each model's counts checked by a set of
    their types, each part that can grow looked at in turn."""
    total = 24 * 128
    if message.result:
        total += 4 * len(message.result)
    for model, counts in message.model_usage.items():
        total += 4 * len(model) + 128
        if type(counts) is dict and {int, float}.issuperset(map(type, counts.values())):
            total += 256 * len(counts)
        else:
            total += rough_size(counts, budget - total)
    for part in (
        message.errors,
        message.permission_denials,
        message.structured_output,
        message.deferred_tool_use,
    ):
        if part and total <= budget:
            total += rough_size(part, budget - total)
    return total


_numbers = st.integers(0, 10**6) | st.floats(0, 1e3)
_values = _numbers | st.text(max_size=3000) | st.booleans() | st.none() | st.lists(_numbers)
_parts = st.none() | st.just([]) | st.lists(st.text(max_size=2000), max_size=2)


@settings(max_examples=300, deadline=None)
@given(
    model_usage=st.dictionaries(
        st.text(max_size=20),
        st.dictionaries(st.text(max_size=8), _numbers, max_size=6)
        | st.dictionaries(st.text(max_size=8), _values, max_size=6)
        | _values,
        max_size=3,
    ),
    result=st.none() | st.text(max_size=3000),
    errors=_parts,
    denials=st.just([]) | st.lists(st.just({"tool_input": {"command": "x" * 500}}), max_size=2),
    output=st.none() | _values,
    deferred=st.none() | st.just({"input": {"x": "y" * 700}}),
    budget=st.integers(0, 20_000),
)
def test_a_results_size_is_the_walks(
    model_usage: dict[str, Any],
    result: str | None,
    errors: list[str] | None,
    denials: list[dict[str, Any]],
    output: Any,
    deferred: dict[str, Any] | None,
    budget: int,
) -> None:
    """The size of a result (its numbers checked one by one, its parts that can grow skipped
    at once when none is set) is what the first walk of it counts, whatever the budget."""
    from agents.sessions.entry import _result_size

    message = ResultMessage(
        subtype="success", duration_ms=1, duration_api_ms=1, is_error=False, num_turns=1,
        session_id="s", model_usage=model_usage, result=result, errors=errors,
        permission_denials=denials, structured_output=output, deferred_tool_use=deferred,
    )  # fmt: skip
    assert _result_size(message, budget) == result_size_by_the_walk(message, budget)


def snapshot_session(messages: int) -> list[TranscriptEntry]:
    """A prompt, then a history snapshot of ``messages`` prompts: few entries, a long history."""
    (prompt,) = chain(1)
    history = [{"role": "user", "content": f"old prompt {i}"} for i in range(messages)]
    snapshot = TranscriptEntry(
        uuid="snap", parent_uuid=prompt.uuid, session_id="s", timestamp=1.0,
        kind=agents.sessions.HISTORY_SNAPSHOT, data={"messages": history},
    )  # fmt: skip
    return [prompt, snapshot]


async def test_a_short_transcript_holding_a_huge_snapshot_is_resumed_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What decides is the work, not the number of entries: a history snapshot holds a whole
    history in one entry. Before, two entries with a snapshot of 200 000 messages were checked
    and rebuilt on the event loop (the copy alone held it 2.3 s)."""
    checked = threads_of(monkeypatch, agents.sessions.transcript, "snapshot_problem")
    rebuilt = threads_of(monkeypatch, agents.sessions.history, "history_from_entries")
    store = InMemorySessionStore()
    key = SessionKey("-p", "s")
    await store.append(key, snapshot_session(20_000))
    _, report = await Transcript.resume(store, key)
    history = await rebuild_history(report.entries)
    assert len(history) == 1 and len(history[0]["content"]) == 20_000
    assert checked and threading.get_ident() not in checked
    assert rebuilt and threading.get_ident() not in rebuilt
    checked.clear()
    rebuilt.clear()
    await store.append(SessionKey("-p", "small"), snapshot_session(3))
    _, report = await Transcript.resume(store, SessionKey("-p", "small"))
    await rebuild_history(report.entries)
    assert checked == rebuilt == [threading.get_ident()]
