"""The code stays typed, linted and layered: mypy --strict, ruff, and runtime ↛ agents."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


def test_mypy_strict_is_clean() -> None:
    """mypy --strict (configured in pyproject) finds nothing in runtime/ and agents/."""
    done = _run("mypy")
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_is_clean() -> None:
    """ruff check finds nothing in the code, tests and benchmarks."""
    done = _run("ruff", "check", "runtime", "agents", "tests", "benchmarks")
    assert done.returncode == 0, done.stdout + done.stderr


def test_runtime_never_imports_agents() -> None:
    """The kernel stays independent of the SDK built on it."""
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "runtime").rglob("*.py")
        if "import agents" in path.read_text() or "from agents" in path.read_text()
    ]
    assert offenders == []


def test_import_agents_does_not_import_anthropic() -> None:
    """import agents stays cheap: the anthropic client loads only when its backend is used."""
    code = "import sys, agents, agents.backends; print('anthropic' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
