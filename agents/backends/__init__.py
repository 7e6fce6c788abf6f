"""Model backends: the :class:`Backend` protocol, its request/event types and errors, and
:class:`AnthropicBackend` (the Messages API through the ``anthropic`` client, imported lazily so
``import agents.backends`` stays cheap).
"""

from __future__ import annotations

import typing as _typing

from .base import APIConnectionError as APIConnectionError
from .base import APIStatusError as APIStatusError
from .base import Backend as Backend
from .base import BackendError as BackendError
from .base import BackendEvent as BackendEvent
from .base import ContentBlockDelta as ContentBlockDelta
from .base import ContentBlockStart as ContentBlockStart
from .base import ContentBlockStop as ContentBlockStop
from .base import MessageDelta as MessageDelta
from .base import MessageStart as MessageStart
from .base import MessageStop as MessageStop
from .base import ModelNotAvailable as ModelNotAvailable
from .base import ModelRequest as ModelRequest

if _typing.TYPE_CHECKING:
    from .anthropic import AnthropicBackend as AnthropicBackend

__all__ = [
    "APIConnectionError",
    "APIStatusError",
    "AnthropicBackend",
    "Backend",
    "BackendError",
    "BackendEvent",
    "ContentBlockDelta",
    "ContentBlockStart",
    "ContentBlockStop",
    "MessageDelta",
    "MessageStart",
    "MessageStop",
    "ModelNotAvailable",
    "ModelRequest",
]


def __getattr__(name: str) -> _typing.Any:
    # ``AnthropicBackend`` loads on first use: ``agents.backends.base`` (which every run imports)
    # comes with this package, the Anthropic wrapper only with the Anthropic backend.
    if name == "AnthropicBackend":
        from .anthropic import AnthropicBackend

        return AnthropicBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
