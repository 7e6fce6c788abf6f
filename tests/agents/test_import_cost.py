"""Start-up stays cheap: ``import agents`` and the first query load only what they use.

Each check runs in a fresh interpreter and reads ``sys.modules`` there: the optional and heavy
dependencies (the official client, the cockpit's ``rich``, the Bash analysis's tree-sitter, MCP,
httpx, the scale-out drivers) load only when the feature that needs them is used.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

#: Loaded only by the features that need them, never by ``import agents`` or a plain query.
HEAVY = ("anthropic", "rich", "tree_sitter", "mcp", "httpx", "psycopg", "coredis")
#: What a proxy in the environment would change (the wire path then goes through httpx).
PROXY_VARIABLES = frozenset(
    {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"}
)


def loaded_after(code: str, *, cwd: Path | None = None) -> set[str]:
    """The top-level packages in ``sys.modules`` once ``code`` has run in a fresh interpreter."""
    script = textwrap.dedent(code) + textwrap.dedent(
        """
        import json as _json, sys as _sys
        print(_json.dumps(sorted({name.partition(".")[0] for name in _sys.modules})))
        """
    )
    env = {k: v for k, v in os.environ.items() if k not in PROXY_VARIABLES}
    env["ANTHROPIC_API_KEY"] = "test-key"
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True, text=True, timeout=120, cwd=cwd, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def loaded_modules_after(code: str) -> set[str]:
    """Every module name in ``sys.modules`` once ``code`` has run in a fresh interpreter."""
    script = code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_every_public_name_loads_no_heavy_dependency() -> None:
    """``from agents import *`` (every name of ``agents.__all__``) leaves the heavy packages out."""
    loaded = loaded_after("import agents\nfrom agents import *\n")
    assert [name for name in HEAVY if name in loaded] == []


def test_every_public_name_is_the_object_of_its_module() -> None:
    """The lazy exports hand out the same objects as the modules that define them."""
    code = """
    import agents, agents.messages, agents.options, agents.tools.base
    from agents._assembly.query import AgentClient, query
    assert agents.query is query and agents.AgentClient is AgentClient
    assert agents.ClaudeSDKClient is AgentClient
    assert agents.ClaudeAgentOptions is agents.AgentOptions is agents.options.AgentOptions
    assert agents.ResultMessage is agents.messages.ResultMessage
    assert agents.tool is agents.tools.base.tool
    missing = [name for name in agents.__all__ if getattr(agents, name, None) is None]
    assert missing == [], missing
    assert set(agents.__all__) <= set(dir(agents))
    """
    loaded_after(code)


def test_an_unknown_name_is_an_attribute_error() -> None:
    """A name that is not exported fails as on any module (``hasattr`` and ``getattr`` work)."""
    import agents

    with pytest.raises(AttributeError, match=r"^module 'agents' has no attribute 'Nope'$"):
        agents.Nope  # noqa: B018
    assert not hasattr(agents, "ClaudeAgentOption")


def test_a_bare_import_agents_does_not_load_the_agent_loop() -> None:
    """``import agents`` alone loads neither Trio nor the loop: only the names used load them."""
    loaded = loaded_modules_after("import agents")
    assert "trio" not in loaded
    assert not any(name.startswith(("agents._loop", "agents.permissions")) for name in loaded)


def test_agents_version_answers_before_the_agent_loop_loads() -> None:
    """``agents --version`` and usage errors answer without importing Trio or the loop."""
    code = textwrap.dedent(
        """
        import contextlib, io
        from agents.cli import main
        with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):
            main(["--version"])
        with contextlib.suppress(SystemExit), contextlib.redirect_stderr(io.StringIO()):
            main(["run", "--max-turns", "x", "hi"])
        """
    )
    loaded = loaded_modules_after(code)
    assert "trio" not in loaded
    assert not any(name.startswith("agents._loop") for name in loaded)


def test_a_query_without_bash_mcp_or_cockpit_loads_none_of_their_packages(tmp_path: Path) -> None:
    """A session that reads a file and answers loads no tree-sitter, MCP, rich or client."""
    (tmp_path / "notes.txt").write_text("hello\n")
    code = f"""
    import trio
    from agents import AgentOptions, ResultMessage, query
    from agents.testing import ScriptedBackend, Step, text, tool_use

    backend = ScriptedBackend({{"main": [
        Step([tool_use("Read", {{"file_path": {str(tmp_path / "notes.txt")!r}}})]),
        Step([text("done")]),
    ]}})
    options = AgentOptions(cwd={str(tmp_path)!r}, backend=backend, model="m")

    async def main():
        async for message in query(prompt="read it", options=options):
            if isinstance(message, ResultMessage):
                assert message.subtype == "success", message

    trio.run(main)
    """
    loaded = loaded_after(code, cwd=tmp_path)
    assert [name for name in HEAVY if name in loaded] == []


def test_a_bash_call_loads_tree_sitter_when_it_is_checked(tmp_path: Path) -> None:
    """The Bash analysis still runs when a Bash call is checked (it is deferred, not skipped)."""
    code = f"""
    import trio
    from agents import AgentOptions, ResultMessage, query
    from agents.testing import ScriptedBackend, Step, text, tool_use

    backend = ScriptedBackend({{"main": [
        Step([tool_use("Bash", {{"command": "rm -rf build"}})]),
        Step([text("done")]),
    ]}})
    options = AgentOptions(
        cwd={str(tmp_path)!r}, backend=backend, model="m", disallowed_tools=["Bash(rm *)"]
    )

    async def main():
        async for message in query(prompt="clean", options=options):
            if isinstance(message, ResultMessage):
                assert [d["tool_name"] for d in message.permission_denials] == ["Bash"]

    trio.run(main)
    """
    assert "tree_sitter" in loaded_after(code, cwd=tmp_path)


def test_agents_run_reaches_its_request_without_heavy_packages(tmp_path: Path) -> None:
    """``agents run`` on the wire path, up to its (refused) request: none of the heavy packages."""
    with socket.socket() as probe:  # a port nobody listens on: the request is refused at once
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code = f"""
    import contextlib, io
    from agents.cli import main
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = main(["run", "hi", "--base-url", "http://127.0.0.1:{port}",
                       "--max-retries", "0", "--no-live", "--cwd", {str(tmp_path)!r}])
    assert status == 1 and "cannot connect" in err.getvalue(), err.getvalue()
    """
    loaded = loaded_after(code, cwd=tmp_path)
    assert [name for name in HEAVY if name in loaded] == []
