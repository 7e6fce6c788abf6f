"""The user's cockpit: the agent tree rebuilt from the message stream, drawn live with ``rich``.

Everything here consumes the public message stream only (what ``query()`` yields), so it works
the same on any session: :class:`TreeState` is the tree as the stream tells it,
:func:`open_live_tree` keeps it on screen while the session runs, :func:`to_stream_json` writes a
message the way ``claude -p --output-format stream-json`` does, and :class:`EventLog` tells the
``agents`` loggers what happens.

Each name loads its module on first use: ``rich`` only with the live view (a program writing to a
pipe never pays it), the tree's classes only when a tree is kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .live import LiveTree as LiveTree
    from .live import open_live_tree as open_live_tree
    from .live import render as render
    from .logs import EventLog as EventLog
    from .logs import configure_logging as configure_logging
    from .state import AgentNode as AgentNode
    from .state import TreeState as TreeState
    from .stream_json import to_stream_json as to_stream_json

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

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "AgentNode": ".state",
        "EventLog": ".logs",
        "LiveTree": ".live",
        "TreeState": ".state",
        "configure_logging": ".logs",
        "open_live_tree": ".live",
        "render": ".live",
        "to_stream_json": ".stream_json",
    },
)
