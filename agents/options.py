"""``AgentOptions`` and ``AgentDefinition``: what a session is configured with.

Names follow the Python Claude Agent SDK's ``ClaudeAgentOptions`` so programs port by changing
imports; the options this runtime adds (``backend``, ``pricing``, ``budget_mode``, limits) are
keyword-only extras with defaults. Everything is validated at construction: a bad value raises
``ValueError`` naming the field, the value and what is allowed, before any model call is made::

    AgentOptions(max_turns=0)
    # ValueError: max_turns must be >= 1, got 0
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from .backends.pricing import PriceTable, default_price_table
from .tools.names import check_server_name

if TYPE_CHECKING:
    from runtime import BudgetLedger

    from .hooks import HookMatcher
    from .permissions import CanUseTool
    from .remote import RemoteAgents
    from .sessions import SessionStore

__all__ = [
    "DEFAULT_MODEL",
    "EFFORTS",
    "MODEL_ALIASES",
    "PERMISSION_MODES",
    "AgentDefinition",
    "AgentOptions",
    "resolve_model",
]

DEFAULT_MODEL = "claude-opus-5-5"
EFFORTS = ("low", "medium", "high", "xhigh", "max")
PERMISSION_MODES = ("default", "acceptEdits", "plan", "dontAsk", "auto", "bypassPermissions")
BUDGET_MODES = ("soft", "reserve")
TOOL_SEARCH_MODES = ("auto", "on", "off")
SETTING_SOURCES = ("user", "project", "local")
#: short names accepted wherever a model is named (``AgentDefinition(model="haiku")``)
MODEL_ALIASES = {
    "opus": "claude-opus-5-5",
    "sonnet": "claude-sonnet-5-5",
    "haiku": "claude-haiku-5-5",
}


def resolve_model(name: str) -> str:
    """A model alias (``opus``/``sonnet``/``haiku``) resolved to its id; other names unchanged."""
    return MODEL_ALIASES.get(name, name)


def _one_of(field: str, allowed: Sequence[str]) -> Any:
    def check(_inst: Any, _attr: Any, value: Any) -> None:
        if value is not None and value not in allowed:
            raise ValueError(f"unknown {field} {value!r} (expected one of {', '.join(allowed)})")

    return check


def _at_least(field: str, low: float) -> Any:
    def check(_inst: Any, _attr: Any, value: Any) -> None:
        if value is None:
            return
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{field} must be a number, got {value!r}")
        if not math.isfinite(value):  # a NaN compares False with anything: no limit at all
            raise ValueError(f"{field} must be a finite number, got {value!r}")
        if value < low:
            raise ValueError(f"{field} must be >= {low:g}, got {value!r}")

    return check


def _str_list(field: str) -> Any:
    def check(_inst: Any, _attr: Any, value: Any) -> None:
        if value is None:
            return
        if isinstance(value, str) or not isinstance(value, Sequence):
            raise ValueError(f"{field} must be a list of strings, got {value!r}")
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise ValueError(f"{field}[{i}] must be a string, got {item!r}")

    return check


def _optional_str(field: str) -> Any:
    def check(_inst: Any, _attr: Any, value: Any) -> None:
        if value is not None and not isinstance(value, str):
            raise ValueError(f"{field} must be a string, got {value!r}")

    return check


_UUID = re.compile(r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")


def _optional_uuid(field: str) -> Any:
    """A session id: every session's is a UUID in its hyphenated form (Claude Code refuses
    any other ``--session-id``), and it names the session's transcript file: a path, a brace
    form or 300 characters would reach the store as a path error or an ``OSError``."""

    is_str = _optional_str(field)

    def check(inst: Any, attr: Any, value: Any) -> None:
        is_str(inst, attr, value)
        if value is not None and _UUID.fullmatch(value) is None:
            raise ValueError(f"{field} must be a UUID (8-4-4-4-12 hex digits), got {value!r}")

    return check


#: ``thinking``'s types, as the Messages API takes them
THINKING_TYPES = ("enabled", "adaptive", "disabled")


def _check_thinking(_inst: Any, _attr: Any, value: Any) -> None:
    if value is None:
        return
    kind = value.get("type") if isinstance(value, Mapping) else None
    if kind not in THINKING_TYPES:
        raise ValueError(
            f"thinking must be a dict whose type is one of {', '.join(THINKING_TYPES)}, "
            f"got {value!r}"
        )
    budget = value.get("budget_tokens")
    if kind == "enabled" and (
        isinstance(budget, bool) or not isinstance(budget, int) or budget < 1024
    ):
        raise ValueError(
            f"thinking['budget_tokens'] must be an int >= 1024 when enabled, got {budget!r}"
        )


def _check_system_prompt(_inst: Any, _attr: Any, value: Any) -> None:
    if value is None or isinstance(value, str):
        return
    if (
        not isinstance(value, Mapping)
        or value.get("type") != "preset"
        or not isinstance(value.get("append", ""), str | None)
    ):
        raise ValueError(
            "system_prompt must be a str or a preset dict "
            f"({{'type': 'preset', 'preset': 'claude_code', 'append'?: str}}), got {value!r}"
        )


def _check_env(_inst: Any, _attr: Any, value: Any) -> None:
    if not isinstance(value, Mapping):
        raise ValueError(f"env must be a dict of str -> str, got {value!r}")
    for key, item in value.items():
        if not isinstance(key, str) or not isinstance(item, str):
            raise ValueError(f"env must map strings to strings, got {key!r}: {item!r}")
        # what every process of the session (shells, hooks, MCP servers) would fail to start with
        if not key or "=" in key or "\x00" in key:
            raise ValueError(f"env: {key!r} is not a variable name (non-empty, no '=' or NUL)")
        if "\x00" in item:
            raise ValueError(f"env[{key!r}] must not contain a NUL character, got {item!r}")


def _opt_list(value: Any) -> Any:
    # strings are sequences too: keep them as they are so the validator can refuse them
    return value if value is None or isinstance(value, str) else list(value)


@attrs.frozen
class AgentDefinition:
    """A subagent type the model can spawn with the ``Agent`` tool.

    ``model`` may be an id, an alias (``sonnet``, ``opus``, ``haiku``) or ``inherit``;
    ``background=True`` makes spawns of this type run in the background unless the call says
    otherwise.
    """

    description: str
    prompt: str
    tools: list[str] | None = attrs.field(
        default=None, converter=_opt_list, validator=_str_list("AgentDefinition.tools")
    )
    disallowed_tools: list[str] | None = attrs.field(
        default=None, converter=_opt_list, validator=_str_list("AgentDefinition.disallowed_tools")
    )
    model: str | None = None
    max_turns: int | None = attrs.field(
        default=None, validator=_at_least("AgentDefinition.max_turns", 1)
    )
    background: bool | None = None
    effort: str | None = attrs.field(default=None, validator=_one_of("effort", EFFORTS))
    permission_mode: str | None = attrs.field(
        default=None, validator=_one_of("permission_mode", PERMISSION_MODES)
    )
    skills: list[str] | None = None
    mcp_servers: list[Any] | None = None


def _check_agents(_inst: Any, _attr: Any, value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise ValueError(f"agents must be a dict of name -> AgentDefinition, got {value!r}")
    for name, definition in value.items():
        if not isinstance(name, str) or not name or "/" in name:
            raise ValueError(f"agents: invalid agent name {name!r} (non-empty, no '/')")
        if not isinstance(definition, AgentDefinition):
            raise ValueError(
                f"agents[{name!r}] must be an AgentDefinition, got {type(definition).__name__}"
            )


def _paths(values: Sequence[str | os.PathLike[str]]) -> list[str]:
    # a lone path is a sequence of characters: '/tmp' would add '/' as a working directory
    if isinstance(values, str | bytes | os.PathLike) or not isinstance(values, Sequence):
        raise ValueError(f"add_dirs must be a list of paths, got {values!r}")
    paths = []
    for i, path in enumerate(values):
        if not isinstance(path, str | os.PathLike):
            raise ValueError(f"add_dirs[{i}] must be a path, got {path!r}")
        paths.append(os.fspath(path))
    return paths


def _path_or_none(value: str | os.PathLike[str] | None) -> str | None:
    if value is not None and not isinstance(value, str | os.PathLike):
        raise ValueError(f"cwd must be a path, got {value!r}")
    return None if value is None else os.fspath(value)


@attrs.frozen(kw_only=True)
class AgentOptions:
    """Configuration of a session (``query()`` or ``AgentClient``): the Agent SDK's options,
    and this runtime's own.

    Defaults match the Agent SDK: the Anthropic API as backend, model ``claude-opus-5-5``, no turn
    or budget limit, permission mode ``default``.
    """

    # -- the loop ---------------------------------------------------------------------------------
    model: str | None = attrs.field(default=None, validator=_optional_str("model"))
    fallback_model: str | None = attrs.field(
        default=None, validator=_optional_str("fallback_model")
    )
    system_prompt: str | dict[str, Any] | None = attrs.field(
        default=None, validator=_check_system_prompt
    )
    max_turns: int | None = attrs.field(default=None, validator=_at_least("max_turns", 1))
    max_tokens: int | None = attrs.field(default=None, validator=_at_least("max_tokens", 1))
    effort: str | None = attrs.field(default=None, validator=_one_of("effort", EFFORTS))
    thinking: dict[str, Any] | None = attrs.field(default=None, validator=_check_thinking)
    max_thinking_tokens: int | None = attrs.field(
        default=None, validator=_at_least("max_thinking_tokens", 1024)
    )
    include_partial_messages: bool = False
    output_format: dict[str, Any] | None = None
    backend: Any = None  # a Backend; typed loosely until cli_run and web.py narrow it
    cwd: str | None = attrs.field(default=None, converter=_path_or_none)
    add_dirs: list[str] = attrs.field(factory=list, converter=_paths)
    env: dict[str, str] = attrs.field(factory=dict, validator=_check_env)
    # -- tools and permissions --------------------------------------------------------------------
    tools: list[str] | None = attrs.field(
        default=None, converter=_opt_list, validator=_str_list("tools")
    )
    allowed_tools: list[str] = attrs.field(
        factory=list, converter=_opt_list, validator=_str_list("allowed_tools")
    )
    disallowed_tools: list[str] = attrs.field(
        factory=list, converter=_opt_list, validator=_str_list("disallowed_tools")
    )
    mcp_servers: dict[str, Any] = attrs.field(factory=dict)
    permission_mode: str | None = attrs.field(
        default=None, validator=_one_of("permission_mode", PERMISSION_MODES)
    )
    can_use_tool: CanUseTool | None = None
    hooks: dict[str, list[HookMatcher]] | None = None
    max_tool_concurrency: int = attrs.field(
        default=10, validator=_at_least("max_tool_concurrency", 1)
    )
    #: MCP tool definitions deferred behind ToolSearch: "auto" (past a share of the context),
    #: "on" or "off"
    tool_search: str = attrs.field(
        default="auto", validator=_one_of("tool_search", TOOL_SEARCH_MODES)
    )
    # -- subagents and budget ---------------------------------------------------------------------
    agents: dict[str, AgentDefinition] | None = attrs.field(default=None, validator=_check_agents)
    forward_subagent_text: bool = False
    max_subagent_depth: int = attrs.field(default=3, validator=_at_least("max_subagent_depth", 0))
    max_concurrent_subagents: int = attrs.field(
        default=20, validator=_at_least("max_concurrent_subagents", 1)
    )
    max_budget_usd: float | None = attrs.field(
        default=None, validator=_at_least("max_budget_usd", 0)
    )
    #: the tree's budget ledger; None: a new in-process one capped at ``max_budget_usd``. Pass a
    #: ledger kept elsewhere (``agents.scaleout.SharedLedger``) to spend under a budget shared
    #: with other processes and hosts; its cap is the budget (``max_budget_usd`` unset or equal)
    ledger: BudgetLedger | None = None
    #: agent types that run on other hosts (``agents.remote``); None: every subagent runs here
    remote_agents: RemoteAgents | None = None
    budget_mode: str = attrs.field(default="soft", validator=_one_of("budget_mode", BUDGET_MODES))
    #: reserve mode lowers a request's max_tokens to what the budget pays for, never below this
    min_output_tokens: int = attrs.field(default=1024, validator=_at_least("min_output_tokens", 1))
    pricing: Mapping[str, Any] | None = None
    # -- sessions and context ---------------------------------------------------------------------
    resume: str | None = attrs.field(default=None, validator=_optional_uuid("resume"))
    session_id: str | None = attrs.field(default=None, validator=_optional_uuid("session_id"))
    continue_conversation: bool = False
    fork_session: bool = False
    resume_session_at: str | None = attrs.field(
        default=None, validator=_optional_str("resume_session_at")
    )
    session_store: SessionStore | None = None
    setting_sources: list[str] | None = attrs.field(
        default=None, converter=_opt_list, validator=_str_list("setting_sources")
    )
    #: more settings, above every settings file: a file path, a JSON string or a dict
    settings: str | dict[str, Any] | None = None
    compact_threshold: float = attrs.field(default=0.8)
    enable_file_checkpointing: bool = False
    user: str | None = None
    extra: dict[str, Any] = attrs.field(factory=dict)

    def __attrs_post_init__(self) -> None:
        if self.setting_sources is not None:
            for source in self.setting_sources:
                if source not in SETTING_SOURCES:
                    allowed = ", ".join(SETTING_SOURCES)
                    raise ValueError(
                        f"unknown setting_sources entry {source!r} (expected one of {allowed})"
                    )
        if not 0 < self.compact_threshold <= 1:
            raise ValueError(f"compact_threshold must be in (0, 1], got {self.compact_threshold!r}")
        if self.cwd is not None and not Path(self.cwd).is_dir():
            raise ValueError(f"cwd {self.cwd!r} is not a directory")
        if not isinstance(self.mcp_servers, Mapping):
            raise ValueError(
                f"mcp_servers must be a dict of name -> server, got {self.mcp_servers!r}"
            )
        for key in self.mcp_servers:  # (an external server's config is checked at start)
            check_server_name(key)
        if self.hooks is not None:
            if not isinstance(self.hooks, Mapping):
                raise ValueError(
                    f"hooks must be a dict of event -> [HookMatcher], got {self.hooks!r}"
                )
            from .hooks import HookRunner

            HookRunner(self.hooks)  # its events, matchers and patterns checked now
        if self.can_use_tool is not None and not callable(self.can_use_tool):
            raise ValueError(f"can_use_tool must be an async callable, got {self.can_use_tool!r}")
        if self.fork_session and self.resume is None:
            raise ValueError("fork_session=True needs resume=<session id>")
        if (
            self.resume_session_at is not None
            and self.resume is None
            and not self.continue_conversation
        ):
            raise ValueError(
                "resume_session_at needs resume=<session id> or continue_conversation=True "
                f"(got resume_session_at={self.resume_session_at!r})"
            )
        if self.output_format is not None:
            check_output_format(self.output_format)
        if self.session_id is not None and self.resume is not None and not self.fork_session:
            raise ValueError(
                "session_id cannot be combined with resume unless fork_session=True "
                f"(session_id={self.session_id!r}, resume={self.resume!r})"
            )
        if self.ledger is not None:
            cap = self.ledger.cap
            if self.max_budget_usd is not None and self.max_budget_usd != cap:
                raise ValueError(
                    f"max_budget_usd={self.max_budget_usd!r} differs from the cap of the ledger"
                    f" passed ({cap!r}): leave max_budget_usd unset with a ledger"
                )
        for model in self._budgeted_models():
            self.check_priced(model)

    def check_priced(self, model: str) -> None:
        """Under a budget every model used needs a price: a spend that cannot be priced would
        count as nothing against the cap. ``ValueError`` naming the model otherwise."""
        if self.budget_cap is not None and self.price_table().get(model) is None:
            field = "max_budget_usd" if self.ledger is None else "ledger"
            raise ValueError(f"{field} set but no price for model {model!r}; pass pricing=")

    @property
    def budget_cap(self) -> float | None:
        """The tree's cap: the ledger's if one is passed, else ``max_budget_usd``."""
        return self.ledger.cap if self.ledger is not None else self.max_budget_usd

    def new_ledger(self) -> BudgetLedger:
        """The ledger a session starts (and a ``/clear`` restarts) with: the one passed, which
        is kept (its budget is the tree's, not this session's), or a fresh in-process one."""
        if self.ledger is not None:
            return self.ledger
        from runtime import Ledger

        return Ledger(cap=self.max_budget_usd)

    def _budgeted_models(self) -> list[str]:
        models = [self.resolved_model]
        if self.fallback_model:
            models.append(resolve_model(self.fallback_model))
        for definition in (self.agents or {}).values():
            if definition.model and definition.model != "inherit":
                models.append(resolve_model(definition.model))
        return models

    @property
    def resolved_model(self) -> str:
        """The main agent's model id (aliases resolved, default applied)."""
        return resolve_model(self.model or DEFAULT_MODEL)

    @property
    def resolved_permission_mode(self) -> str:
        return self.permission_mode or "default"

    def price_table(self) -> PriceTable:
        """The shipped price table with ``pricing`` overrides applied."""
        table = default_price_table()
        return table.with_overrides(self.pricing) if self.pricing else table


_DRAFT7_IDS = frozenset(
    {"http://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-07/schema"}
)


def check_output_format(value: Any) -> None:
    """Raise ``ValueError`` unless ``value`` is ``{"type": "json_schema", "schema": <draft 7>}``."""
    if not isinstance(value, dict) or value.get("type") != "json_schema":
        raise ValueError(
            f"output_format must be {{'type': 'json_schema', 'schema': {{...}}}}, got {value!r}"
        )
    schema = value.get("schema")
    if not isinstance(schema, dict):
        raise ValueError(f"output_format['schema'] must be a dict (a JSON Schema), got {schema!r}")
    declared = schema.get("$schema")
    if declared is not None and declared not in _DRAFT7_IDS:
        raise ValueError(
            f"output_format['schema']['$schema'] must be draft-07 "
            f"('http://json-schema.org/draft-07/schema#'), got {declared!r}"
        )
    import jsonschema  # imported on first use: it is slow to import

    try:
        jsonschema.Draft7Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        path = "".join(f"[{p!r}]" for p in exc.absolute_path)
        raise ValueError(
            f"output_format['schema']{path} is not a valid draft-07 schema: {exc.message}"
        ) from None
