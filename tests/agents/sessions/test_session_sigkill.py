"""A writer killed with SIGKILL at a random point loses only the line in flight."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
import trio

import agents.sessions
from agents.messages import UserMessage
from agents.sessions import FileSessionStore, SessionKey, TranscriptEntry

_REPO = Path(agents.sessions.__file__).resolve().parents[2]

_WRITER = textwrap.dedent(
    """
    import random, sys, time, uuid
    sys.path.insert(0, sys.argv[3])
    import trio
    from agents.messages import ToolResultBlock, UserMessage
    from agents.sessions import FileSessionStore, SessionKey, TranscriptEntry

    async def main():
        store = FileSessionStore(sys.argv[1])
        key = SessionKey("-p", "s")
        rng = random.Random(int(sys.argv[2]))
        parent = None
        i = 0
        while True:
            size = rng.choice([10, 2_000, 50_000, 500_000])
            message = UserMessage(content=[ToolResultBlock(f"t{i}", "x" * size)])
            entry = TranscriptEntry(uuid=str(uuid.uuid4()), parent_uuid=parent, session_id="s",
                                    timestamp=time.time(), message=message)
            await store.append(key, [entry])
            sys.stdout.write(entry.uuid + "\\n")
            sys.stdout.flush()
            parent = entry.uuid
            i += 1

    trio.run(main)
    """
)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
async def test_sigkill_loses_only_the_line_in_flight(tmp_path: Path, seed: int) -> None:
    """Every entry the writer reported as appended loads; at most the last line is truncated."""
    script = tmp_path / "writer.py"
    script.write_text(_WRITER)
    root = tmp_path / "data"
    rng = random.Random(seed)
    proc = await trio.lowlevel.open_process(
        [sys.executable, str(script), str(root), str(seed), str(_REPO)],
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None
    out = bytearray()
    try:
        with trio.fail_after(30):
            while b"\n" not in out:  # the writer is running and has appended once
                chunk = await proc.stdout.receive_some()
                assert chunk, "the writer exited before appending"
                out += chunk
        await trio.sleep(rng.uniform(0, 0.25))
    finally:
        proc.send_signal(signal.SIGKILL)
    with trio.fail_after(30):
        while chunk := await proc.stdout.receive_some():
            out += chunk
        assert await proc.wait() == -signal.SIGKILL
    printed = out.decode().split("\n")[:-1]  # the last piece may be a partial print

    key = SessionKey("-p", "s")
    async with FileSessionStore(root) as store:
        report = await store.load_report(key)
        assert report is not None
        loaded = [e.uuid for e in report.entries]
        assert loaded[: len(printed)] == printed
        assert len(loaded) - len(printed) <= 1  # appended, killed before it printed
        assert len(report.errors) <= 1
        if report.errors:
            path = store.path_for(key)
            assert report.errors[0].startswith(f"{path}:{len(loaded) + 1}: truncated line")

        # resume: a new entry chained to the last good one is kept by every later load
        resumed = TranscriptEntry(
            uuid=str(uuid.uuid4()), parent_uuid=loaded[-1], session_id="s",
            timestamp=0.0, message=UserMessage(content="resumed"),
        )  # fmt: skip
        await store.append(key, [resumed])
        again = await store.load(key)
    assert again == [*report.entries, resumed]
