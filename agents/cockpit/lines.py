"""One-line descriptions of stream events, shared by the live tree, the plain lines and the log.

Kept apart from :mod:`agents.cockpit.state` so that a run printing plain lines (or only logging)
does not build the tree's classes.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAIN", "denial_line", "retry_line"]

#: The main agent's key in the tree (subagents are keyed by their ``Agent`` call's id).
MAIN = "main"


def retry_line(data: dict[str, Any], *, with_error: bool = True) -> str:
    """``API 529, retrying in 2.1 s (3/10): Overloaded`` from an ``api_retry`` message's data."""
    status = data.get("error_status")
    what = f"API {status}" if status else "API connection error"
    line = (
        f"{what}, retrying in {float(data.get('delay_s') or 0):.1f} s "
        f"({data.get('attempt')}/{data.get('max_retries')})"
    )
    error = str(data.get("error") or "")
    error = error.removeprefix(f"API error {status}: ")  # said once is enough
    return f"{line}: {error}" if error and with_error else line


def denial_line(data: dict[str, Any]) -> str:
    """``permission denied: Bash (reason)`` from a ``permission_denied`` message's data."""
    who = data.get("agent_id")
    where = f" in {who}" if who and who != MAIN else ""
    return f"permission denied{where}: {data.get('tool_name')} ({data.get('reason') or 'refused'})"
