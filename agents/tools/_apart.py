"""Python code run in a process of its own: for work on the model's or a server's text that may
not end in time (a regex that backtracks, html2text on a hostile page). A cancellation or the
deadline kills the process; nothing on the event loop, nor a worker thread, could be stopped.

Used by BashOutput's filter, WebFetch's conversion and the schema check of a tool's input.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence

import trio

__all__ = ["last_error_line", "run_python"]


async def run_python(
    script: str, args: Sequence[str], stdin: bytes, seconds: float
) -> subprocess.CompletedProcess[bytes] | None:
    """``python -I -c script *args`` with ``stdin`` as its input, its output captured: the
    completed process (whatever its exit status), or None once ``seconds`` have passed (it is
    killed then, as by a cancellation)."""
    with trio.move_on_after(seconds):
        return await trio.run_process(
            [sys.executable, "-I", "-c", script, *args],
            stdin=stdin,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            deliver_cancel=_kill,
        )
    return None


def last_error_line(done: subprocess.CompletedProcess[bytes]) -> str:
    """The last line of what a failed run wrote to stderr (its exception, for a traceback)."""
    return done.stderr.decode("utf-8", "replace").strip().rpartition("\n")[2]


async def _kill(process: trio.Process) -> None:
    """Such work holds no resource worth a graceful end: killed at once."""
    process.kill()
    await trio.lowlevel.checkpoint()
