"""What a session takes from outside its options: external MCP servers, settings files, skills
and slash commands — opened once per session, before its first message.

:func:`open_session_sources` loads the files of ``setting_sources`` (in a thread), connects the
external servers of ``mcp_servers`` and of the agent definitions (concurrently, owned by its own
nursery), and yields a :class:`SessionSources` that the session's assembly asks for:

* :meth:`SessionSources.apply` — the options with the settings merged in (below the options'
  own values: rules and directories are added, a mode or an env key the options set wins);
* :meth:`SessionSources.add_tools` — MCP, ``Skill`` and ``ToolSearch`` tools into a registry,
  with MCP definitions deferred per ``tool_search``;
* :meth:`SessionSources.system_blocks` — the skills' names and descriptions;
* :meth:`SessionSources.mcp_status` — the init message's ``mcp_servers`` entries;
* :meth:`SessionSources.expand` — a ``/command args`` prompt as the command file's text.

When the block ends, every server connection is closed and every server process stopped.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs
import trio

from .._loop.one_shot import ask_once, run_short_agent
from ..backends.base import ModelRequest
from ..messages import ResultMessage
from ..settings import (
    Settings,
    SkillFile,
    SlashCommand,
    expand_command,
    load_commands,
    load_mcp_json,
    load_settings,
    load_skills,
    shell_hook_matchers,
    skill_tool,
    skills_prompt_block,
)
from ..tools.base import SdkMcpServer, Tool, ToolRegistry
from ..tools.toolsearch import DeferredTools, choose_deferred, tool_search_tool
from .gate import lookout_gate

if TYPE_CHECKING:
    from .._loop.session import Session
    from ..mcp import McpServers
    from ..options import AgentDefinition, AgentOptions

__all__ = ["SessionSources", "external_servers", "open_session_sources"]


def external_servers(options: AgentOptions) -> dict[str, Any]:
    """Every external server config of the session: the options' and the agent definitions'."""
    out = {k: v for k, v in options.mcp_servers.items() if not isinstance(v, SdkMcpServer)}
    for name, definition in (options.agents or {}).items():
        for entry in definition.mcp_servers or ():
            if isinstance(entry, str):
                if entry not in options.mcp_servers:
                    known = ", ".join(options.mcp_servers) or "none"
                    raise ValueError(
                        f"agents[{name!r}].mcp_servers: unknown server {entry!r} "
                        f"(mcp_servers has: {known})"
                    )
            elif isinstance(entry, Mapping):
                for key, config in entry.items():
                    if not isinstance(config, SdkMcpServer):  # in-process: see for_child
                        out.setdefault(key, config)
            else:
                raise ValueError(
                    f"agents[{name!r}].mcp_servers entries must be server names or "
                    f"{{name: config}} dicts, got {entry!r}"
                )
    return out


def _timeout_env(options: AgentOptions, name: str, default: float) -> float:
    """Claude Code's ``MCP_TIMEOUT`` / ``MCP_TOOL_TIMEOUT`` (milliseconds), options.env first."""
    raw = options.env.get(name, os.environ.get(name))
    if raw is None:
        return default
    try:
        value = float(raw) / 1000
    except ValueError:
        raise ValueError(f"{name} must be a number of milliseconds, got {raw!r}") from None
    if value <= 0:
        raise ValueError(f"{name} must be > 0 milliseconds, got {raw!r}")
    return value


