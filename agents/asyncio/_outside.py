"""The error of a Trio entry point called outside Trio: it says how to use it from asyncio."""

from __future__ import annotations

__all__ = ["outside_trio_error"]


def outside_trio_error(name: str) -> RuntimeError:
    """``agents.<name>`` was used with no Trio task running (under asyncio, or no loop)."""
    call = f"{name}()" if name[0].islower() else name
    return RuntimeError(
        f"agents.{call} must run inside Trio (trio.run); from asyncio (asyncio.run, anyio.run, "
        f"uvloop) import it from agents.asyncio instead: 'from agents.asyncio import {name}'"
    )
