"""Tools: the definition the model sees, input validation, and the handler that runs.

A :class:`Tool` couples a JSON Schema (sent to the model) with a validator (applied before the
permission check and the handler) and a read-only flag (the scheduler runs read-only calls at
once, each mutating call alone).
Built-in tools validate with a msgspec ``Struct`` (fast, errors carry a JSON path); custom tools
made with :func:`tool` validate against their schema.

Custom tools follow the Agent SDK::

    @tool("add", "Add two numbers", {"a": float, "b": float},
          annotations=ToolAnnotations(readOnlyHint=True))
    async def add(args):
        return {"content": [{"type": "text", "text": str(args["a"] + args["b"])}]}

    server = create_sdk_mcp_server("calc", "1.0.0", [add])
    options = AgentOptions(mcp_servers={"calc": server})      # the model sees mcp__calc__add
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import attrs
import msgspec
import trio

from ._input_depth import nesting_error
from ._schema_guard import UNBOUNDED, Unbounded, guarded
from ._sdk_content import sdk_blocks
from .names import API_TOOL_NAME, MAX_TOOL_NAME

if TYPE_CHECKING:
    from ..permissions.files import CheckedPath

__all__ = [
    "NO_CONTEXT",
    "FileAccess",
    "SdkMcpServer",
    "SdkMcpTool",
    "Tool",
    "ToolAnnotations",
    "ToolContext",
    "ToolInputError",
    "ToolOutput",
    "ToolRegistry",
    "create_sdk_mcp_server",
    "tool",
]

#: Characters kept from a custom/MCP tool's output (about 25 000 tokens).
MCP_OUTPUT_CAP_CHARS = 100_000



class ToolInputError(Exception):
    """The model's tool input does not fit the tool's schema; the text names the JSON path."""


class UncheckedInput(ToolInputError):
    """An input that only a process of its own can check against the tool's schema: a regex of
    the schema (``pattern``, ``patternProperties``) could backtrack without bound over a string
    of the input. The schema is the tool's (an MCP server's) and the string the model's: ``^(a+)+$``
    over 28 a's and a ``!`` took 8 s, on the event loop, where nothing can cancel it. Its text
    says so, so that code that knows only :class:`ToolInputError` refuses the input; the tool
    call awaits :meth:`check` (:func:`validated`)."""

    def __init__(self, name: str, schema: Mapping[str, Any], raw: Mapping[str, Any]) -> None:
        super().__init__(
            f"invalid input for {name}: a pattern of its schema could backtrack without bound "
            "over it (checked only in a process of its own)"
        )
        self.name, self.schema, self.raw = name, schema, raw

    async def check(self) -> dict[str, Any]:
        """The input, checked against the schema by ``jsonschema`` in a Python process of its
        own, which a cancellation or its deadline kills; raises :class:`ToolInputError` naming
        what is wrong, or the deadline (:func:`~._schema_guard.check_apart`)."""
        from ._schema_guard import check_apart

        return await check_apart(self.name, self.schema, self.raw)


async def validated(tool: Tool, raw: Mapping[str, Any]) -> Any:
    """``tool.validate(raw)``, an input only a process can check checked there (see
    :class:`UncheckedInput`); raises :class:`ToolInputError`."""
    try:
        return tool.validate(raw)
    except UncheckedInput as unchecked:
        return await unchecked.check()


@attrs.frozen
class ToolAnnotations:
    """MCP tool annotations; ``readOnlyHint=True`` lets the scheduler run the tool concurrently."""

    title: str | None = None
    readOnlyHint: bool | None = None
    destructiveHint: bool | None = None
    idempotentHint: bool | None = None
    openWorldHint: bool | None = None


class ToolOutput(msgspec.Struct, frozen=True):
    """What a handler produced: ``content`` for the model, ``data`` for ``tool_use_result``.

    A frozen msgspec Struct, not an attrs class: one is made for every tool call, and a frozen
    attrs instance costs three times as much to make (``msgspec.structs.replace`` copies one)."""

    content: str | list[dict[str, Any]]
    is_error: bool = False
    data: dict[str, Any] | None = None

    @classmethod
    def error(cls, text: str) -> ToolOutput:
        return cls(text, True)


class FileAccess(Protocol):
    """What the permission gate tells the file tools (``ToolContext.files``).

    ``checked`` gives the check an approved call's path (``spelled`` as in the tool's input)
    was judged on, so that the tool opens that file and no other; ``withheld`` says whether a
    search must leave a file out of its results because a Read deny rule covers it
    (``written`` as listed, ``target`` its real path).
    """

    def checked(self, tool_use_id: str, spelled: str) -> CheckedPath | None: ...

    def withheld(self, written: str, target: str) -> bool: ...


@attrs.define(eq=False)
class ToolContext:
    """What a running tool may know about its caller.

    ``state`` is per agent and lives as long as the agent (read-file bookkeeping, the persistent
    shell); ``session_state`` is shared by the whole session's agents (the task list).
    ``agent`` is the calling agent's loop, opaque to tools (the Agent tool knows what it is).
    ``nursery`` lives as long as the agent (background shells run there) and ``cleanup`` holds
    async callables the agent awaits, shielded, when it ends — so no process outlives it.
    ``complete(prompt, system)`` asks the session's model a one-shot question (WebFetch, the
    ``auto`` classifier), charged to the budget like any other response.
    ``files`` is the permission gate's word on paths (None without a gate): see
    :class:`FileAccess`.
    """

    cwd: str
    agent_id: str
    tool_use_id: str
    session_id: str
    state: dict[str, Any] = attrs.Factory(dict)
    session_state: dict[str, Any] = attrs.Factory(dict)
    agent: object = None
    nursery: trio.Nursery | None = None
    cleanup: list[Callable[[], Awaitable[None]]] = attrs.Factory(list)
    backend: Any = None  # a Backend; typed loosely until tools/web.py narrows it
    model: str = ""
    complete: Callable[[str, str | None], Awaitable[str]] | None = None
    files: FileAccess | None = None


#: the key of ``ToolContext.session_state`` under which the session puts the variables its
#: shells get on top of the process's (``AgentOptions.env`` over the settings files' ``env``)
SESSION_ENV = "env"

#: what a handler that does not read its context (``Tool.takes_context=False``) is given
NO_CONTEXT = ToolContext(cwd="", agent_id="", tool_use_id="", session_id="")

Handler = Callable[[Any, ToolContext], Awaitable[ToolOutput]]


@attrs.define(eq=False)
class Tool:
    """A tool the model can call.

    ``input_type`` (a msgspec Struct) validates and converts the input for built-ins; without it,
    the input is checked against ``input_schema`` and handed over as a dict.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Handler
    read_only: bool = False
    input_type: type | None = None
    output_cap: int | None = None
    #: whether the handler reads its ``ToolContext``; one that does not (an in-process MCP
    #: tool's wrapper) is handed the shared, empty :data:`NO_CONTEXT`, saving a context per call
    takes_context: bool = True
    _validator: Callable[[Mapping[str, Any]], Any] | None = attrs.field(
        default=None, init=False, repr=False
    )
    _definition: dict[str, Any] | None = attrs.field(default=None, init=False, repr=False)

    def definition(self) -> dict[str, Any]:
        """The Messages API tool definition (built once)."""
        if self._definition is None:
            self._definition = {
                "name": self.name,
                "description": self.description,
                "input_schema": self.input_schema,
            }
        return self._definition

    def validate(self, raw: Mapping[str, Any]) -> Any:
        """Validated input for the handler, or :class:`ToolInputError` naming what is wrong."""
        validator = self._validator
        if validator is None:
            validator = self._validator = self._make_validator()
        return validator(raw)

    def _make_validator(self) -> Callable[[Mapping[str, Any]], Any]:
        """The tool's validator (made at its first call): the input converted to
        ``input_type``, or checked against ``input_schema`` and copied into a dict."""
        name = self.name
        input_type = self.input_type
        if input_type is not None:
            convert = msgspec.convert

            def converted(raw: Mapping[str, Any]) -> Any:
                _check_nesting(name, raw)
                try:
                    return convert(raw, input_type, str_keys=True)
                except msgspec.ValidationError as exc:
                    raise ToolInputError(f"invalid input for {name}: {exc}") from None

            return converted
        fits = _fast_check(self.input_schema)
        check = _schema_validator(self.input_schema)
        schema = self.input_schema

        def checked(raw: Mapping[str, Any]) -> dict[str, Any]:
            _check_nesting(name, raw)
            if fits is None or not fits(raw):  # the fast check passes only what fits
                message = check(raw)
                if message is UNBOUNDED:
                    raise UncheckedInput(name, schema, raw)
                if message is not None:
                    raise ToolInputError(f"invalid input for {name}: {message}")
            return dict(raw)

        return checked


