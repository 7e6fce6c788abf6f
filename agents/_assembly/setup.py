"""A session's main agent built from the options: its tools, system prompt, gate and features.

``agents._assembly.query`` runs the session; this module decides what its parts are made of.
"""

from __future__ import annotations

import os
from typing import Any

from .._features.seams import FEATURES
from .._loop.agent import DEFAULT_MAX_TOKENS, AgentLoop
from .._loop.history import History
from .._loop.session import Session
from .._tree.subagents import agent_tool, definitions_for
from ..backends.base import Backend
from ..messages import SystemMessage
from ..options import AgentOptions
from ..tools.base import SdkMcpServer, ToolRegistry
from .gate import make_gate, rules_for
from .persist import SessionSetup

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "build_registry",
    "check_supported",
    "default_backend",
    "init_message",
    "main_loop",
    "session_cwd",
    "system_blocks",
]

DEFAULT_SYSTEM_PROMPT = (
    "You are an agent running in a tool-use loop. Use the tools to act on the user's request, "
    "then answer with a concise final message."
)


def session_cwd(path: str | None) -> str:
    """The session's working directory (a string operation plus one getcwd: no real I/O)."""
    return os.path.abspath(path or os.getcwd())


def default_backend() -> Backend:
    from ..backends.anthropic import AnthropicBackend

    return AnthropicBackend()


def system_blocks(options: AgentOptions) -> list[dict[str, Any]]:
    prompt = options.system_prompt
    if prompt is None:
        text = DEFAULT_SYSTEM_PROMPT
    elif isinstance(prompt, str):
        text = prompt
    elif prompt.get("type") == "preset":
        text = DEFAULT_SYSTEM_PROMPT + ("\n\n" + prompt["append"] if prompt.get("append") else "")
    else:
        raise ValueError(f"system_prompt must be a str or a preset dict, got {prompt!r}")
    return [{"type": "text", "text": text}] if text else []


def build_registry(options: AgentOptions) -> ToolRegistry:
    """The main agent's tools: built-ins per ``tools``, then in-process MCP tools, then the
    Agent tool; a tool a bare-name deny rule names is removed (the model never sees it)."""
    from ..tools.builtin import builtin_tools

    registry = ToolRegistry()
    names = None if options.tools is None else [n for n in options.tools if n != "Agent"]
    for tool in builtin_tools(names):
        registry.add(tool)
    for key, server in options.mcp_servers.items():
        if isinstance(server, SdkMcpServer):
            for tool in server.as_tools(key):
                registry.add(tool)
        else:
            raise NotImplementedError(
                f"mcp_servers[{key!r}]: external MCP servers (stdio, HTTP, SSE) are not built yet; "
                "only create_sdk_mcp_server() servers are supported"
            )
    if options.max_subagent_depth > 0 and (options.tools is None or "Agent" in options.tools):
        registry.add(agent_tool(definitions_for(options)))
    denied = rules_for(options)
    if denied.deny:
        for name in registry.names():
            if denied.removes_tool(name):
                registry.remove(name)
    return registry


def check_supported(options: AgentOptions) -> None:
    """Options for features that are not built yet fail loudly instead of being ignored."""
    if not options.agents and not options.enable_file_checkpointing:
        return  # the usual case, decided without building the report below
    definitions = (options.agents or {}).values()
    unsupported = {
        "enable_file_checkpointing": options.enable_file_checkpointing,
        "AgentDefinition.skills (skills)": any(d.skills for d in definitions),
        "AgentDefinition.mcp_servers (per-agent MCP servers)": any(
            d.mcp_servers for d in definitions
        ),
    }
    missing = [name for name, used in unsupported.items() if used]
    if missing:
        raise NotImplementedError(f"not built yet: {', '.join(missing)}")


def _thinking(options: AgentOptions) -> dict[str, Any] | None:
    if options.thinking is not None:
        return options.thinking
    if options.max_thinking_tokens is not None:
        return {"type": "enabled", "budget_tokens": options.max_thinking_tokens}
    return None


def main_loop(
    options: AgentOptions,
    session: Session,
    setup: SessionSetup,
    registry: ToolRegistry,
    system: list[dict[str, Any]],
) -> AgentLoop:
    """The main agent: its tools and system prompt, the session's gate and the features, and
    the transcript and history ``setup`` restored."""
    return AgentLoop(
        session=session,
        agent_id="main",
        agent_type="main",
        model=options.resolved_model,
        tools=registry,
        system=system,
        max_turns=options.max_turns,
        effort=options.effort,
        thinking=_thinking(options),
        max_tokens=options.max_tokens or DEFAULT_MAX_TOKENS,
        history=History(setup.history),
        gate=make_gate(options, session),
        seams=FEATURES,
        transcript=setup.transcript,
    )


def init_message(session: Session, main: AgentLoop) -> SystemMessage:
    """The session's first message: its id, directory, model, tools, mode, agents, servers."""
    options = session.options
    return SystemMessage(
        subtype="init",
        data={
            "session_id": session.session_id,
            "cwd": session.cwd,
            "model": main.model,
            "tools": main.tools.names(),
            "permission_mode": options.resolved_permission_mode,
            "agents": sorted(options.agents or {}),
            "mcp_servers": [{"name": key, "status": "connected"} for key in options.mcp_servers],
        },
    )
