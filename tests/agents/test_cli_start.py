"""The CLI's start: Trio is imported without the ``ldconfig`` child process it would start."""

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