def _check_nesting(name: str, raw: Mapping[str, Any]) -> None:
    """Raise :class:`ToolInputError` for an input nested past :data:`MAX_INPUT_DEPTH`."""
    message = nesting_error(raw)
    if message is not None:
        raise ToolInputError(f"invalid input for {name}: {message}")


_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    # as JSON Schema since draft 6: a number whose fraction is zero (``1.0``) is an integer
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and v.is_integer())
    ),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}
#: the exact types each JSON type accepts at once (what a JSON decoder gives); other values go
#: through the full check above (subclasses, bools that are not integers)
_EXACT_TYPES: dict[str, frozenset[type]] = {
    "string": frozenset({str}),
    "integer": frozenset({int}),
    "number": frozenset({int, float}),
    "boolean": frozenset({bool}),
    "array": frozenset({list}),
    "object": frozenset({dict}),
    "null": frozenset({type(None)}),
}
_ANNOTATION_KEYS = frozenset({"description", "title", "default", "examples"})


def _simple_validator(schema: Mapping[str, Any]) -> Callable[[Any], str | None] | None:
    """A fast validator for the common shape — an object of typed properties — or None.

    Custom tools are mostly ``{field: type}`` maps, and MCP servers' schemas (pydantic's) add
    titles; checking them by hand costs a microsecond where a general JSON Schema validator costs
    tens to hundreds (and 100 ms to import).
    """
    if (
        set(schema) - {"type", "properties", "required", "$schema", "title", "description"}
        or schema.get("type") != "object"
    ):
        return None
    checks: list[tuple[str, str, frozenset[type], Callable[[Any], bool]]] = []
    for name, prop in (schema.get("properties") or {}).items():
        if not isinstance(prop, Mapping) or set(prop) - _ANNOTATION_KEYS - {"type"}:
            return None
        kind = prop.get("type")
        if kind is None:
            continue
        if not isinstance(kind, str) or kind not in _JSON_TYPES:
            return None
        checks.append((name, kind, _EXACT_TYPES[kind], _JSON_TYPES[kind]))
    required = tuple(schema.get("required") or ())

    def check(instance: Any) -> str | None:
        if not isinstance(instance, dict):
            return f"{instance!r} is not of type 'object' - at `$`"
        for name in required:
            if name not in instance:
                return f"{name!r} is a required property - at `$`"
        for name, kind, exact, ok in checks:
            if name in instance:
                value = instance[name]
                if type(value) not in exact and not ok(value):
                    return f"{value!r} is not of type {kind!r} - at `$.{name}`"
        return None

    return check


