"""The backend boundary: one model request in, one streamed response out.

A backend is as small as httpx's transport: :meth:`Backend.stream` takes a :class:`ModelRequest`
and yields the Messages API's stream events (``message_start``, ``content_block_start``,
``content_block_delta``, ``content_block_stop``, ``message_delta``, ``message_stop``) as msgspec
structs. The loop builds blocks, usage and ``stop_reason`` from them, so every backend — the real
Anthropic API, the scripted one, a user's own — is driven the same way.

Failures are raised as :class:`BackendError`; the loop owns the retry policy (backoff, jitter,
``retry-after``), so a retry behaves the same on every backend and partial content of a failed
attempt never leaks.

Implementations must not ``yield`` while inside a nursery or cancel scope of their own (Trio's
rule for async generators); the loop always closes the iterator (``aclose``) when done with it.

Exception tree::

    BackendError              .status (int | None), .retryable, .retry_after
     ├── APIStatusError       an HTTP error status with the API's error message
     ├── APIConnectionError   the connection failed or the stream was cut mid-response
     └── ModelNotAvailable    404 / model not found: the loop tries ``fallback_model``
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Literal, Protocol, runtime_checkable

import msgspec

__all__ = [
    "RETRYABLE_STATUSES",
    "RETRY_AFTER_CEILING",
    "APIConnectionError",
    "APIStatusError",
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
    "retry_delay",
]


class ModelRequest(msgspec.Struct, frozen=True, omit_defaults=True, gc=False):
    """Everything a backend needs for one Messages API call.

    ``messages`` and ``system`` are in the API's own JSON shape, so the Anthropic backend sends them
    as they are. ``agent_id``/``agent_type`` identify the calling agent (``main``, or a subagent's
    type) so a scripted backend can play a different script per agent. ``purpose`` says why the
    call is made: ``turn`` (the agent loop), ``compact``, ``classifier``, ``web_fetch``.
    """

    model: str
    messages: list[dict[str, Any]]
    max_tokens: int
    system: list[dict[str, Any]] = []
    tools: list[dict[str, Any]] = []
    thinking: dict[str, Any] | None = None
    effort: str | None = None
    output_format: dict[str, Any] | None = None
    agent_id: str = "main"
    agent_type: str = "main"
    purpose: str = "turn"


class _Event(msgspec.Struct, frozen=True, tag_field="type", omit_defaults=True, gc=False):
    pass


class MessageStart(_Event, tag="message_start", frozen=True):
    """``message`` holds ``id``, ``model`` and the input side of ``usage``."""

    message: dict[str, Any]


class ContentBlockStart(_Event, tag="content_block_start", frozen=True):
    index: int
    content_block: dict[str, Any]


class ContentBlockDelta(_Event, tag="content_block_delta", frozen=True):
    """``delta``: a text, thinking, signature or input_json delta."""

    index: int
    delta: dict[str, Any]


class ContentBlockStop(_Event, tag="content_block_stop", frozen=True):
    index: int


class MessageDelta(_Event, tag="message_delta", frozen=True):
    """``delta`` holds ``stop_reason``; ``usage`` the output side (``output_tokens``)."""

    delta: dict[str, Any]
    usage: dict[str, Any] = {}


class MessageStop(_Event, tag="message_stop", frozen=True):
    pass


BackendEvent = (
    MessageStart
    | ContentBlockStart
    | ContentBlockDelta
    | ContentBlockStop
    | MessageDelta
    | MessageStop
)

RETRYABLE_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})

#: The longest wait a server's ``retry-after`` can impose, in seconds. A ``retry-after`` above the
#: backoff cap (``retry_max_delay``) is honoured up to this ceiling: waiting less than the server
#: asked for only earns another 429, while a header of hours must not park a session unseen.
RETRY_AFTER_CEILING = 60.0


def retry_delay(
    attempt: int, base: float, cap: float, retry_after: float | None, jitter: float
) -> float:
    """Seconds to wait before retry number ``attempt`` (1-based).

    Exponential backoff ``min(cap, base * 2 ** (attempt - 1))`` less up to 25 % jitter
    (``jitter`` in ``[0, 1)``), and never less than the server's ``retry_after`` — which may exceed
    ``cap`` but is cut to :data:`RETRY_AFTER_CEILING`::

        retry_delay(1, 0.5, 1.0, retry_after=3.0, jitter=0.0)   # 3.0, above the 1 s cap
        retry_delay(1, 0.5, 1.0, retry_after=600.0, jitter=0.0)  # 60.0, the ceiling
    """
    if attempt < 1:
        raise ValueError(f"attempt must be >= 1, got {attempt}")
    delay = min(cap, base * 2.0 ** (attempt - 1)) * (1 - 0.25 * jitter)
    if retry_after is not None:
        delay = max(delay, min(retry_after, RETRY_AFTER_CEILING))
    return delay


class BackendError(Exception):
    """A model call failed. ``retryable`` says whether the loop may try again."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after


class APIStatusError(BackendError):
    """The API answered with an error status; 408, 409, 429, 5xx and 529 are retryable."""

    def __init__(self, status: int, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(
            f"API error {status}: {message}",
            status=status,
            retryable=status in RETRYABLE_STATUSES or status >= 500,
            retry_after=retry_after,
        )


class APIConnectionError(BackendError):
    """The connection failed, or the stream was cut before ``message_stop``; always retryable."""

    def __init__(self, message: str) -> None:
        super().__init__(f"connection error: {message}", retryable=True)


class ModelNotAvailable(BackendError):
    """The model does not exist or is not available; the loop switches to ``fallback_model``."""

    def __init__(self, model: str, message: str = "") -> None:
        super().__init__(
            f"model not available: {model}" + (f" ({message})" if message else ""), status=404
        )
        self.model = model


@runtime_checkable
class Backend(Protocol):
    """Streams one model response. See the module docstring for the contract."""

    def stream(self, request: ModelRequest) -> AsyncIterator[BackendEvent]:
        """Yield the response's stream events, or raise :class:`BackendError`."""
        ...


StopReason = Literal["end_turn", "max_tokens", "stop_sequence", "refusal", "tool_use", "pause_turn"]
