"""Message ids (``agents._ids.new_id``): valid, unique version-4 UUIDs, immune to random.seed."""

from __future__ import annotations

import itertools
import os
import random
import subprocess
import sys
import uuid

import pytest

from agents._ids import new_id


def test_ids_are_version_4_uuid_strings_without_repeats() -> None:
    ids = [new_id() for _ in range(20_000)]
    assert len(set(ids)) == len(ids)
    for text in ids[:500]:
        parsed = uuid.UUID(text)
        assert str(parsed) == text
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122


def test_seeding_the_global_generator_does_not_repeat_ids() -> None:
    """Test frameworks seed ``random``; ids must not follow."""
    random.seed(1234)
    first = new_id()
    random.seed(1234)
    assert new_id() != first


def test_a_forked_child_does_not_repeat_its_parents_ids() -> None:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: send one id and leave at once
        os.write(write, new_id().encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    child = os.read(read, 100).decode()
    os.close(read)
    assert child != new_id()


def test_ids_of_two_interpreters_differ() -> None:
    """Each process draws its own random prefix: two processes started alike share no id."""
    code = "from agents._ids import new_id; print(new_id())"
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    first, second = (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       check=True, env=env).stdout.strip()
        for _ in range(2)
    )  # fmt: skip
    assert first != second
    assert first[:24] != second[:24]  # the random part differs, not just the counter


def test_the_last_group_keeps_twelve_digits_at_any_counter_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The counter's lowest and highest values before it could wrap: a full UUID each."""
    from agents import _ids

    for start in (_ids._COUNTER_BASE, _ids._COUNTER_BASE + (1 << 47) - 1):
        monkeypatch.setattr(_ids, "_next", itertools.count(start).__next__)
        text = new_id()
        assert len(text) == 36 and str(uuid.UUID(text)) == text


def test_the_end_of_an_id_is_what_tells_ids_apart() -> None:
    """Short forms of an id (a hook agent's ``hook-xxxxxxxx``) are cut from its end: ids of one
    process share their beginning."""
    ids = [new_id() for _ in range(1000)]
    assert len({i[-8:] for i in ids}) == len(ids)