def _schema_validator(schema: Mapping[str, Any]) -> Callable[[Any], str | None]:
    """A validator for a JSON Schema: the first error as ``message - at `$.path```, or None."""
    simple = _simple_validator(schema)
    if simple is not None:
        return simple
    import jsonschema  # lazy: only tools with richer schemas need it (and it costs 100 ms)

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    validator = guarded(cls)(schema)

    def check(instance: Any) -> str | None:
        try:
            error = jsonschema.exceptions.best_match(validator.iter_errors(instance))
        except Unbounded:
            return UNBOUNDED
        except RecursionError:  # (the model's input, a schema that refers to itself)
            return "nested too deeply to be checked - at `$`"
        if error is None:
            return None
        return f"{error.message} - at `{error.json_path}`"

    return check


def _fast_check(schema: Mapping[str, Any]) -> Callable[[Any], bool] | None:
    """For the common shape of custom tools' schemas (see :func:`_simple_validator`), a check
    that says True only for an input that fits it: a dict with every required field and each
    field of the exact type a JSON decoder gives (what a model's input is). Anything else it
    says False to goes through the full check, which finds the error or lets it pass (a
    subclass, a bool's int ...). None when the schema has another shape."""
    if _simple_validator(schema) is None:
        return None
    required = frozenset(schema.get("required") or ())
    exact = {
        name: _EXACT_TYPES[prop["type"]]
        for name, prop in (schema.get("properties") or {}).items()
        if prop.get("type") is not None
    }
    items = tuple(exact.items())
    if len(items) == 1:  # one typed field, the usual case: no loop
        ((only, only_types),) = items

        def fits_one(instance: Any) -> bool:
            return (
                type(instance) is dict
                and required.issubset(instance)
                and (only not in instance or type(instance[only]) in only_types)
            )

        return fits_one

    def fits(instance: Any) -> bool:
        if type(instance) is not dict or not required.issubset(instance):
            return False
        for name, types in items:
            if name in instance and type(instance[name]) not in types:
                return False
        return True

    return fits