@attrs.define(eq=False)
class SessionSources:
    """The loaded files and the connected servers of one session."""

    settings: Settings
    skills: dict[str, SkillFile]
    commands: dict[str, SlashCommand]
    servers: McpServers | None
    cwd: str
    deferred: DeferredTools | None = None
    #: the project's ``.mcp.json`` servers the options do not name (the options win)
    project_servers: dict[str, Any] = attrs.Factory(dict)
    #: the session, once it exists (prompt hooks ask its model)
    session: Session | None = None

    def bind(self, session: Session) -> None:
        """The session these sources serve: prompt hooks ask its backend, on its budget."""
        self.session = session

    async def ask_model(
        self, prompt: str, system: str, model: str | None, hook_input: dict[str, Any]
    ) -> str | None:
        """A prompt hook's question: one request of its own (``purpose="hook"``) through the
        budget gate, charged to the agent the hook runs for; None when the budget refuses it."""
        session = self.session
        if session is None:
            raise RuntimeError("a prompt hook ran before its session started")
        from ..options import resolve_model

        agent_id = str(hook_input.get("agent_id") or "main")
        chosen = resolve_model(model) if model else session.options.resolved_model
        request = ModelRequest(
            model=chosen,
            messages=[{"role": "user", "content": prompt}],
            max_tokens=512,
            system=[{"type": "text", "text": system}],
            agent_id=agent_id,
            agent_type=str(hook_input.get("agent_type") or "main"),
            purpose="hook",
        )
        response = await ask_once(session, request)
        if response is None:
            return None
        return response.text

    async def run_hook_agent(
        self, prompt: str, system: str, model: str | None, hook_input: dict[str, Any]
    ) -> ResultMessage:
        """An agent hook's run: a short-lived agent with read-only tools on the session's
        backend and budget, charged below the agent the hook runs for."""
        session = self.session
        if session is None:
            raise RuntimeError("an agent hook ran before its session started")
        from .._ids import new_id
        from ..options import resolve_model
        from ..settings import AGENT_HOOK_MAX_TURNS, AGENT_HOOK_TOOLS, check_decision
        from ..tools.builtin import builtin_tools

        tools = ToolRegistry()
        for tool in builtin_tools(AGENT_HOOK_TOOLS):
            tools.add(tool)
        parent = str(hook_input.get("agent_id") or "main")
        return await run_short_agent(
            session,
            agent_id=f"{parent}/hook-{new_id()[-8:]}",  # (the end of an id is what varies)
            agent_type="hook-agent",
            model=resolve_model(model) if model else session.options.resolved_model,
            system=system,
            prompt=prompt,
            tools=tools,
            max_turns=AGENT_HOOK_MAX_TURNS,
            check=check_decision,
            gate=lookout_gate(session),
        )

    def apply(self, options: AgentOptions) -> AgentOptions:
        """``options`` with the settings merged in below the options' own values."""
        if self.project_servers:
            merged = {**options.mcp_servers, **self.project_servers}
            options = attrs.evolve(options, mcp_servers=merged)
        s = self.settings
        if not (
            s.allow
            or s.deny
            or s.ask
            or s.additional_directories
            or s.default_mode
            or s.env
            or s.hooks
        ):
            return options
        hooks: dict[str, list[Any]] = {k: list(v) for k, v in (options.hooks or {}).items()}
        env = {**s.env, **options.env}
        matchers_of = shell_hook_matchers(
            s.hooks, self.cwd, env, ask=self.ask_model, run_agent=self.run_hook_agent
        )
        for event, matchers in matchers_of.items():
            hooks.setdefault(event, []).extend(matchers)
        extra = dict(options.extra)
        if s.ask:
            extra["ask_rules"] = [*extra.get("ask_rules", ()), *s.ask]
        return attrs.evolve(
            options,
            allowed_tools=_union(options.allowed_tools, s.allow),
            disallowed_tools=_union(options.disallowed_tools, s.deny),
            add_dirs=_union(options.add_dirs, s.additional_directories),
            permission_mode=options.permission_mode or s.default_mode,
            env=env,
            hooks=hooks or None,
            extra=extra,
        )

    def tools_for(self, servers: list[str] | None = None) -> list[Tool]:
        """The connected external servers' tools (only ``servers``' when given)."""
        if self.servers is None:
            return []
        tools = self.servers.tools()
        if servers is None:
            return tools
        prefixes = tuple(f"mcp__{name}__" for name in servers)
        return [t for t in tools if t.name.startswith(prefixes)]

    def add_tools(
        self,
        registry: ToolRegistry,
        *,
        main_servers: list[str],
        skills: list[str] | None = None,
        tool_search: str = "auto",
        context_window: int = 200_000,
        hidden: Callable[[str], bool] | None = None,
    ) -> None:
        """Add the external MCP tools of ``main_servers``, ``Skill`` and ``ToolSearch``;
        ``hidden(name)`` says which tools a bare-name deny rule keeps from the model."""
        for tool in self.tools_for(main_servers):
            if tool.name not in registry and not (hidden is not None and hidden(tool.name)):
                registry.add(tool)
        chosen = (
            self.skills
            if skills is None
            else {n: self.skills[n] for n in skills if n in self.skills}
        )
        if chosen and "Skill" not in registry:
            registry.add(skill_tool(chosen))
        present = [t for name in registry.names() if (t := registry.get(name)) is not None]
        deferred = choose_deferred(present, tool_search, context_window)
        if deferred and "ToolSearch" not in registry:
            self.deferred = DeferredTools.of(deferred)
            registry.defer(self.deferred.names())
            registry.add(tool_search_tool(self.deferred))
        if self.servers is not None:  # a server's changed tool list reaches this registry
            self.servers.watch(lambda name: self.refresh_tools(registry, name, hidden))

    def for_child(
        self, definition: AgentDefinition, registry: ToolRegistry
    ) -> list[dict[str, Any]]:
        """Give a subagent the tools of its definition's own servers and its skills (only the
        named ones when ``skills`` is set); the system blocks that describe them."""
        denied = set(definition.disallowed_tools or ())
        names: list[str] = []
        for entry in definition.mcp_servers or ():
            names.extend([entry] if isinstance(entry, str) else list(entry))
        for tool in self.tools_for(names) if names else ():
            if tool.name not in registry and tool.name not in denied:
                registry.add(tool)
        for tool in _in_process_tools(definition):
            if tool.name not in registry and tool.name not in denied:
                registry.add(tool)
        if self.deferred is not None and "ToolSearch" in registry:  # the parent's deferral too
            registry.defer([n for n in self.deferred.names() if n in registry])
        if definition.skills is not None:
            unknown = [n for n in definition.skills if n not in self.skills]
            if unknown:
                known = ", ".join(sorted(self.skills)) or "none"
                raise ValueError(
                    f"unknown skill {unknown[0]!r} in AgentDefinition.skills (known: {known})"
                )
            registry.remove("Skill")
            chosen = {n: self.skills[n] for n in definition.skills}
            if chosen and "Skill" not in denied:
                registry.add(skill_tool(chosen))
            return self.system_blocks(definition.skills) if chosen else []
        return self.system_blocks() if "Skill" in registry else []

    def system_blocks(self, skills: list[str] | None = None) -> list[dict[str, Any]]:
        chosen = (
            self.skills.values()
            if skills is None
            else [self.skills[n] for n in skills if n in self.skills]
        )
        block = skills_prompt_block(chosen)
        return [] if block is None else [block]

    def mcp_status(self, options: AgentOptions) -> list[dict[str, Any]]:
        """``{"name", "status", "error"?}`` per server of ``options.mcp_servers``, in order."""
        external = {s.name: s for s in self.servers.status()} if self.servers is not None else {}
        out = []
        for key in options.mcp_servers:
            status = external.get(key)
            if status is None:
                out.append({"name": key, "status": "connected"})  # in-process: always there
            else:
                entry = {"name": key, "status": status.status}
                if status.error is not None:
                    entry["error"] = status.error
                out.append(entry)
        return out

    def server_status(self, options: AgentOptions) -> list[dict[str, Any]]:
        """The full status of each server (``tools`` and ``serverInfo`` when connected)."""
        external = {s.name: s for s in self.servers.status()} if self.servers is not None else {}
        out = []
        for key, server in options.mcp_servers.items():
            status = external.get(key)
            if status is not None:
                out.append(status.to_dict())
            elif isinstance(server, SdkMcpServer):
                out.append(
                    {
                        "name": key,
                        "status": "connected",
                        "serverInfo": {"name": server.name, "version": server.version},
                        "tools": [t.name for t in server.as_tools(key)],
                    }
                )
        return out

    def _external(self, name: str, options: AgentOptions) -> McpServers:
        if self.servers is None or name not in self.servers.names():
            server = options.mcp_servers.get(name)
            if isinstance(server, SdkMcpServer):
                raise ValueError(
                    f"MCP server {name!r} is in-process (create_sdk_mcp_server): "
                    "it cannot be reconnected or toggled"
                )
            known = ", ".join(options.mcp_servers) or "none"
            raise ValueError(f"unknown MCP server {name!r} (configured: {known})")
        return self.servers

    async def reconnect(self, name: str, options: AgentOptions) -> dict[str, Any]:
        return (await self._external(name, options).reconnect(name)).to_dict()

    async def toggle(self, name: str, enabled: bool, options: AgentOptions) -> dict[str, Any]:
        return (await self._external(name, options).toggle(name, enabled)).to_dict()

    def refresh_tools(self, registry: ToolRegistry, name: str, hidden: Any = None) -> None:
        """Bring ``registry`` up to the tools ``name`` offers now (after a reconnect or its
        ``tools/list_changed``); ``hidden(tool_name)`` says which a bare-name deny rule keeps
        from the model. Unchanged tools keep their place, so the definitions before the first
        changed one stay the cached prefix; a tool the server no longer lists stays listed (the
        server's error answers a call). With tool search on, new tools are deferred too."""
        added: list[str] = []
        for tool in self.tools_for([name]):
            old = registry.get(tool.name)
            if old is None:
                if hidden is not None and hidden(tool.name):
                    continue
                registry.add(tool)
                added.append(tool.name)
            elif old.definition() != tool.definition():
                registry.remove(tool.name)
                registry.add(tool)
                if self.deferred is not None and self.deferred.is_deferred(tool.name):
                    self.deferred.tools[tool.name] = tool
        if added and self.deferred is not None and "ToolSearch" in registry:
            for tool_name in added:
                new = registry.get(tool_name)
                if new is not None:
                    self.deferred.tools[tool_name] = new
            registry.defer([n for n in self.deferred.names() if n in registry])
            registry.remove("ToolSearch")  # its description lists the deferred names
            registry.add(tool_search_tool(self.deferred))

    def expand(self, prompt: Any) -> Any:
        """A ``/command args`` prompt as its command's text; anything else unchanged."""
        if isinstance(prompt, str) and self.commands:
            expanded = expand_command(prompt, self.commands)
            if expanded is not None:
                return expanded
        return prompt


