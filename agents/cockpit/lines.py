"""One-line descriptions of stream events, shared by the live tree, the plain lines and the log,
and :func:`printable`, what makes any text safe to show on a terminal.

Kept apart from :mod:`agents.cockpit.state` so that a run printing plain lines (or only logging)
does not build the tree's classes.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["MAIN", "denial_line", "printable", "retry_line"]

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


#: What a terminal acts on instead of showing: the C0 controls but the tab (ESC starts the
#: sequences that clear the screen, set the title or write the clipboard; a carriage return or
#: a newline starts a line of the writer's choosing), DEL, the C1 controls (``\x9b`` is a CSI on
#: its own to some terminals), and the bidirectional marks, embeddings, overrides and isolates
#: that show a text in another order than it is written.
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROLS = re.compile(f"[\x00-\x08\x0a-\x1f\x7f-\x9f{_BIDI}]")
_CONTROLS_BUT_NEWLINE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")
_NAMED = {"\n": "\\n", "\r": "\\r"}


def _written_out(match: re.Match[str]) -> str:
    c = match.group()
    named = _NAMED.get(c)
    if named is not None:
        return named
    code = ord(c)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, lines: bool = False) -> str:
    """``text`` as a terminal may be given it: each control character written out as an escape
    (``\\x1b``, ``\\r``, ``\\u202e``), as ``ls`` shows a file name on a terminal.

    Whatever a model, a server or a project's file wrote (a subagent's description, a command,
    an API error, a settings value) then shows as what it is, and cannot clear the screen, set
    the window title, write the clipboard, move the cursor over a line or forge one. ``lines``:
    a text block, whose newlines are kept (a CRLF as one newline); otherwise a newline too is
    written out, as one event is one line."""
    if lines:
        if "\r\n" in text:
            text = text.replace("\r\n", "\n")
        controls = _CONTROLS_BUT_NEWLINE
    else:
        controls = _CONTROLS
    if controls.search(text) is None:  # as a rule: nothing to write out, the text itself
        return text
    return controls.sub(_written_out, text)
