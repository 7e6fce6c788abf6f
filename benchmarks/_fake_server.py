"""The fake Messages API server in a child process, so its work is not on the measured client's
CPU, with the timings of the requests it served fetched over a pipe between measured queries."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

_CHILD = """
import sys, trio, msgspec
sys.path[:0] = [{root!r}, {root!r} + "/benchmarks"]  # the module imports its siblings
from benchmarks.{module} import respond
from agents.testing.fake_api import FakeAnthropicServer

async def main():
    server = FakeAnthropicServer(respond)
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        print(server.base_url, flush=True)
        stdin = trio.lowlevel.FdStream(0)
        while await stdin.receive_some():   # one byte per "dump the timings" request
            times = [(r.received_at, r.finished_at) for r in server.requests]
            server.requests.clear()
            print(msgspec.json.encode(times).decode(), flush=True)
        nursery.cancel_scope.cancel()

trio.run(main)
"""


class ServerProcess:
    """A child serving ``benchmarks/<module>.py``'s ``respond`` script; ``env`` is added to ours."""

    def __init__(self, module: str, env: dict[str, str] | None = None) -> None:
        root = str(Path(__file__).resolve().parent.parent)
        self.child = subprocess.Popen(
            [sys.executable, "-c", _CHILD.format(root=root, module=module)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=os.environ | (env or {}),
        )  # fmt: skip
        assert self.child.stdin is not None and self.child.stdout is not None
        self.stdin, self.stdout = self.child.stdin, self.child.stdout
        self.base_url = self.stdout.readline().strip()

    def times(self) -> list[tuple[float, float]]:
        """(received, finished) of each request served since the last call. Blocking pipe I/O:
        call it between measured queries only."""
        self.stdin.write("x")
        self.stdin.flush()
        return [(a, b) for a, b in json.loads(self.stdout.readline())]

    def close(self) -> None:
        self.stdin.close()
        self.child.wait(10)
