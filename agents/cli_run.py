"""``agents run "PROMPT"``: the main agent on a project, against the Anthropic API — ``claude -p``.

Registered into the ``agents`` command by :func:`register`. Credentials are the client's usual
ones: ``ANTHROPIC_API_KEY`` (or ``ANTHROPIC_AUTH_TOKEN``). Without them the command stops with a
one-line error pointing at ``agents demo`` (exit status 2) — except when ``--base-url`` (or
``ANTHROPIC_BASE_URL``) points at this machine (``127.0.0.1``, ``localhost``, ``::1``): a local
server such as ``python -m agents.testing.fake_api`` needs no key, so a placeholder is sent.

Output formats (``--output-format``), as Claude Code's ``-p`` mode:

* ``text`` (default): the final result text on stdout. On stderr, what a person waiting needs to
  know: the live agent tree when stderr is a terminal (``--no-live`` for plain lines), else one
  line per retry (``API 529, retrying in 2.1 s (3/10)``), permission denial and subagent;
  an error result's errors;
* ``json``: the final result as one JSON object;
* ``stream-json``: every message as one JSON object per line, shaped as ``claude -p
  --output-format stream-json`` prints them (:mod:`agents.cockpit.stream_json`), stream events
  included with ``--include-partial-messages``.

The API is reached through :class:`~agents.backends.wire.WireBackend` (h11 on Trio sockets, no
``import anthropic``: the first request leaves in a fraction of the time);
``--anthropic-client`` uses the official client instead.

The exit status is 0 on ``success``, 1 on an error result, 2 on bad usage or configuration
(including a flag whose feature is not built yet), 130 when interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import urlsplit

from .cockpit.lines import printable

if TYPE_CHECKING:
    from .messages import Message, ResultMessage
    from .options import AgentOptions

__all__ = ["UsageError", "build_options", "parse_agents", "register", "split_tool_rules"]

LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
PLACEHOLDER_KEY = "local-no-key"
OUTPUT_FORMATS = ("text", "json", "stream-json")
# the same lists as agents.options, repeated so that parsing flags does not import the SDK
PERMISSION_MODES = ("default", "acceptEdits", "plan", "dontAsk", "auto", "bypassPermissions")
BUDGET_MODES = ("soft", "reserve")
EFFORTS = ("low", "medium", "high", "xhigh", "max")
#: ``--agents`` JSON keys (Claude Code's camelCase and the SDK's snake_case) → AgentDefinition field
_AGENT_FIELDS = {
    "description": "description",
    "prompt": "prompt",
    "tools": "tools",
    "disallowedTools": "disallowed_tools",
    "disallowed_tools": "disallowed_tools",
    "model": "model",
    "maxTurns": "max_turns",
    "max_turns": "max_turns",
    "background": "background",
    "effort": "effort",
    "permissionMode": "permission_mode",
    "permission_mode": "permission_mode",
    "skills": "skills",
    "mcpServers": "mcp_servers",
    "mcp_servers": "mcp_servers",
}


class UsageError(Exception):
    """A flag's value cannot be used; its text is the one line shown (exit status 2)."""


