"""Lines the Bash grammar would read too slowly are not parsed: they ask, naming the limit.

tree-sitter-bash holds the interpreter while it parses (every agent of the tree waits), and
reads two shapes in more than linear time: a here-document line with many expansions
(quadratic: one line of 21 000 ``$x`` took 4.4 s) and a long pipeline. These tests count the
parser's calls, not time: a line over a limit is refused before the parser sees it. Lines that
are not bash can send the grammar's error recovery into quadratic time (a first word of
``[a]``s): a long line's parse is stopped past ``MAX_PARSE_SECONDS`` of CPU, and lets other
threads run meanwhile; those tests use a real thread and the real clock.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
import trio

from agents.permissions import _bash
from agents.permissions._bash import (
    MAX_COMMAND_BYTES,
    MAX_HEREDOC_LINE_EXPANSIONS,
    MAX_PARSE_SECONDS,
    MAX_PIPES,
    analyze,
)

from .helpers import decide, make_gate

_EXPANSIONS = f"a line with more than {MAX_HEREDOC_LINE_EXPANSIONS} '$' in a command with a here-document (too slow to parse)"  # noqa: E501
_PIPES = f"more than {MAX_PIPES} '|' in one command (too slow to parse)"
_SLOW = f"the grammar took more than {MAX_PARSE_SECONDS:g} s of CPU to read it (too slow to parse)"
#: Not bash: the grammar's error recovery reads it in quadratic time (6.2 s unstopped).
_BRACKETS = "x" + "[a]" * ((MAX_COMMAND_BYTES - 1) // 3)


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The sources handed to the parser."""
    sources: list[bytes] = []
    parse = _bash._parse

    def counting(data: bytes) -> Any:
        sources.append(data)
        return parse(data)

    monkeypatch.setattr(_bash, "_parse", counting)
    return sources


def _heredoc(per_line: int, lines: int = 1, quote: str = "") -> str:
    return f"cat <<{quote}EOF{quote}\n" + ("$x " * per_line + "\n") * lines + "EOF"


def test_a_heredoc_line_at_the_limit_is_analysed(parsed: list[bytes]) -> None:
    analysis = analyze(_heredoc(MAX_HEREDOC_LINE_EXPANSIONS))
    assert not analysis.opaque
    assert [c.text for c in analysis.commands] == ["cat"]
    assert len(parsed) == 1


def test_a_heredoc_line_over_the_limit_asks_unparsed(parsed: list[bytes]) -> None:
    """One ``$`` more on one line: opaque, naming the limit, and the parser never runs."""
    analysis = analyze(_heredoc(MAX_HEREDOC_LINE_EXPANSIONS + 1))
    assert analysis.opaque == (_bash.Opaque(_EXPANSIONS),)
    assert parsed == []


def test_the_expansions_are_counted_per_line(parsed: list[bytes]) -> None:
    """Many lines each within the limit (linear for the grammar) are analysed, and so is a
    line of many ``$`` in a command without a here-document."""
    assert not analyze(_heredoc(MAX_HEREDOC_LINE_EXPANSIONS, lines=40)).opaque
    assert not analyze("echo " + "$x" * 4 * MAX_HEREDOC_LINE_EXPANSIONS).opaque
    assert len(parsed) == 2


def test_a_nested_script_over_the_limit_is_not_parsed(parsed: list[bytes]) -> None:
    """``bash -c $'…'`` whose script, decoded, has such a here-document line (the line itself
    holds one ``$``): the line is parsed, the script is not, and the line asks."""
    script = "cat <<EOF\\n" + "\\x24x " * (MAX_HEREDOC_LINE_EXPANSIONS + 1) + "\\nEOF"
    analysis = analyze(f"bash -c $'{script}'")
    assert _bash.Opaque(_EXPANSIONS) in analysis.opaque
    assert len(parsed) == 1


def test_pipes_at_the_limit_are_analysed_and_one_more_asks(parsed: list[bytes]) -> None:
    at_limit = "grep '" + "a|" * MAX_PIPES + "' f"
    assert not analyze(at_limit).opaque
    over = "grep '" + "a|" * (MAX_PIPES + 1) + "' f"
    assert analyze(over).opaque == (_bash.Opaque(_PIPES),)
    assert parsed == [at_limit.encode()]


@pytest.mark.parametrize(
    "line",
    [_heredoc(MAX_HEREDOC_LINE_EXPANSIONS + 1), "ls | " * MAX_PIPES + "ls"],
)
def test_a_line_too_slow_to_parse_is_not_allowed_by_a_rule(line: str) -> None:
    """Every command of the line is allowed by a rule; the gate asks all the same (the
    callback here refuses), since the analysis cannot tell what else the line holds."""
    gate = make_gate("/repo", allow=["Bash(cat:*)", "Bash(ls:*)"], home="/home/u")
    outcome = trio.run(decide, gate, "Bash", {"command": line})
    assert outcome.behavior == "deny"
    assert outcome.decided_by != "rule"


def test_a_line_the_grammar_reads_too_long_asks_naming_the_limit() -> None:
    """Its parse is stopped past the limit (about the limit's CPU, not the 6 s it would take),
    and the line asks, naming the limit."""
    start = time.thread_time()
    assert analyze(_BRACKETS).opaque == (_bash.Opaque(_SLOW),)
    assert time.thread_time() - start < 4 * MAX_PARSE_SECONDS


def test_a_nested_script_read_too_long_asks() -> None:
    """A script in ``bash -c`` (half the line's budget of bytes: 1 s unstopped) asks so too."""
    script = "x" + "[a]" * 10_000
    assert _bash.Opaque(_SLOW) in analyze(f"bash -c '{script}'").opaque


def test_after_a_stopped_parse_the_next_line_is_read_afresh() -> None:
    """A stopped parser would go on with the stopped parse at its next call: it is reset."""
    assert analyze(_BRACKETS).opaque == (_bash.Opaque(_SLOW),)
    line = "echo " + "a " * 3000 + "&& rm -rf x"
    assert [c.text for c in analyze(line).commands] == [line[: line.index(" &&")], "rm -rf x"]


def test_a_long_parse_lets_other_threads_run() -> None:
    """The grammar holds the interpreter for a whole parse; a long line's parse calls back into
    Python as it goes, where another thread (the event loop's) gets its turn: a thread sleeping
    1 ms at a time wakes many times during it (once at most, the parse in one call)."""
    done = threading.Event()
    worker = threading.Thread(target=lambda: (analyze(_BRACKETS), done.set()))
    ticks = 0
    worker.start()
    while not done.wait(0.001):
        ticks += 1
    worker.join()
    assert ticks >= 20
