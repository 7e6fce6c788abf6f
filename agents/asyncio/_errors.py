"""The Agent SDK's exception classes about its CLI process, for ported ``except`` clauses.

trio-agents runs the agent loop in-process: there is no CLI to find, start or read, so these
are never raised. They exist so that a program's ``except CLINotFoundError:`` still compiles
after its import changed. The errors trio-agents does raise are the same as under Trio:
``ResultError`` after an error result, ``ValueError`` for bad options, and whatever exception a
callback or a prompt stream raised, as it is.
"""

from __future__ import annotations

__all__ = [
    "CLIConnectionError",
    "CLIJSONDecodeError",
    "CLINotFoundError",
    "ClaudeSDKError",
    "ProcessError",
]


class ClaudeSDKError(Exception):
    """The Agent SDK's base class of its CLI errors (never raised here)."""


class CLIConnectionError(ClaudeSDKError):
    """The SDK could not talk to its CLI (never raised here)."""


class CLINotFoundError(CLIConnectionError):
    """The SDK's CLI is not installed (never raised here)."""


class ProcessError(ClaudeSDKError):
    """The SDK's CLI process failed (never raised here)."""


class CLIJSONDecodeError(ClaudeSDKError):
    """The SDK's CLI printed a line that is not JSON (never raised here)."""
