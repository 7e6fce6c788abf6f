"""A conformance suite for ``SessionStore`` implementations: what the transcripts need of a store.

Any store that passes it can back ``resume``, ``fork_session`` and ``continue_conversation``. Run
everything at once::

    await check_session_store(lambda: MyStore(dsn))

or get one pytest test per check (each failure names the check) in a test module::

    test_my_store = session_store_conformance_tests(lambda: MyStore(dsn))

``make_store`` is called once per check and may return the store or an awaitable of it; a store
with an ``aclose()`` method is closed after its check. Every check uses fresh random project keys,
so a store shared between calls (a database) works too. ``list_sessions`` is checked only when the
store has it; its order must be newest last activity first, where the entries' ``timestamp`` is
the activity time (the checks append in timestamp order, so a store using its own clock passes as
long as it orders by last append).
"""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from agents.messages import (
    AssistantMessage,
    Message,
    ResultMessage,
    SystemMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from agents.sessions.entry import TranscriptEntry
from agents.sessions.store import SessionKey, SessionStore, SupportsListSessions

__all__ = ["CHECKS", "check_session_store", "run_check", "session_store_conformance_tests"]

StoreFactory = Callable[[], "SessionStore | Awaitable[SessionStore]"]
Check = Callable[[SessionStore], Awaitable[None]]


def _key(subpath: str | None = None, project: str | None = None) -> SessionKey:
    return SessionKey(project or f"-conformance-{uuid.uuid4().hex}", str(uuid.uuid4()), subpath)


def _entries(
    key: SessionKey, n: int, *, start: float = 1_700_000_000.0, text: str = "message"
) -> list[TranscriptEntry]:
    """``n`` chained entries cycling through every message type."""
    out: list[TranscriptEntry] = []
    parent: str | None = None
    for i in range(n):
        messages: list[Message] = [
            UserMessage(content=f"{text} {i}", uuid=str(uuid.uuid4())),
            AssistantMessage(
                content=[TextBlock(f"{text} {i}"), ToolUseBlock(f"t{i}", "Read", {"path": "a"})],
                model="claude-test",
                message_id=f"msg_{i}",
                uuid=str(uuid.uuid4()),
            ),
            UserMessage(content=[ToolResultBlock(f"t{i}", f"{text} {i}")], uuid=str(uuid.uuid4())),
            SystemMessage(subtype="informational", data={"i": i}),
            ResultMessage(
                subtype="success", duration_ms=i, duration_api_ms=i, is_error=False,
                num_turns=1, session_id=key.session_id, result=f"{text} {i}",
            ),
        ]  # fmt: skip
        message = messages[i % len(messages)]
        entry = TranscriptEntry(
            uuid=getattr(message, "uuid", "") or str(uuid.uuid4()),
            parent_uuid=parent,
            session_id=key.session_id,
            timestamp=start + i,
            agent_id="main" if key.subpath is None else key.subpath,
            message=message,
        )
        out.append(entry)
        parent = entry.uuid
    return out


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


async def _load_equals(
    store: SessionStore, key: SessionKey, expected: list[TranscriptEntry]
) -> None:
    got = await store.load(key)
    _expect(got is not None, f"load({key}) returned None after appending {len(expected)} entries")
    assert got is not None
    _expect(
        len(got) == len(expected), f"load({key}) returned {len(got)} entries, want {len(expected)}"
    )
    for i, (a, b) in enumerate(zip(got, expected, strict=True)):
        _expect(a == b, f"load({key}) entry {i} differs:\n  got  {a!r}\n  want {b!r}")


async def check_missing_is_none(store: SessionStore) -> None:
    """``load`` of a key never appended returns None; ``list_subkeys`` returns []."""
    key = _key()
    _expect(await store.load(key) is None, "load of a missing session must return None")
    _expect(await store.list_subkeys(key) == [], "list_subkeys of a missing session must be []")


async def check_append_load_order(store: SessionStore) -> None:
    """Entries come back equal and in append order, also across many appends."""
    key = _key()
    entries = _entries(key, 25)
    await store.append(key, entries[:10])
    await store.load(key)  # a load in between must not disturb later appends
    for entry in entries[10:]:
        await store.append(key, [entry])
    await _load_equals(store, key, entries)


async def check_empty_append_is_noop(store: SessionStore) -> None:
    """``append(key, [])`` does not create the session."""
    key = _key()
    await store.append(key, [])
    _expect(await store.load(key) is None, "append of no entries must not create the session")


async def check_keys_are_independent(store: SessionStore) -> None:
    """Sessions of one project, and the same session id in two projects, do not mix."""
    a = _key()
    b = SessionKey(a.project_key, str(uuid.uuid4()))
    c = SessionKey(f"{a.project_key}-other", a.session_id)
    ea, eb, ec = _entries(a, 3, text="a"), _entries(b, 4, text="b"), _entries(c, 5, text="c")
    await store.append(a, ea[:1])
    await store.append(b, eb)
    await store.append(c, ec)
    await store.append(a, ea[1:])
    await _load_equals(store, a, ea)
    await _load_equals(store, b, eb)
    await _load_equals(store, c, ec)


async def check_subkeys(store: SessionStore) -> None:
    """Subagent transcripts live beside the main one and are listed, sorted, by ``list_subkeys``."""
    main = _key()
    subs = ["subagents/agent-main-b", "subagents/agent-main-a", "subagents/agent-main-a-1"]
    main_entries = _entries(main, 3)
    await store.append(main, main_entries)
    expected = {}
    for sub in subs:
        key = SessionKey(main.project_key, main.session_id, sub)
        expected[sub] = _entries(key, 2, text=sub)
        await store.append(key, expected[sub])
    listed = await store.list_subkeys(main)
    _expect(listed == sorted(subs), f"list_subkeys returned {listed}, want {sorted(subs)}")
    sub_key = SessionKey(main.project_key, main.session_id, subs[0])
    listed_from_sub = await store.list_subkeys(sub_key)
    _expect(listed_from_sub == sorted(subs), "list_subkeys of a subkey must list its session's")
    for sub in subs:
        await _load_equals(store, SessionKey(main.project_key, main.session_id, sub), expected[sub])
    await _load_equals(store, main, main_entries)
    orphan = _key("subagents/agent-x")
    await store.append(orphan, _entries(orphan, 1))
    _expect(await store.load(orphan.main()) is None, "a subkey alone must not create the main key")


async def check_delete(store: SessionStore) -> None:
    """Deleting a subkey removes only it; deleting the main key, its subkeys too; idempotent."""
    main = _key()
    other = SessionKey(main.project_key, str(uuid.uuid4()))
    sub_a = SessionKey(main.project_key, main.session_id, "subagents/agent-a")
    sub_b = SessionKey(main.project_key, main.session_id, "subagents/agent-b")
    for key in (main, other, sub_a, sub_b):
        await store.append(key, _entries(key, 2))
    await store.delete(sub_a)
    _expect(await store.load(sub_a) is None, "a deleted subkey must load as None")
    _expect(await store.load(sub_b) is not None, "deleting one subkey must keep the others")
    _expect(await store.load(main) is not None, "deleting a subkey must keep the main key")
    await store.delete(sub_a)
    await store.delete(main)
    _expect(await store.load(main) is None, "a deleted session must load as None")
    _expect(await store.load(sub_b) is None, "deleting a session must delete its subkeys")
    _expect(await store.list_subkeys(main) == [], "a deleted session must have no subkeys")
    _expect(await store.load(other) is not None, "deleting a session must keep other sessions")
    await store.delete(main)
    entries = _entries(main, 2)
    await store.append(main, entries)
    await _load_equals(store, main, entries)  # a deleted id can be written again, from scratch


async def check_list_sessions(store: SessionStore) -> None:
    """``list_sessions`` (when implemented) lists main sessions only, newest activity first."""
    if not isinstance(store, SupportsListSessions):
        return
    project = f"-conformance-{uuid.uuid4().hex}"
    keys = [_key(project=project) for _ in range(3)]
    for i, key in enumerate(keys):
        await store.append(key, _entries(key, 2, start=1_700_000_000.0 + 100 * i))
    await store.append(
        SessionKey(project, keys[0].session_id, "subagents/agent-a"),
        _entries(_key("subagents/agent-a", project), 1, start=1_700_000_000.0),
    )
    infos = await store.list_sessions(project)
    ids = [info.session_id for info in infos]
    want = [k.session_id for k in reversed(keys)]
    _expect(ids == want, f"list_sessions order {ids}, want newest first {want}")
    mtimes = [info.mtime for info in infos]
    _expect(
        mtimes == sorted(mtimes, reverse=True), f"list_sessions mtimes not descending: {mtimes}"
    )
    _expect(await store.list_sessions(f"{project}-empty") == [], "an unknown project lists []")


async def check_unicode(store: SessionStore) -> None:
    """Non-ASCII text, control characters and line separators round-trip exactly."""
    key = _key()
    texts = [
        "héllo wörld",
        "日本語のテキスト",
        "emoji 🦀🐍 ✓",
        "line\nbreak\r\n",
        "\u2028\u2029",
        "nul\x00",
    ]
    entries = [
        TranscriptEntry(
            uuid=str(uuid.uuid4()), parent_uuid=None, session_id=key.session_id,
            timestamp=1_700_000_000.0 + i, message=UserMessage(content=text),
            data={"ключ": text},
        )
        for i, text in enumerate(texts)
    ]  # fmt: skip
    await store.append(key, entries)
    await _load_equals(store, key, entries)


async def check_big_entries(store: SessionStore) -> None:
    """Entries of several megabytes (a big tool result) round-trip between small ones."""
    key = _key()
    small = _entries(key, 3)
    big_text = "x" * (3 * 1024 * 1024) + "é" * 1000
    big = TranscriptEntry(
        uuid=str(uuid.uuid4()), parent_uuid=small[-1].uuid, session_id=key.session_id,
        timestamp=1_700_000_100.0,
        message=UserMessage(content=[ToolResultBlock("t0", big_text)]),
    )  # fmt: skip
    entries = [*small, big, *_entries(key, 2, start=1_700_000_200.0)]
    for entry in entries:
        await store.append(key, [entry])
    await _load_equals(store, key, entries)


async def check_non_message_entries(store: SessionStore) -> None:
    """Entries with ``kind``/``data`` and no message round-trip."""
    key = _key()
    entries = [
        TranscriptEntry(
            uuid=str(uuid.uuid4()), parent_uuid=None, session_id=key.session_id,
            timestamp=1_700_000_000.5, kind="history_snapshot",
            data={"messages": [{"role": "user", "content": "summary"}], "n": 1.25},
        ),
        *_entries(key, 2),
    ]  # fmt: skip
    await store.append(key, entries)
    await _load_equals(store, key, entries)


#: Every check, by name, in the order ``check_session_store`` runs them.
CHECKS: dict[str, Check] = {
    "missing_is_none": check_missing_is_none,
    "append_load_order": check_append_load_order,
    "empty_append_is_noop": check_empty_append_is_noop,
    "keys_are_independent": check_keys_are_independent,
    "subkeys": check_subkeys,
    "delete": check_delete,
    "list_sessions": check_list_sessions,
    "unicode": check_unicode,
    "big_entries": check_big_entries,
    "non_message_entries": check_non_message_entries,
}


async def run_check(name: str, make_store: StoreFactory) -> None:
    """Run one named check on a fresh store; an ``AssertionError`` names the check."""
    made = make_store()
    store: SessionStore = await made if inspect.isawaitable(made) else made
    try:
        await CHECKS[name](store)
    except AssertionError as exc:
        raise AssertionError(f"session store conformance check {name!r} failed: {exc}") from exc
    finally:
        aclose = getattr(store, "aclose", None)
        if aclose is not None:
            await aclose()


async def check_session_store(make_store: StoreFactory) -> None:
    """Run every check (each on a fresh store from ``make_store``); raise on the first failure."""
    for name in CHECKS:
        await run_check(name, make_store)


def session_store_conformance_tests(make_store: StoreFactory) -> Callable[..., Any]:
    """A pytest test function parametrized over the checks (needs pytest and pytest-trio)::

    test_my_store_conformance = session_store_conformance_tests(MyStore)
    """
    import pytest

    @pytest.mark.parametrize("check", list(CHECKS))
    async def test_session_store_conformance(check: str) -> None:
        await run_check(check, make_store)

    return test_session_store_conformance