def register(subparsers: Any) -> None:
    """Add the ``run`` subcommand to the ``agents`` CLI's subparsers."""
    run = subparsers.add_parser(
        "run",
        help="run the main agent on a prompt against the Anthropic API (like claude -p)",
        description="Run the main agent on PROMPT in the current directory (or --cwd) "
        "(needs ANTHROPIC_API_KEY; try `agents demo` without one).",
    )
    add = run.add_argument
    add("prompt", help="the user prompt")
    add("--model", help="model id or alias (default: claude-opus-5-5)")
    add("--fallback-model", help="model to switch to when the main one is not available")
    add("--effort", choices=EFFORTS, help="reasoning effort")
    add("--max-turns", type=int, help="stop after this many turns")
    add("--cwd", help="the project directory the agent works in (default: the current one)")
    add(
        "--add-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="another directory the tools may read (repeatable)",
    )
    session = run.add_argument_group("sessions")
    session.add_argument("-r", "--resume", metavar="SESSION_ID", help="resume this session")
    session.add_argument(
        "-c",
        "--continue",
        dest="continue_conversation",
        action="store_true",
        help="continue the most recent session of the project",
    )
    session.add_argument(
        "--fork-session",
        action="store_true",
        help="with --resume/--continue: copy the history under a new session id",
    )
    session.add_argument("--session-id", help="the new session's id (a UUID)")
    prompts = run.add_argument_group("prompts and agents")
    prompts.add_argument("--system-prompt", help="replace the default system prompt")
    prompts.add_argument("--append-system-prompt", help="append to the system prompt")
    prompts.add_argument(
        "--agents",
        metavar="JSON",
        help='subagent definitions: \'{"reviewer": {"description": "...", '
        '"prompt": "...", "tools": ["Read"]}}\'',
    )
    perms = run.add_argument_group("tools and permissions")
    perms.add_argument("--permission-mode", choices=PERMISSION_MODES, help="permission mode")
    perms.add_argument(
        "--allowed-tools",
        "--allowedTools",
        default="",
        metavar="RULES",
        help='rules to pre-approve, comma or space separated: "Read,Grep Bash(npm *)"',
    )
    perms.add_argument(
        "--disallowed-tools",
        "--disallowedTools",
        default="",
        metavar="RULES",
        help="rules to deny (a bare tool name also hides the tool)",
    )
    perms.add_argument(
        "--tools", metavar="NAMES", help='the built-in tools that exist ("" for none; default: all)'
    )
    perms.add_argument(
        "--mcp-config",
        action="append",
        default=[],
        metavar="FILE_OR_JSON",
        help='MCP servers: a file or JSON string {"mcpServers": {...}} (repeatable)',
    )
    perms.add_argument("--settings", metavar="FILE_OR_JSON", help="a settings file or JSON string")
    money = run.add_argument_group("budget and retries")
    money.add_argument("--max-budget-usd", type=float, help="cap on the tree's estimated cost")
    money.add_argument(
        "--budget-mode",
        choices=BUDGET_MODES,
        help="soft: stop after the cap is crossed; reserve: never cross it",
    )
    money.add_argument("--max-retries", type=int, help="API retries per request (default 10)")
    out = run.add_argument_group("output")
    out.add_argument("--output-format", choices=OUTPUT_FORMATS, default="text")
    out.add_argument(
        "--include-partial-messages",
        action="store_true",
        help="stream the text as it is written (with stream-json: the raw events)",
    )
    out.add_argument(
        "--no-live",
        action="store_true",
        help="plain progress lines on stderr even when it is a terminal",
    )
    out.add_argument(
        "--otel",
        action="store_true",
        help="record OpenTelemetry spans with the global tracer provider (the [otel] extra)",
    )
    out.add_argument(
        "--verbose",
        action="store_true",
        help="log what happens (DEBUG) on stderr; also TRIO_AGENTS_LOG=debug|info",
    )
    add("--base-url", help="Messages API base URL (default: ANTHROPIC_BASE_URL)")
    add(
        "--anthropic-client",
        action="store_true",
        help="talk to the API through the official anthropic client (slower to start) instead "
        "of the built-in httpx wire path",
    )
    run.set_defaults(handler=_run)


def split_tool_rules(value: str) -> list[str]:
    """Split ``"Read, Grep Bash(npm run *)"`` on commas and spaces outside parentheses."""
    rules: list[str] = []
    current: list[str] = []
    depth = 0
    for char in value:
        if char == "(":
            depth += 1
        elif char == ")":
            depth = max(0, depth - 1)
        if depth == 0 and (char == "," or char.isspace()):
            if current:
                rules.append("".join(current))
                current = []
            continue
        current.append(char)
    if current:
        rules.append("".join(current))
    return rules


