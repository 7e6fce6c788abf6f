"""The CLI's start: Trio imported without the ``ldconfig`` child process it would start, and the
cyclic garbage collector held off through start-up only when the process is the command."""

from __future__ import annotations

import subprocess
import sys

import pytest

_PROBE = """
import subprocess, sys
started = []
real_popen = subprocess.Popen.__init__
def popen(self, args, *rest, **kwargs):
    started.append(args)
    real_popen(self, args, *rest, **kwargs)
subprocess.Popen.__init__ = popen
import ctypes.util
before = ctypes.util.find_library
from agents.cli import import_trio
import_trio()
import trio._core._thread_cache as cache
print(started, cache.set_os_thread_name is not None, ctypes.util.find_library is before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the lookup is Linux's")
def test_the_cli_imports_trio_without_starting_a_process() -> None:
    """No ``ldconfig -p``; Trio still names its threads; ``find_library`` is restored."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["[]", "True", "True"], done.stdout + done.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the lookup is Linux's")
def test_trio_imported_the_ordinary_way_would_start_one() -> None:
    """The control: without the CLI's import, Trio's import runs ``ldconfig`` (so the test
    above can fail)."""
    probe = _PROBE.replace("import_trio()", "import trio")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert "ldconfig" in done.stdout, done.stdout


_DEFERRED = """
import gc
from agents.cli import defer_collection
before = gc.get_threshold()
defer_collection(5_000)
during = gc.get_threshold()
collections = gc.get_stats()[0]["collections"]
kept = [[] for _ in range(2_000)]
held_off = gc.get_stats()[0]["collections"] == collections
kept += [[] for _ in range(10_000)]
print(before == gc.get_threshold(), during[0], held_off, gc.get_freeze_count() > 10_000)
"""


def test_start_up_collection_is_deferred_then_the_defaults_come_back_frozen() -> None:
    """No collection before ``allocations``; after the first, the default thresholds and the
    survivors frozen."""
    done = subprocess.run(
        [sys.executable, "-c", _DEFERRED], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["True", "5000", "True", "True"], done.stdout + done.stderr


def test_main_called_by_a_program_leaves_the_collector_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import gc

    from agents import cli

    monkeypatch.setattr(cli, "_demo", lambda args: 0)
    before = gc.get_threshold()
    assert cli.main(["demo"]) == 0
    assert gc.get_threshold() == before
