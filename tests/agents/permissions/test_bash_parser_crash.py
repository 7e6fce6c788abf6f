"""Input that crashes tree-sitter-bash's scanner is never parsed: it asks instead.

A ``{`` followed by a 4-byte UTF-8 character makes tree-sitter-bash 0.25 read out of bounds:
whether the process dies (SIGSEGV) depends on the memory layout, so each case runs in a fresh
interpreter that has imported what a session imports, where the crash was reproduced."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agents.permissions._bash import analyze

#: each crashed a fresh interpreter (with trio or attrs imported first) before the guard
CRASHERS = [
    "\x7f{\U000dc9ad",
    "{\U00031860",
    "echo {a,b} \U0001f600",
    "sh -c $'{\\xf0\\x9f\\x98\\x80'",
]

PROBE = """
import sys, attrs, trio
from agents.permissions._bash import analyze
analysis = analyze(sys.argv[1].encode("utf-8", "surrogateescape").decode("unicode_escape"))
print(bool(analysis.opaque))
"""


@pytest.mark.parametrize("command", CRASHERS)
def test_a_brace_before_a_four_byte_character_never_reaches_the_parser(command: str) -> None:
    escaped = command.encode("unicode_escape").decode("ascii")
    done = subprocess.run(
        [sys.executable, "-c", PROBE, escaped], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, f"the analysis crashed ({done.returncode}): {done.stderr[-500:]}"
    assert done.stdout.strip() == "True"  # not understood: it asks


def test_the_same_characters_without_a_brace_are_still_analysed() -> None:
    analysis = analyze("echo \U0001f600 \U00031860")
    assert not analysis.opaque
    assert [c.text for c in analysis.commands] == ["echo \U0001f600 \U00031860"]
