"""BashOutput's filter keeps the lines Python's ``re`` finds a match in, and never holds the event
loop: a filter whose backtracking is not bounded runs in a process of its own, with a deadline.

``(a+)+b`` over a line of 40 ``a`` took hours on the event loop, where nothing could cancel it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import trio
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agents.tools import _line_filter
from agents.tools._line_filter import FilterError, _bounded, filter_lines
from agents.tools.base import ToolContext

from .toolkit import call, printed_within_a_deadline, text_of

_SAFE = st.sampled_from(["a", "^a", "b$", "a.b", "a+", "a*b", "[ab]+c", r"\d", "a|b", "(ab)"])
_ANY = st.sampled_from([r"(a+)+b", r"(?<=a)b", r"(a)\1", "a+b+c+d", "é", r"(?i)A", "(a|b)*c"])
_TEXTS = st.lists(st.text(alphabet="abc1é ", max_size=12), max_size=6).map("\n".join)


def _plain(text: str, pattern: str) -> str:
    regex = re.compile(pattern)
    return "\n".join(line for line in text.splitlines() if regex.search(line))


@settings(max_examples=300, deadline=None)
@given(pattern=_SAFE, text=_TEXTS)
def test_a_bounded_filter_keeps_what_re_keeps(pattern: str, text: str) -> None:
    assert _bounded(pattern, text.splitlines())
    assert trio.run(filter_lines, text, pattern) == _plain(text, pattern)


@settings(max_examples=15, deadline=None)
@given(pattern=_ANY, text=_TEXTS)
@example(pattern=r"(a+)+b", text="aaab\naaa\nb")
def test_any_other_filter_keeps_what_re_keeps_in_its_own_process(pattern: str, text: str) -> None:
    """Look-arounds, back-references, quantified groups, flags, non-ASCII: the same ``re``."""
    assert not _bounded(pattern, text.splitlines())
    assert trio.run(filter_lines, text, pattern) == _plain(text, pattern)


def test_a_long_line_makes_a_bounded_pattern_go_to_its_own_process() -> None:
    """Two unbounded quantifiers over a line of 10 000 characters: C(L + 3, 3) steps, too many."""
    assert _bounded("a+b+c", ["a" * 100])
    assert not _bounded("a+b+c", ["a" * 10_000])


def test_a_catastrophic_filter_is_an_error_in_bounded_time() -> None:
    """In a process of its own with a deadline: on the event loop it took hours."""
    script = (
        "import trio; from agents.tools import _line_filter as f; f.FILTER_SECONDS = 2.0\n"
        "try:\n"
        "    trio.run(f.filter_lines, 'a' * 40 + '\\nb', '(a+)+c')\n"
        "except f.FilterError as e:\n"
        "    print(e)\n"
    )
    printed = printed_within_a_deadline(script, seconds=60)
    assert printed.startswith("filter regex '(a+)+c' took longer than 2 s over the output")


async def test_a_slow_filter_leaves_the_event_loop_free(
    autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the filter runs elsewhere, the loop runs other tasks; its deadline is Trio's."""
    monkeypatch.setattr(_line_filter, "FILTER_SECONDS", 5.0)
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await trio.sleep(1)
            ticks += 1

    async with trio.open_nursery() as nursery:
        nursery.start_soon(tick)
        with pytest.raises(FilterError, match="took longer than 5 s"):
            await filter_lines("a" * 40 + "\nb", "(a+)+c")
        nursery.cancel_scope.cancel()
    assert ticks >= 4


async def test_an_invalid_filter_loses_no_output(ctx: ToolContext, tmp_path: Path) -> None:
    """The call is an error naming the regex, and the next read returns the output."""
    from agents.tools.shell import bash_output_tool, bash_tool

    command = {"command": "printf 'a1\\nb2\\n'", "run_in_background": True}
    out = await call(bash_tool(), command, ctx)
    assert out.data is not None
    shell_id = out.data["backgroundTaskId"]
    with trio.fail_after(5):
        await ctx.state["shell"].background[shell_id].done.wait()
    output = bash_output_tool()
    failed = await call(output, {"bash_id": shell_id, "filter": "a("}, ctx)
    assert failed.is_error and "invalid filter regex 'a('" in text_of(failed)
    again = text_of(await call(output, {"bash_id": shell_id}, ctx))
    assert "a1\nb2" in again


async def test_a_filter_process_that_fails_is_an_error_naming_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The filter's process dying (out of memory, say) is an error naming the pattern and the
    process's last words, as a slow one is: never an exception of the subprocess module out of
    the tool, nor an empty filter's result."""
    monkeypatch.setattr(_line_filter, "_SCRIPT", "raise MemoryError('out of room')")
    with pytest.raises(FilterError, match=r"filter regex '\(a\+\)\+b' failed: .*out of room"):
        await filter_lines("aaa\nb", "(a+)+b")