_PY_TYPES: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    dict: "object",
}


def schema_from_shorthand(spec: Mapping[str, Any]) -> dict[str, Any]:
    """``{field: type}`` → a JSON Schema object with every field required (the Agent SDK's rule).

    A mapping that already looks like a JSON Schema (has ``type`` or ``properties``) is returned
    as it is.
    """
    if "type" in spec or "properties" in spec or "$schema" in spec:
        return dict(spec)
    properties: dict[str, Any] = {}
    for field, typ in spec.items():
        if typ in _PY_TYPES:
            properties[field] = {"type": _PY_TYPES[typ]}
        elif isinstance(typ, str) and typ in _PY_TYPES.values():
            properties[field] = {"type": typ}
        elif isinstance(typ, Mapping):
            properties[field] = dict(typ)
        else:
            raise ValueError(
                f"input_schema[{field!r}]: unsupported type {typ!r} "
                "(expected str, int, float, bool, list, dict or a JSON Schema)"
            )
    return {"type": "object", "properties": properties, "required": list(spec)}


@attrs.frozen
class SdkMcpTool:
    """A custom tool made by :func:`tool`: the Agent SDK's ``SdkMcpTool``."""

    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
    annotations: ToolAnnotations | None = None


def tool(
    name: str,
    description: str,
    input_schema: Mapping[str, Any],
    annotations: ToolAnnotations | None = None,
) -> Callable[[Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]], SdkMcpTool]:
    """Decorate ``async def handler(args) -> {"content": [...], "is_error"?: bool}`` as a tool."""
    if not isinstance(name, str) or not API_TOOL_NAME.fullmatch(name):
        raise ValueError(
            f"tool name must be 1 to {MAX_TOOL_NAME} letters, digits, '_' or '-' (the Messages "
            f"API refuses any other), got {name!r}"
        )
    schema = schema_from_shorthand(input_schema)

    def decorate(handler: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]) -> SdkMcpTool:
        return SdkMcpTool(name, description, schema, handler, annotations)

    return decorate


@attrs.frozen
class SdkMcpServer:
    """An in-process tool server (``create_sdk_mcp_server``).

    Its tools appear to the model as ``mcp__<key>__<name>``.
    """

    name: str
    version: str
    tools: tuple[SdkMcpTool, ...]
    type: str = "sdk"
    # Wrapped once per key and shared by the sessions using the server: a Tool holds no
    # per-session state (its caches are pure functions of the tool).
    _wrapped: dict[str, list[Tool]] = attrs.field(factory=dict, init=False, eq=False, repr=False)

    def as_tools(self, key: str) -> list[Tool]:
        """This server's tools under the names the model sees."""
        tools = self._wrapped.get(key)
        if tools is None:
            for t in self.tools:
                full = f"mcp__{key}__{t.name}"
                if not API_TOOL_NAME.fullmatch(full):
                    raise ValueError(
                        f"mcp_servers[{key!r}]: the tool name the model would see, {full!r} "
                        f"({len(full)} characters), is not 1 to {MAX_TOOL_NAME} letters, "
                        "digits, '_' or '-', which the Messages API requires: shorten or "
                        "respell the server's key or the tool's name"
                    )
            tools = [_wrap_sdk_tool(f"mcp__{key}__{t.name}", t) for t in self.tools]
            self._wrapped[key] = tools
        return list(tools)


