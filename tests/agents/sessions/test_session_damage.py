"""A damaged transcript resumes into a history the Messages API accepts, with a report that tells
exactly what was kept and dropped: lines deleted, truncated, duplicated or inserted."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agents.messages import (
    AssistantMessage,
    ContentBlock,
    Message,
    ResultMessage,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from agents.sessions import (
    SessionKey,
    TranscriptEntry,
    decode_transcript,
    encode_entry,
    history_from_entries,
    load_with_report,
    repair_history,
)
from agents.sessions.entry import LoadReport
from agents.sessions.transcript import resumable

LABEL = "/p/s.jsonl"


# --- what the Messages API accepts ------------------------------------------------------------


def api_rejects(history: list[dict[str, Any]]) -> str | None:
    """Why the Messages API would reject ``history`` as the start of a request, or None.

    It starts with the user, roles alternate, no content is empty, tool_use ids are unique, and
    the user message after an assistant message answers each of its calls once — results first —
    and nothing else.
    """
    pending: list[str] = []
    used: set[str] = set()
    for i, message in enumerate(history):
        role, content = message["role"], message["content"]
        if role != ("user" if i % 2 == 0 else "assistant"):
            return f"message {i} has role {role}"
        if not content:
            return f"message {i} is empty"
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        kinds = [b["type"] for b in blocks]
        if role == "assistant":
            if "tool_result" in kinds:
                return f"message {i}: a tool_result in an assistant turn"
            calls = [b["id"] for b in blocks if b["type"] == "tool_use"]
            if len(set(calls)) != len(calls) or used & set(calls):
                return f"message {i}: a tool_use id is not unique"
            used.update(calls)
            pending = calls
            continue
        answered = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
        if sorted(answered) != sorted(pending):
            return f"message {i} answers {answered}, the calls were {pending}"
        if kinds[: len(answered)] != ["tool_result"] * len(answered):
            return f"message {i}: tool results must come first"
        pending = []
    return f"calls {pending} are never answered" if pending else None


# --- an intact transcript: a realistic main-agent stream ---------------------------------------

words = st.text("abcdefghij ", min_size=1, max_size=12).filter(str.strip)


@st.composite
def conversations(draw: st.DrawFn) -> list[Message]:
    """init, then 1-3 prompts, each answered by 1-3 responses (one message per block, calls
    answered by one message per result in any order), then a result."""
    messages: list[Message] = [SystemMessage("init", {"session_id": "s"})]
    call = 0
    for p in range(draw(st.integers(1, 3))):
        messages.append(UserMessage(content=draw(words)))
        if draw(st.integers(0, 4)) == 0:  # the model call failed: no turn, the next prompt follows
            messages.append(AssistantMessage([TextBlock("API Error")], "m", error="unknown"))
            messages.append(
                ResultMessage("error_during_execution", 1, 1, True, 0, "s", errors=["API error"])
            )
            continue
        turns = draw(st.integers(1, 3))
        for t in range(turns):
            blocks: list[ContentBlock] = []
            if draw(st.booleans()):
                blocks.append(ThinkingBlock(draw(words), "sig"))
            if draw(st.booleans()) or t == turns - 1:
                blocks.append(TextBlock(draw(words)))
            ids = []
            if t < turns - 1:
                for _ in range(draw(st.integers(1, 3))):
                    call += 1
                    ids.append(f"toolu_{call}")
                    blocks.append(ToolUseBlock(ids[-1], "Read", {"file_path": "a"}))
            mid = f"msg_{p}_{t}"
            messages += [AssistantMessage([b], "m", message_id=mid) for b in blocks]
            for tool_id in draw(st.permutations(ids)):
                messages.append(UserMessage(content=[ToolResultBlock(tool_id, draw(words))]))
        messages.append(ResultMessage("success", 1, 1, False, turns, "s", result="done"))
    return messages


def chained(messages: list[Message], prefix: str = "e") -> list[TranscriptEntry]:
    out: list[TranscriptEntry] = []
    for i, message in enumerate(messages):
        out.append(
            TranscriptEntry(
                uuid=f"{prefix}{i}",
                parent_uuid=out[-1].uuid if out else None,
                session_id="s",
                timestamp=float(i),
                message=message,
            )
        )
    return out


# --- damage ------------------------------------------------------------------------------------


def foreign(kind: str) -> bytes:
    """A line that belongs to no chain of the file: garbage, a blank, an entry from elsewhere."""
    stray: Message = UserMessage(content="from another file")
    if kind == "assistant root":
        stray = AssistantMessage([ToolUseBlock("toolu_1", "Read", {})], "m", message_id="x")
    if kind == "garbage":
        return b'{"uuid": "half a line\n'
    if kind == "blank":
        return b"\n"
    parent = None if kind == "root" else "elsewhere"
    return encode_entry(TranscriptEntry(uuid="x1", parent_uuid=parent, session_id="s",
                                        timestamp=0.0, message=stray))  # fmt: skip


damages = st.one_of(
    st.tuples(st.just("delete"), st.floats(0, 1), st.floats(0, 1)),
    st.tuples(st.just("truncate"), st.floats(0, 1)),
    st.tuples(st.just("duplicate"), st.floats(0, 1), st.floats(0, 1)),
    st.tuples(
        st.just("insert"),
        st.floats(0, 1),
        st.sampled_from(["garbage", "blank", "stray", "root", "assistant root"]),
    ),
)


def at(fraction: float, size: int) -> int:
    return min(int(fraction * (size + 1)), size)


def damage(lines: list[bytes], how: tuple[Any, ...]) -> list[bytes]:
    """Apply one damage to the lines of a file (each ending with its newline)."""
    lines = list(lines)
    match how:
        case ("delete", a, b):
            start, end = sorted((at(a, len(lines)), at(b, len(lines))))
            del lines[start : max(end, start + 1)]
        case ("truncate", a):
            data = b"".join(lines)
            data = data[: at(a, len(data))]
            lines = data.splitlines(keepends=True)
        case ("duplicate", a, b):
            if lines:
                i = at(a, len(lines) - 1)
                lines.insert(at(b, len(lines)), lines[i])
        case ("insert", a, kind):
            lines.insert(at(a, len(lines)), foreign(kind))
    return lines


def load(lines: list[bytes]) -> tuple[LoadReport, list[dict[str, Any]]]:
    report = resumable(decode_transcript(LABEL, b"".join(lines)))
    return report, history_from_entries(report.entries)


def assert_report_adds_up(report: LoadReport, lines: list[bytes]) -> None:
    """kept + dropped + unused is every non-blank line; faults end with the exact summary."""
    pieces = b"".join(lines).split(b"\n")  # a line inserted after a cut one continues it
    read = sum(1 for piece in pieces if piece.strip())
    assert report.read == read
    assert report.kept + report.dropped + report.unused == read
    if report.dropped == 0:
        assert report.errors == []
        return
    summary = report.errors[-1]
    assert summary.startswith(f"{LABEL}: kept {report.kept} of {read} entries, ")
    assert f"dropped {report.dropped}: " in summary
    for error in report.errors[:-1]:
        number = int(re.match(rf"^{re.escape(LABEL)}:(\d+): ", error)[1])  # type: ignore[index]
        assert 1 <= number <= len(pieces)


# --- the properties ----------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(conversations(), st.lists(damages, min_size=1, max_size=3))
def test_any_damage_resumes_into_a_history_the_api_accepts(
    messages: list[Message], hows: list[tuple[Any, ...]]
) -> None:
    """Whatever was done to the lines, the history is valid and the report adds up."""
    lines = [encode_entry(e) for e in chained(messages)]
    assert api_rejects(history_from_entries(chained(messages))) is None  # the control
    for how in hows:
        lines = damage(lines, how)
    report, history = load(lines)
    assert api_rejects(history) is None, (api_rejects(history), history)
    assert_report_adds_up(report, lines)
    assert repair_history(history) == history


@settings(max_examples=300, deadline=None)
@given(conversations(), damages)
def test_one_damage_is_reported_as_what_was_done(
    messages: list[Message], how: tuple[Any, ...]
) -> None:
    """One deletion, truncation, duplication or insertion: resume keeps exactly the consistent
    part, and the report names the line where the damage shows."""
    entries = chained(messages)
    lines = [encode_entry(e) for e in entries]
    damaged = damage(lines, how)
    report, history = load(damaged)
    assert api_rejects(history) is None
    assert_report_adds_up(report, damaged)
    errors = report.errors[:-1]
    match how:
        case ("delete", _, _):
            start = next(
                (i for i, (a, b) in enumerate(zip(lines, damaged, strict=False)) if a != b), None
            )
            start = len(damaged) if start is None else start
            assert report.entries == entries[:start]
            if start == len(damaged):  # the tail went: a shorter transcript, nothing to say
                assert report.errors == []
            else:
                assert report.dropped == len(damaged) - start
                assert errors[0].startswith(f"{LABEL}:{start + 1}: broken chain: ")
        case ("truncate", _):
            whole = [line for line in damaged if line.endswith(b"\n")]
            if len(whole) == len(damaged) or damaged[-1] == lines[len(damaged) - 1][:-1]:
                assert report.entries == entries[: len(damaged)]  # cut at a line's end
                assert report.errors == []
            else:
                assert report.entries == entries[: len(whole)]
                assert errors == [
                    f"{LABEL}:{len(damaged)}: truncated line (no trailing newline: the writer "
                    "died mid-line)"
                ]
        case ("duplicate", _, _):
            assert report.entries == entries
            assert report.dropped == 1 and len(errors) == 1
            assert "duplicate of line" in errors[0] or "broken chain" in errors[0]
        case ("insert", _, "garbage"):
            line = damaged.index(foreign("garbage")) + 1
            assert report.entries == entries
            assert report.dropped == 1
            assert errors[0].startswith(f"{LABEL}:{line}: corrupt line (")
        case ("insert", _, "blank"):
            assert report.entries == entries and report.errors == []
        case ("insert", _, "stray"):
            line = damaged.index(foreign("stray")) + 1
            assert report.entries == entries and report.dropped == 1
            assert errors == [
                f"{LABEL}:{line}: broken chain: the parent elsewhere of entry x1 is not on any "
                "line before it (lines are missing or out of order)"
            ]
        case ("insert", _, _):  # a new conversation in the file (a root): resume follows the newest
            assert report.kept + report.unused + report.dropped == len(damaged)


def test_a_deleted_middle_is_reported_and_resume_keeps_what_came_before() -> None:
    """The issue's case: lines deleted in the middle no longer pass unseen, and the resumed
    history starts with the first prompt instead of an assistant turn."""
    entries = chained(
        [
            UserMessage(content="first"),
            AssistantMessage([TextBlock("one")], "m", message_id="a"),
            UserMessage(content="second"),
            AssistantMessage([TextBlock("two")], "m", message_id="b"),
            UserMessage(content="third"),
            AssistantMessage([TextBlock("three")], "m", message_id="c"),
        ]
    )
    lines = [encode_entry(e) for e in entries]
    report, history = load([*lines[:2], *lines[4:]])
    assert report.entries == entries[:2]
    assert report.errors == [
        f"{LABEL}:3: broken chain: the parent e3 of entry e4 is not on any line before it "
        "(lines are missing or out of order)",
        f"{LABEL}: kept 2 of 4 entries, dropped 2: 1 with a missing parent, "
        "1 descending from dropped entries",
    ]
    assert history == [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": [{"type": "text", "text": "one"}]},
    ]


def test_a_garbage_line_is_counted_as_what_it_is() -> None:
    """The issue's case: after one garbage line every good entry is kept, and the report says
    so instead of claiming only the entries before it are used."""
    entries = chained([UserMessage(content=f"p{i}") for i in range(14)])
    lines = [encode_entry(e) for e in entries]
    report, _ = load([*lines[:6], b"garbage\n", *lines[6:]])
    assert report.entries == entries
    assert report.errors[1:] == [f"{LABEL}: kept 14 of 15 entries, dropped 1: 1 unreadable"]


def test_an_assistant_turn_before_any_prompt_is_dropped_and_counted() -> None:
    """A branch that starts mid-conversation is cut to its first prompt, and the report says so."""
    entries = chained(
        [
            AssistantMessage([TextBlock("orphan")], "m", message_id="a"),
            UserMessage(content=[ToolResultBlock("t0", "late")]),
            UserMessage(content="the prompt"),
        ]
    )
    report, history = load([encode_entry(e) for e in entries])
    assert report.entries == entries[2:]
    assert history == [{"role": "user", "content": "the prompt"}]
    assert report.errors == [
        f"{LABEL}: the resumed branch starts with 2 entries of the conversation before any user "
        "prompt; dropped them",
        f"{LABEL}: kept 1 of 3 entries, dropped 2: 2 before the first prompt of the resumed branch",
    ]


def test_a_prompt_whose_turn_never_came_merges_with_the_next() -> None:
    """A failed model call leaves two prompts in a row: one user turn, roles still alternate."""
    history = repair_history(
        [
            {"role": "user", "content": "first"},
            {"role": "user", "content": "again"},
            {"role": "assistant", "content": [{"type": "text", "text": "hi"}]},
        ]
    )
    assert history == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "first"}, {"type": "text", "text": "again"}],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "hi"}]},
    ]


async def test_a_store_without_reports_gets_the_same_chain_check() -> None:
    """A custom store that only loads: its entries pass the same check, named by store and key."""
    entries = chained([UserMessage(content=f"p{i}") for i in range(4)])

    class Plain:
        async def append(self, key: SessionKey, entries: Sequence[TranscriptEntry]) -> None: ...

        async def load(self, key: SessionKey) -> list[TranscriptEntry] | None:
            return [entries[0], entries[2], entries[3]]

        async def delete(self, key: SessionKey) -> None: ...

        async def list_subkeys(self, key: SessionKey) -> list[str]:
            return []

    report = await load_with_report(Plain(), SessionKey("-p", "s"))
    assert report is not None and report.entries == entries[:1]
    assert report.errors[0].startswith("Plain:-p/s:2: broken chain: the parent e1 of entry e2 ")
    assert report.errors[-1] == (
        "Plain:-p/s: kept 1 of 3 entries, dropped 2: 1 with a missing parent, "
        "1 descending from dropped entries"
    )
