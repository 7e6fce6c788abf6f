"""BashOutput's ``filter``: the lines of a shell's output that a model's regex matches.

The model writes both the regex and, through the command it ran, the text. Python's ``re``
backtracks: ``(a+)+b`` over a line of 30 ``a`` takes tens of seconds, on the event loop, where
nothing can cancel it, and every agent of the tree stalls. So the filter runs here only when its
worst case is bounded, as Grep decides it (:func:`agents.tools._grep.translate`: no quantified
group, at most two unbounded quantifiers that may give back, a bounded number of ways through
the rest, and ``C(L + k + 1, k + 1)`` steps a line under ``WORK_LIMIT``). Any other filter (a
look-around, a back-reference, a quantified group, a pattern over a long line) runs in a Python
process of its own, the same ``re`` on the same lines, which a deadline or a cancellation ends.
"""

from __future__ import annotations

import re

import trio

from ._apart import last_error_line, run_python
from ._grep import bounded_search

__all__ = ["FILTER_SECONDS", "FilterError", "filter_lines"]

#: How long a filter may run in its own process before the call gives up on it
FILTER_SECONDS = 10.0

_SCRIPT = """
import re, sys
regex = re.compile(sys.argv[1])
text = sys.stdin.buffer.read().decode("utf-8", "surrogateescape")
out = "\\n".join(line for line in text.splitlines() if regex.search(line))
sys.stdout.buffer.write(out.encode("utf-8", "surrogateescape"))
"""


class FilterError(Exception):
    """The filter cannot be used: not a regex, or it took longer than ``FILTER_SECONDS``."""


async def filter_lines(text: str, pattern: str) -> str:
    """The lines of ``text`` that ``pattern`` (Python's ``re``) finds a match in, joined by
    newlines. Raises :class:`FilterError` naming the pattern if it is no regex or runs out of
    time."""
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise FilterError(f"invalid filter regex {pattern!r}: {exc}") from None
    lines = text.splitlines()
    if _bounded(pattern, lines):
        await trio.lowlevel.checkpoint()
        return "\n".join(line for line in lines if regex.search(line))
    done = await run_python(
        _SCRIPT, [pattern], text.encode("utf-8", "surrogateescape"), FILTER_SECONDS
    )
    if done is None:
        raise FilterError(
            f"filter regex {pattern!r} took longer than {FILTER_SECONDS:g} s over the output "
            "(it backtracks: simplify it, e.g. no quantified group such as (a+)+)"
        )
    if done.returncode != 0:
        raise FilterError(f"filter regex {pattern!r} failed: {last_error_line(done)}")
    return done.stdout.decode("utf-8", "surrogateescape")


def _bounded(pattern: str, lines: list[str]) -> bool:
    """Whether ``re`` searches ``lines`` with ``pattern`` in a bounded number of steps."""
    return bounded_search(pattern, map(len, lines))