def _in_process_tools(definition: AgentDefinition) -> list[Tool]:
    """The tools of the ``create_sdk_mcp_server`` servers a definition lists as its own."""
    out: list[Tool] = []
    for entry in definition.mcp_servers or ():
        if isinstance(entry, Mapping):
            for key, server in entry.items():
                if isinstance(server, SdkMcpServer):
                    out.extend(server.as_tools(key))
    return out


def _union(first: list[str], second: tuple[str, ...] | list[str]) -> list[str]:
    return [*first, *(x for x in second if x not in first)]


@contextlib.asynccontextmanager
async def open_session_sources(options: AgentOptions, cwd: str) -> AsyncIterator[SessionSources]:
    """Load the files and connect the servers of a session; close the servers at the end."""
    sources = options.setting_sources
    if sources or options.settings is not None:
        settings, skills, commands, from_file = await trio.to_thread.run_sync(
            _load_files, cwd, sources or [], options.settings
        )
    else:
        settings, skills, commands, from_file = Settings(), {}, {}, {}
    _check_agent_skills(options, skills)
    project = {k: v for k, v in from_file.items() if k not in options.mcp_servers}
    external = external_servers(options)
    external.update({k: v for k, v in project.items() if k not in external})
    if not external:
        yield SessionSources(settings, skills, commands, None, cwd, project_servers=project)
        return
    env_overrides = {**settings.env, **options.env}
    configs = {k: _with_env(v, env_overrides) for k, v in external.items()}
    from ..mcp import DEFAULT_CALL_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, open_mcp_servers

    async with open_mcp_servers(
        configs,
        connect_timeout=_timeout_env(options, "MCP_TIMEOUT", DEFAULT_CONNECT_TIMEOUT),
        call_timeout=_timeout_env(options, "MCP_TOOL_TIMEOUT", DEFAULT_CALL_TIMEOUT),
        max_output_tokens=int(
            options.env.get(
                "MAX_MCP_OUTPUT_TOKENS", os.environ.get("MAX_MCP_OUTPUT_TOKENS", 25_000)
            )
        ),
    ) as servers:
        yield SessionSources(settings, skills, commands, servers, cwd, project_servers=project)


def _check_agent_skills(options: AgentOptions, skills: Mapping[str, SkillFile]) -> None:
    """An agent definition naming a skill that no enabled source has fails at startup."""
    for name, definition in (options.agents or {}).items():
        for skill in definition.skills or ():
            if skill not in skills:
                known = ", ".join(sorted(skills)) or "none: no setting_sources enable skills"
                raise ValueError(
                    f"agents[{name!r}].skills: unknown skill {skill!r} (loaded: {known})"
                )


def _with_env(config: Any, env: Mapping[str, str]) -> Any:
    """A stdio config with the session's env under its own (the config's keys win)."""
    if not env or not isinstance(config, Mapping) or "command" not in config:
        return config
    return {**config, "env": {**env, **(config.get("env") or {})}}


def _load_files(
    cwd: str, sources: list[str], extra: Any
) -> tuple[Settings, dict[str, SkillFile], dict[str, SlashCommand], dict[str, Any]]:
    settings = load_settings(cwd, sources, extra=extra)
    servers = load_mcp_json(cwd) if "project" in sources else {}
    return settings, load_skills(cwd, sources), load_commands(cwd, sources), servers
