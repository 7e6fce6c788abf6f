"""``agents run "PROMPT"``: the main agent on the current directory, against the Anthropic API.

Registered into the ``agents`` command by :func:`register`. Credentials are the client's usual
ones: ``ANTHROPIC_API_KEY`` (or ``ANTHROPIC_AUTH_TOKEN``). Without them the command stops with a
one-line error pointing at ``agents demo`` (exit status 2) — except when ``--base-url`` (or
``ANTHROPIC_BASE_URL``) points at this machine (``127.0.0.1``, ``localhost``, ``::1``): a local
server such as ``python -m agents.testing.fake_api`` needs no key, so a placeholder is sent.

Output formats (``--output-format``), as Claude Code's ``-p`` mode:

* ``text`` (default): the final result text on stdout; on an error result, its errors on stderr;
* ``json``: the final ``ResultMessage`` as one JSON object;
* ``stream-json``: every message as one JSON object per line (``agents.messages.encode_message``),
  ``StreamEvent``s included with ``--include-partial-messages``.

The exit status is 0 on ``success``, 1 on an error result, 2 on bad usage or configuration.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from .messages import ResultMessage
    from .options import AgentOptions

__all__ = ["register", "split_tool_rules"]

LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
PLACEHOLDER_KEY = "local-no-key"
OUTPUT_FORMATS = ("text", "json", "stream-json")


def register(subparsers: Any) -> None:
    """Add the ``run`` subcommand to the ``agents`` CLI's subparsers."""
    from .options import PERMISSION_MODES

    run = subparsers.add_parser(
        "run",
        help="run the main agent in the current directory against the Anthropic API",
        description="Run the main agent on PROMPT in the current directory "
        "(needs ANTHROPIC_API_KEY; try `agents demo` without one).",
    )
    run.add_argument("prompt", help="the user prompt")
    run.add_argument("--model", help="model id or alias (default: claude-opus-5-5)")
    run.add_argument("--max-turns", type=int, help="stop after this many turns")
    run.add_argument("--max-budget-usd", type=float, help="soft cap on the estimated cost")
    run.add_argument(
        "--allowed-tools",
        default="",
        help='permission rules to pre-approve, comma or space separated: "Read,Grep Bash(npm *)"',
    )
    run.add_argument("--permission-mode", choices=PERMISSION_MODES, help="permission mode")
    run.add_argument("--output-format", choices=OUTPUT_FORMATS, default="text")
    run.add_argument(
        "--include-partial-messages",
        action="store_true",
        help="with stream-json, also print the raw stream events as they arrive",
    )
    run.add_argument("--base-url", help="Messages API base URL (default: ANTHROPIC_BASE_URL)")
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


def _run(args: argparse.Namespace) -> int:
    base_url = args.base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
    key, error = _api_key(base_url)
    if error is not None:
        print(error, file=sys.stderr)
        return 2

    import trio

    from . import AgentOptions
    from .backends.anthropic import AnthropicBackend

    backend = AnthropicBackend(api_key=key, base_url=base_url)
    try:
        options = AgentOptions(
            backend=backend,
            model=args.model,
            max_turns=args.max_turns,
            max_budget_usd=args.max_budget_usd,
            allowed_tools=split_tool_rules(args.allowed_tools),
            permission_mode=args.permission_mode,
            include_partial_messages=args.include_partial_messages,
            cwd=os.getcwd(),
        )
    except ValueError as exc:
        print(f"agents run: {exc}", file=sys.stderr)
        return 2
    return trio.run(_session, args.prompt, options, args.output_format, sys.stdout, sys.stderr)


async def _session(
    prompt: str, options: AgentOptions, output_format: str, out: TextIO, err: TextIO
) -> int:
    from . import ResultError, ResultMessage, query
    from .messages import encode_message

    result: ResultMessage | None = None
    async with options.backend:  # closes the HTTP connections when the session is over
        try:
            async for message in query(prompt=prompt, options=options):
                if output_format == "stream-json":
                    out.write(encode_message(message).decode() + "\n")
                    out.flush()
                if isinstance(message, ResultMessage):
                    result = message
        except ResultError:
            pass  # the error result was yielded first and is reported below
    if result is None:
        print("agents run: the session ended without a result", file=err)
        return 1
    if output_format == "json":
        out.write(encode_message(result).decode() + "\n")
    elif output_format == "text":
        if result.is_error:
            for line in result.errors or [result.subtype]:
                print(f"agents run: {result.subtype}: {line}", file=err)
        else:
            out.write((result.result or "") + "\n")
    out.flush()
    return 1 if result.is_error else 0