def _json_arg(flag: str, value: str) -> Any:
    """A flag's JSON, given inline or as a file path."""
    text = value
    if not value.lstrip().startswith(("{", "[")):
        try:
            with open(value, encoding="utf-8") as f:
                text = f.read()
        except OSError as exc:
            raise UsageError(f"{flag}: cannot read {value!r}: {exc.strerror}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{flag}: invalid JSON: {exc}") from None


def parse_agents(value: str) -> dict[str, Any]:
    """``--agents`` JSON (Claude Code's shape) → ``{name: AgentDefinition}``."""
    from .options import AgentDefinition

    data = _json_arg("--agents", value)
    if not isinstance(data, dict):
        raise UsageError(f"--agents: expected a JSON object of name -> definition, got {data!r}")
    agents: dict[str, Any] = {}
    for name, spec in data.items():
        if not isinstance(spec, dict):
            raise UsageError(f"--agents: {name!r} must be an object, got {spec!r}")
        unknown = sorted(set(spec) - set(_AGENT_FIELDS))
        if unknown:
            raise UsageError(
                f"--agents: {name!r} has unknown key {unknown[0]!r} "
                f"(expected some of {', '.join(sorted(_AGENT_FIELDS))})"
            )
        for required in ("description", "prompt"):
            if not isinstance(spec.get(required), str):
                raise UsageError(f"--agents: {name!r} needs a string {required!r}")
        try:
            agents[name] = AgentDefinition(**{_AGENT_FIELDS[k]: v for k, v in spec.items()})
        except (ValueError, TypeError) as exc:
            raise UsageError(f"--agents: {name!r}: {exc}") from None
    return agents


def _mcp_servers(values: list[str]) -> dict[str, Any]:
    servers: dict[str, Any] = {}
    for value in values:
        data = _json_arg("--mcp-config", value)
        if not isinstance(data, dict) or not isinstance(data.get("mcpServers"), dict):
            raise UsageError(f'--mcp-config: expected {{"mcpServers": {{...}}}}, got {value!r}')
        servers.update(data["mcpServers"])
    return servers


def _system_prompt(args: argparse.Namespace) -> str | dict[str, Any] | None:
    if args.system_prompt is not None:
        extra = args.append_system_prompt
        prompt: str = args.system_prompt
        return prompt + (f"\n\n{extra}" if extra else "")
    if args.append_system_prompt:
        return {"type": "preset", "preset": "claude_code", "append": args.append_system_prompt}
    return None


def _is_local(base_url: str | None) -> bool:
    if not base_url:
        return False
    host = urlsplit(base_url).hostname
    return host in LOCAL_HOSTS


def _api_key(base_url: str | None) -> tuple[str | None, str | None]:
    """``(key to pass, error)``: the client reads the environment when the key is ``None``."""
    if os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN"):
        return None, None
    if _is_local(base_url):
        return PLACEHOLDER_KEY, None
    return None, (
        "agents run: ANTHROPIC_API_KEY is not set; set it to use the Anthropic API, "
        "or try `agents demo`, which needs no key"
    )


def _say(err: TextIO, line: str) -> None:
    """One line to stderr, a terminal as a rule: what it quotes (a model's or a server's words, a
    settings file's value) shown, never obeyed (:func:`~agents.cockpit.lines.printable`)."""
    print(printable(line), file=err)


