"""Errors raised by the actor kernel.

The tree::

    RuntimeKernelError              base of every error the kernel raises on purpose
    └── SpawnRefused                the supervisor (or the ledger) said no; str(e) is user-facing
        ├── DepthLimitReached       the new actor would sit deeper than ``max_depth``
        ├── ConcurrencyLimitReached too many subagents are live already
        └── BudgetExhausted         the ledger's cap is reached, or a reservation does not fit

Refusals are ordinary, expected outcomes (the agent layer turns them into tool error results),
so their messages are fixed strings the model can read, not diagnostics. Misuse of the API
(bad arguments) raises builtins (``ValueError``, ``KeyError``) instead.
"""

from __future__ import annotations


class RuntimeKernelError(Exception):
    """Base class: lets callers catch everything the kernel refuses in one ``except``."""


class SpawnRefused(RuntimeKernelError):
    """A spawn (or a budget reservation) was refused; nothing was started or reserved.

    ``reason`` is the same text as ``str(e)``, kept as an attribute so the layer above can put
    it verbatim into a tool result without formatting the exception.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class DepthLimitReached(SpawnRefused):
    """The new actor would be deeper than the supervisor's ``max_depth`` (the root is depth 0)."""

    def __init__(self, max_depth: int) -> None:
        super().__init__(f"Maximum agent depth reached ({max_depth})")
        self.max_depth = max_depth


class ConcurrencyLimitReached(SpawnRefused):
    """As many actors of depth >= 1 as ``max_concurrent`` allows are live already."""

    def __init__(self) -> None:
        super().__init__("Concurrent subagent limit reached")


class BudgetExhausted(SpawnRefused):
    """The ledger's cap is reached, or a hard-cap reservation would not fit under it.

    Unlike :class:`DepthLimitReached` this one does not go away by retrying elsewhere in the
    tree: the whole tree shares one ledger.
    """

    def __init__(self) -> None:
        super().__init__("Budget limit reached")
