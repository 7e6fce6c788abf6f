"""Running a property's example in virtual time, with a deadlock failing instead of hanging."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import trio
import trio.testing

T = TypeVar("T")

#: virtual seconds after which a property's run fails: a deadlock (a planted bug) then fails at
#: once, the clock jumping there, instead of hanging until the mutation run's timeout
DEADLOCK_AFTER = 1e6


def run_virtual(main: Callable[[], Awaitable[T]]) -> T:
    """``trio.run(main)`` in virtual time, failing if it is not done after DEADLOCK_AFTER."""

    async def bounded() -> T:
        with trio.fail_after(DEADLOCK_AFTER):
            return await main()

    return trio.run(bounded, clock=trio.testing.MockClock(autojump_threshold=0))