def build_options(args: argparse.Namespace, backend: Any) -> AgentOptions:
    """The session's options from the parsed flags; :class:`UsageError` names a bad one."""
    from .options import AgentOptions

    extra: dict[str, Any] = {}
    if args.settings is not None:
        settings = _json_arg("--settings", args.settings)
        if not isinstance(settings, dict):
            raise UsageError(f"--settings: expected a JSON object, got {args.settings!r}")
        extra["settings"] = settings
    cwd = os.path.abspath(args.cwd) if args.cwd else os.getcwd()
    if not os.path.isdir(cwd):
        raise UsageError(f"--cwd: {args.cwd!r} is not a directory")
    try:
        return AgentOptions(
            backend=backend,
            model=args.model,
            fallback_model=args.fallback_model,
            effort=args.effort,
            max_turns=args.max_turns,
            max_budget_usd=args.max_budget_usd,
            budget_mode=args.budget_mode or "soft",
            allowed_tools=split_tool_rules(args.allowed_tools),
            disallowed_tools=split_tool_rules(args.disallowed_tools),
            tools=None if args.tools is None else split_tool_rules(args.tools),
            permission_mode=args.permission_mode,
            include_partial_messages=args.include_partial_messages,
            system_prompt=_system_prompt(args),
            agents=parse_agents(args.agents) if args.agents is not None else None,
            mcp_servers=_mcp_servers(args.mcp_config),
            resume=args.resume,
            continue_conversation=args.continue_conversation,
            fork_session=args.fork_session,
            session_id=args.session_id,
            cwd=cwd,
            add_dirs=[os.path.abspath(d) for d in args.add_dir],
            **extra,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _log_level(args: argparse.Namespace) -> int | None:
    from .cockpit.logs import level_from_env

    if args.verbose:
        return logging.DEBUG
    try:
        return level_from_env()
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _run(args: argparse.Namespace) -> int:
    err = sys.stderr
    base_url = args.base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
    key, error = _api_key(base_url)
    if error is not None:
        print(error, file=err)
        return 2
    if args.max_retries is not None and args.max_retries < 0:
        print(f"agents run: --max-retries must be >= 0, got {args.max_retries}", file=err)
        return 2
    try:
        level = _log_level(args)
    except UsageError as exc:
        _say(err, f"agents run: {exc}")
        return 2
    if level is None:
        return _run_with(args, key, base_url, logging_on=False)
    from .cockpit.logs import configure_logging

    handler = configure_logging(level, err)
    try:
        return _run_with(args, key, base_url, logging_on=True)
    finally:
        logger = logging.getLogger("agents")
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)


def _run_with(
    args: argparse.Namespace, key: str | None, base_url: str | None, *, logging_on: bool
) -> int:
    err = sys.stderr
    try:
        retries = {} if args.max_retries is None else {"max_retries": args.max_retries}
        if args.anthropic_client:
            from .backends.anthropic import AnthropicBackend

            backend: Any = AnthropicBackend(api_key=key, base_url=base_url, **retries)
        else:  # the same protocol without importing anthropic (seconds on a small machine)
            from .backends.wire import WireBackend

            backend = WireBackend(api_key=key, base_url=base_url, **retries)
        options = build_options(args, backend)
    except UsageError as exc:
        _say(err, f"agents run: {exc}")
        return 2
    tracer = None
    if args.otel:
        from .otel import SpanObserver

        try:
            tracer = SpanObserver(budget_usd=options.max_budget_usd)
        except ImportError as exc:
            _say(err, f"agents run: --otel: {exc}")
            return 2
    text = args.output_format == "text"
    live = text and not args.no_live and not logging_on and err.isatty()
    progress = text and not logging_on  # with logging on, the log says it (and more)
    if live and not options.include_partial_messages:
        import attrs

        # the live view streams the answer as it is written: it needs the raw text deltas
        options = attrs.evolve(options, include_partial_messages=True)
    import trio

    try:
        return trio.run(
            _session, args.prompt, options, args.output_format, live, progress, None, None, tracer
        )
    except NotImplementedError as exc:
        _say(err, f"agents run: {exc}")
        return 2
    except ValueError as exc:  # options the session itself refuses (a malformed rule...)
        _say(err, f"agents run: {exc}")
        return 2
    except Exception as exc:
        from .sessions import SessionNotFoundError

        if isinstance(exc, SessionNotFoundError):  # --resume named no session of the project
            _say(err, f"agents run: {exc}")
            return 2
        if args.verbose:
            raise
        _say(
            err,
            f"agents run: internal error: {type(exc).__name__}: {exc} "
            "(run with --verbose for the traceback)",
        )
        return 1


