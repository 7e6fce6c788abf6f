"""The user's cockpit: the agent tree rebuilt from the message stream, drawn live with ``rich``.

Everything here consumes the public message stream only (what ``query()`` yields), so it works
the same on any session: :class:`TreeState` is the tree as the stream tells it,
:func:`open_live_tree` keeps it on screen while the session runs, :func:`to_stream_json` writes a
message the way ``claude -p --output-format stream-json`` does, and :class:`EventLog` tells the
``agents`` loggers what happens.

``rich`` is imported only when the live view is used (a program writing to a pipe never pays it).
"""

from __future__ import annotations

import typing as _typing

from .logs import EventLog as EventLog
from .logs import configure_logging as configure_logging
from .state import AgentNode as AgentNode
from .state import TreeState as TreeState
from .stream_json import to_stream_json as to_stream_json

if _typing.TYPE_CHECKING:
    from .live import LiveTree as LiveTree
    from .live import open_live_tree as open_live_tree
    from .live import render as render

__all__ = [
    "AgentNode",
    "EventLog",
    "LiveTree",
    "TreeState",
    "configure_logging",
    "open_live_tree",
    "render",
    "to_stream_json",
]

_LAZY = frozenset({"LiveTree", "open_live_tree", "render"})


def __getattr__(name: str) -> _typing.Any:
    if name in _LAZY:
        from . import live as _live

        return getattr(_live, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
