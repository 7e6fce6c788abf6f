"""What ``query()`` and ``AgentClient.query()`` take as a prompt: text, or a stream of prompts
(text, or the Agent SDK's user-message dicts), checked before anything starts."""

from __future__ import annotations

from collections.abc import AsyncIterable

from .._loop.agent import check_user_blocks
from .._tree.serve import Prompt

__all__ = ["EMPTY_PROMPT", "check_prompt", "prompt_item"]

EMPTY_PROMPT = "prompt must not be empty (the model needs a user turn with text)"


def check_prompt(prompt: object) -> None:
    """Refuse what ``query()`` and ``AgentClient.query()`` cannot send: neither text nor a
    stream, or text without a character that is not blank (the Messages API answers such a
    user turn with a 400, after the connection and the session's start; said at once here).
    ``isspace``, not ``strip``: no copy of a long prompt."""
    if isinstance(prompt, str):
        if not prompt or prompt.isspace():
            raise ValueError(EMPTY_PROMPT)
    elif not isinstance(prompt, AsyncIterable):
        raise ValueError(f"prompt must be a str or an async iterable, got {type(prompt).__name__}")


def prompt_item(item: object) -> Prompt:
    """A streaming-input item (a str or an Agent SDK user-message dict) as a mailbox Prompt."""
    if isinstance(item, str):  # (an empty one is the model's to refuse: the stream goes on)
        return Prompt(item)
    if isinstance(item, dict):
        message: object = item.get("message", item)
        if (
            not isinstance(message, dict)
            or message.get("role", "user") != "user"
            or "content" not in message
        ):
            raise ValueError(
                "streaming prompt items must be str or {'type': 'user', 'message': "
                f"{{'role': 'user', 'content': ...}}}}, got {item!r}"
            )
        content = message["content"]
        if isinstance(content, list):
            check_user_blocks(content, "streaming prompt item content")
        elif not isinstance(content, str):
            raise ValueError(
                "streaming prompt item content must be a str or a list of content blocks "
                f"(dicts with a 'type'), got {type(content).__name__}"
            )
        return Prompt(content)
    raise ValueError(f"streaming prompt items must be str or dict, got {type(item).__name__}")