async def _session(
    prompt: str,
    options: AgentOptions,
    output_format: str,
    live: bool,
    progress: bool = True,
    out: TextIO | None = None,
    err: TextIO | None = None,
    tracer: Any = None,
) -> int:
    """One session, shown as ``output_format`` asks; returns the exit status."""
    out = out or sys.stdout
    err = err or sys.stderr
    extra = [] if tracer is None else [tracer.observe]
    try:
        result = await _show(prompt, options, output_format, live, progress, out, err, extra)
    finally:
        if tracer is not None:
            tracer.close()
    return _report(result, output_format, out, err)


async def _show(
    prompt: str,
    options: AgentOptions,
    output_format: str,
    live: bool,
    progress: bool,
    out: TextIO,
    err: TextIO,
    extra: list[Any],
) -> ResultMessage | None:
    """The session drawn live, or written as stream-json, or told in progress lines."""
    from .cockpit.logs import EventLog

    events = EventLog()
    if live:
        from rich.console import Console

        from .cockpit.live import open_live_tree
        from .cockpit.state import TreeState

        state = TreeState(budget_usd=options.max_budget_usd)
        console = Console(file=err, stderr=True)
        async with open_live_tree(console, state, keep_text=False) as view:
            return await _drive(prompt, options, [view.observe, events.observe, *extra])
    else:
        if output_format == "stream-json":
            from .cockpit.stream_json import StreamJsonWriter

            writer = StreamJsonWriter()

            def emit(message: Message) -> None:
                out.write(writer.line(message).decode())
                out.flush()

            observers = [emit, events.observe]
        elif output_format == "text" and progress:
            from .cockpit.plain import ProgressLines

            observers = [ProgressLines(err).observe, events.observe]
        else:
            observers = [events.observe]
        return await _drive(prompt, options, [*observers, *extra])


async def _drive(prompt: str, options: AgentOptions, observers: list[Any]) -> ResultMessage | None:
    """Run the session, handing every message to each observer; the last result."""
    from . import ResultError, ResultMessage, query

    result: ResultMessage | None = None
    backend = options.backend
    owner = backend if hasattr(backend, "__aenter__") else contextlib.nullcontext()
    async with owner:  # closes the HTTP connections when the session is over
        try:
            async for message in query(prompt=prompt, options=options):
                for observe in observers:
                    observe(message)
                if isinstance(message, ResultMessage):
                    result = message
        except ResultError:
            pass  # the error result was yielded first and is reported below
    return result


def _report(result: ResultMessage | None, output_format: str, out: TextIO, err: TextIO) -> int:
    if result is None:
        print("agents run: the session ended without a result", file=err)
        return 1
    if output_format == "json":
        from .cockpit.stream_json import to_stream_json

        out.write(json.dumps(to_stream_json(result)) + "\n")
    elif output_format == "text":
        if result.is_error:
            for line in result.errors or [result.subtype]:
                _say(err, f"agents run: {result.subtype}: {line}")
        else:
            answer = result.result or ""
            # on a terminal the model's words are shown, not obeyed; through a pipe (a script
            # reading the answer) they are passed on byte for byte
            out.write((printable(answer, lines=True) if out.isatty() else answer) + "\n")
        if result.permission_denials:
            names = ", ".join(str(d.get("tool_name")) for d in result.permission_denials)
            _say(
                err,
                f"agents run: {len(result.permission_denials)} tool call(s) denied: {names} "
                "(allow them with --allowed-tools or --permission-mode)",
            )
    out.flush()
    return 1 if result.is_error else 0
