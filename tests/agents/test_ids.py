"""Message ids (``agents._ids.new_id``): valid, unique version-4 UUIDs, immune to random.seed."""

from __future__ import annotations

import os
import random
import uuid

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
