"""Backends for worker processes in tests, named as ``tests.scaleout.backends:<factory>``.

A worker builds one per job from the job's request. ``TEST_WORKER_ROLE`` in the worker's
environment picks the script: ``first`` answers a first turn with a tool call and then hangs for a
minute (long enough to be killed mid-response); ``second`` answers at once, as a resumed job does.
"""

from __future__ import annotations

import os

from agents.scaleout.queue import SpawnRequest
from agents.testing import ScriptedBackend, Step, text, tool_use, usage


def scripted(request: SpawnRequest) -> ScriptedBackend:
    """A two-turn or one-turn script; see the module docstring."""
    if os.environ.get("TEST_WORKER_ROLE") == "first" and request.prompt.startswith("slow"):
        steps = [
            Step([tool_use("Glob", {"pattern": "*.txt"})], usage=usage(100, 10)),
            Step([text("never reached")], latency=60.0),
        ]
    else:
        steps = [Step([text(f"done: {request.prompt}")], usage=usage(100, 10))]
    return ScriptedBackend({"main": steps})


def broken(request: SpawnRequest) -> ScriptedBackend:
    """A factory that fails, as a misconfigured backend does."""
    raise RuntimeError(f"no backend for {request.prompt}")
