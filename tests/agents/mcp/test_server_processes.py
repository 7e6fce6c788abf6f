"""No process an MCP server starts outlives the session: setsid, nohup and double forks too.

A stdio server is a program of the user's (or of a project's ``.mcp.json``), and one that starts
helpers leaves them behind when they leave its process group: stopping the server (stdin
closed, then SIGTERM and SIGKILL of its group) ended only the group. It now runs under the
shells' keeper, which ends its whole tree when it exits or is stopped. These start real
processes: every wait polls with a deadline.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from agents import AgentOptions
from agents.testing import ScriptedBackend, Step, text
from agents.testing.mcp_servers import stdio_server_config
from agents.tools import containment

from ..helpers import collect, result_of
from ..tools.test_containment import ESCAPED, ESCAPES, all_gone, pids

pytestmark = pytest.mark.skipif(
    not containment.containment_available(), reason="process containment is Linux-only"
)


async def test_what_a_stdio_server_leaves_running_ends_with_the_session(project: Path) -> None:
    server = stdio_server_config()
    command = shlex.join([server["command"], *server["args"]])
    config = {
        "type": "stdio",
        "command": "/bin/sh",
        "args": ["-c", f"{ESCAPES}; exec {command}"],
        "cwd": str(project),
    }
    options = AgentOptions(
        cwd=str(project),
        backend=ScriptedBackend([Step([text("hi")])]),
        mcp_servers={"t": config},
    )
    messages, error = await collect("hi", options)
    assert error is None and result_of(messages).result == "hi"
    init = messages[0].data  # type: ignore[union-attr]
    assert {"name": "t", "status": "connected"} in init["mcp_servers"]
    assert await all_gone(pids(project, ESCAPED), within=3.0) == {}