def create_sdk_mcp_server(
    name: str, version: str = "1.0.0", tools: Iterable[SdkMcpTool] | None = None
) -> SdkMcpServer:
    """Bundle custom tools into an in-process server for ``AgentOptions(mcp_servers=...)``."""
    tools = tuple(tools or ())
    for i, t in enumerate(tools):
        if not isinstance(t, SdkMcpTool):
            raise ValueError(
                f"create_sdk_mcp_server tools[{i}] must be made with @tool, got {type(t).__name__}"
            )
    names = [t.name for t in tools]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise ValueError(f"create_sdk_mcp_server {name!r}: duplicate tool name {dup!r}")
    return SdkMcpServer(name=name, version=version, tools=tools)


def _wrap_sdk_tool(full_name: str, sdk: SdkMcpTool) -> Tool:
    handler = sdk.handler

    async def run(args: Any, ctx: ToolContext) -> ToolOutput:
        result = await handler(args)
        # ``type(...) is dict`` first: the ABC check costs more than the rest of this wrapper
        if (type(result) is not dict and not isinstance(result, Mapping)) or (
            "content" not in result
        ):
            return ToolOutput.error(
                f"tool {full_name} returned {type(result).__name__}; expected a dict with 'content'"
            )
        content = result["content"]
        if type(content) is list and len(content) == 1:  # the common case, as sdk_blocks does
            item = content[0]
            if (
                type(item) is dict
                and len(item) == 2
                and item.get("type") == "text"
                and type(item.get("text")) is str
            ):
                return ToolOutput([item], bool(result.get("is_error", False)))
        if isinstance(content, str):
            blocks: list[dict[str, Any]] | str = [{"type": "text", "text": content}]
        else:
            blocks = sdk_blocks(content)
            if isinstance(blocks, str):
                return ToolOutput.error(f"tool {full_name} returned {blocks}")
        return ToolOutput(blocks, bool(result.get("is_error", False)))

    read_only = bool(sdk.annotations and sdk.annotations.readOnlyHint)
    return Tool(
        name=full_name,
        description=sdk.description,
        input_schema=sdk.input_schema,
        handler=run,
        read_only=read_only,
        output_cap=MCP_OUTPUT_CAP_CHARS,
        takes_context=False,  # ``run`` never looks at its context
    )


def truncate(text: str, cap: int, *, total: int | None = None) -> str:
    """``text`` cut to ``cap`` characters with a note saying how much was cut. ``total``: the
    length of the whole text when ``text`` is only its head (cut where it was made)."""
    length = len(text) if total is None else total
    if length <= cap:
        return text
    return f"{text[:cap]}\n\n... [output truncated: {length - cap} more characters not shown]"


@attrs.define(eq=False)
class ToolRegistry:
    """The tools one agent can call, by name, with their definitions built once."""

    _tools: dict[str, Tool] = attrs.field(factory=dict)
    _definitions: list[dict[str, Any]] | None = attrs.field(default=None, init=False)
    #: tools whose definitions are sent with ``defer_loading`` (loaded by ToolSearch)
    _deferred: frozenset[str] = attrs.field(default=frozenset(), init=False)

    def defer(self, names: Iterable[str]) -> None:
        """Send these tools' definitions deferred (see :mod:`agents.tools.toolsearch`)."""
        self._deferred = frozenset(names)
        self._definitions = None

    def add(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"duplicate tool name {tool.name!r}")
        self._tools[tool.name] = tool
        self._definitions = None

    def remove(self, name: str) -> None:
        self._tools.pop(name, None)
        self._definitions = None

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    @property
    def lookup(self) -> Callable[[str], Tool | None]:
        """``get`` as the mapping's own method: a call that runs no Python code (the loop looks
        up every tool call's tool). It stays valid as tools are added and removed."""
        return self._tools.get

    def names(self) -> list[str]:
        return list(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def definitions(self) -> list[dict[str, Any]]:
        """Definitions for the model, in registration order (a stable, cacheable prefix)."""
        if self._definitions is None:
            deferred = self._deferred
            self._definitions = [
                {**t.definition(), "defer_loading": True} if t.name in deferred else t.definition()
                for t in self._tools.values()
            ]
        return self._definitions
