"""One agent's history: the Messages API's ``messages`` list, and its only writer.

The loop appends to it (a user turn, a response, a turn's tool results); compaction, ``/clear``
and resume replace it whole through :meth:`History.replace`, which bumps :attr:`generation`.
Whatever keeps a measure of the history incrementally (the request-size estimate of the
``reserve`` budget mode) checks the generation: a history replaced by one with as many entries
as before must not be taken for the old one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

__all__ = ["History"]

#: the Messages API's shape of one message: ``{"role": ..., "content": ...}``
ApiMessage = dict[str, Any]


class History(Sequence[ApiMessage]):
    """The messages of one agent, in order. Read like a list; written only by its methods."""

    __slots__ = ("_messages", "generation", "last_reason")

    def __init__(self, messages: Iterable[ApiMessage] = ()) -> None:
        self._messages: list[ApiMessage] = list(messages)
        #: bumped by every :meth:`replace`: a measure taken at another generation is stale
        self.generation = 0
        #: why the history was last replaced ("" while it has only grown)
        self.last_reason = ""

    # -- writing ----------------------------------------------------------------------------------

    def append(self, message: ApiMessage) -> None:
        """A new message at the end (a user turn, a response, tool results)."""
        self._messages.append(message)

    def replace(self, messages: Iterable[ApiMessage], reason: str) -> None:
        """Rewrite the whole history (``reason``: "compact", "clear", "resume" ...)."""
        self._messages = list(messages)
        self.generation += 1
        self.last_reason = reason

    def take(self, reason: str) -> list[ApiMessage]:
        """Empty the history and hand its list over (the session's end frees it elsewhere)."""
        taken, self._messages = self._messages, []
        self.generation += 1
        self.last_reason = reason
        return taken

    # -- reading ----------------------------------------------------------------------------------

    def messages(self) -> list[ApiMessage]:
        """A copy of the messages, for a request (later appends do not change it)."""
        return self._messages.copy()

    def __len__(self) -> int:
        return len(self._messages)

    def __bool__(self) -> bool:
        return bool(self._messages)

    def __iter__(self) -> Iterator[ApiMessage]:
        return iter(self._messages)

    @overload
    def __getitem__(self, index: int) -> ApiMessage: ...
    @overload
    def __getitem__(self, index: slice) -> list[ApiMessage]: ...
    def __getitem__(self, index: int | slice) -> ApiMessage | list[ApiMessage]:
        return self._messages[index]

    def __repr__(self) -> str:
        return f"History({len(self._messages)} messages, generation {self.generation})"
