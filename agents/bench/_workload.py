"""What ``agents bench`` calls: a set of tools, each with an input, read-only or mutating.

Three kinds of set, named as on the command line:

* ``builtin`` — the built-in read-only tools (``Read``, ``Grep``, ``Glob``) on a small generated
  project, with ``Write`` (to scratch files) as the mutating call;
* ``sleep:MS`` — a custom ``@tool`` that waits MS milliseconds (Trio time), read-only, with a
  mutating twin: the tool's own cost is known exactly, so what remains is the runtime's;
* ``module:PKG.MOD`` — the ``@tool`` functions (and ``create_sdk_mcp_server`` servers) of a
  module, each called with the smallest input its schema accepts; read-only when marked
  ``readOnlyHint``.
"""

from __future__ import annotations

import importlib
import itertools
from pathlib import Path
from typing import Any

import attrs
import trio

from .. import SdkMcpTool, ToolAnnotations, create_sdk_mcp_server, tool

__all__ = ["Call", "Workload", "load_workload"]

_MINIMAL = {"string": "x", "integer": 1, "number": 1.0, "boolean": False, "array": [],
            "object": {}}  # fmt: skip


@attrs.frozen
class Call:
    """One tool call of a turn: the name the model uses, its input, whether it mutates, and its
    own cost in seconds when known (the sleep tool's latency)."""

    name: str
    input: dict[str, Any]
    mutating: bool = False
    intrinsic_s: float | None = None


@attrs.define(eq=False)
class Workload:
    """A named set of calls and what a session needs to run them (tools, MCP servers)."""

    label: str
    read_only: list[Call]
    mutating: list[Call]
    builtin_tools: list[str] = attrs.Factory(list)
    mcp_servers: dict[str, Any] = attrs.Factory(dict)

    def calls(self, k: int, mutating_share: float, turn: int) -> list[Call]:
        """``k`` calls for one turn; every ``round(1/share)``-th is mutating (none at share 0)."""
        every = round(1 / mutating_share) if mutating_share > 0 else 0
        # each turn continues the cycle: with k=1 the turns go through every tool in turn
        ro = itertools.islice(itertools.cycle(self.read_only), turn * k, None)
        rw = itertools.cycle(self.mutating or self.read_only)
        out = []
        for i in range(k):
            if every and self.mutating and (i + 1) % every == 0:
                call = next(rw)
                args = {**call.input}
                if "file_path" in args:  # distinct targets, so that writes do not collide
                    args["file_path"] = f"{args['file_path']}.{turn}.{i}"
                out.append(attrs.evolve(call, input=args))
            else:
                out.append(next(ro))
        return out


def _builtin(root: Path) -> Workload:
    """A small project: 60 modules in three packages, a few TODOs."""
    for i in range(60):
        pkg = root / f"pkg{i % 3}"
        pkg.mkdir(parents=True, exist_ok=True)
        body = "".join(f"def f{j}(x):\n    return x + {j}\n" for j in range(20))
        if i % 10 == 3:
            body += "# TODO: handle negative x\n"
        (pkg / f"mod{i:02d}.py").write_text(body)
    one = str(root / "pkg0" / "mod03.py")
    read_only = [
        Call("Read", {"file_path": one}),
        Call("Grep", {"pattern": "TODO", "path": one, "output_mode": "content", "-n": True}),
        Call("Glob", {"pattern": "pkg1/*.py"}),
    ]
    mutating = [Call("Write", {"file_path": str(root / "scratch.txt"), "content": "x\n"},
                     mutating=True)]  # fmt: skip
    return Workload("builtin", read_only, mutating, builtin_tools=["Read", "Grep", "Glob", "Write"])


def _sleep(ms: float) -> Workload:
    seconds = ms / 1000

    async def wait(args: dict[str, Any]) -> dict[str, Any]:
        await trio.sleep(seconds)
        return {"content": [{"type": "text", "text": "ok"}]}

    reader = tool("wait", f"waits {ms:g} ms", {"i": int},
                  annotations=ToolAnnotations(readOnlyHint=True))(wait)  # fmt: skip
    writer = tool("wait_and_write", f"waits {ms:g} ms, marked mutating", {"i": int})(wait)
    server = create_sdk_mcp_server("bench", "1", [reader, writer])
    return Workload(
        f"sleep:{ms:g}",
        [Call("mcp__bench__wait", {"i": 0}, intrinsic_s=seconds)],
        [Call("mcp__bench__wait_and_write", {"i": 0}, mutating=True, intrinsic_s=seconds)],
        mcp_servers={"bench": server},
    )


def _minimal_input(schema: dict[str, Any]) -> dict[str, Any]:
    props: dict[str, Any] = schema.get("properties") or {}
    return {
        name: _MINIMAL.get(str((props.get(name) or {}).get("type")), "x")
        for name in schema.get("required") or []
    }


def _module(name: str) -> Workload:
    server_type = type(create_sdk_mcp_server("probe", "0", []))
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        raise ValueError(f"--tools module:{name}: cannot import it ({exc})") from None
    tools = [v for v in vars(module).values() if isinstance(v, SdkMcpTool)]
    for value in vars(module).values():
        if isinstance(value, server_type):
            tools.extend(t for t in value.tools if t not in tools)
    if not tools:
        raise ValueError(f"--tools module:{name}: no @tool functions or SDK MCP servers in it")
    server = create_sdk_mcp_server("bench", "1", tools)
    read_only: list[Call] = []
    mutating: list[Call] = []
    for t in tools:
        ro = bool(t.annotations and t.annotations.readOnlyHint)
        call = Call(f"mcp__bench__{t.name}", _minimal_input(t.input_schema), mutating=not ro)
        (read_only if ro else mutating).append(call)
    if not read_only:  # all mutating: they are the set
        read_only, mutating = mutating, []
    return Workload(f"module:{name}", read_only, mutating, mcp_servers={"bench": server})


def load_workload(spec: str, root: Path) -> Workload:
    """The workload named ``spec`` (``builtin``, ``sleep:MS``, ``module:PKG.MOD``); ``root`` is
    the scratch project directory it may write into."""
    if spec == "builtin":
        return _builtin(root)
    kind, _, arg = spec.partition(":")
    if kind == "sleep":
        try:
            ms = float(arg)
        except ValueError:
            raise ValueError(
                f"--tools sleep:MS needs a number of milliseconds, got {arg!r}"
            ) from None
        if ms < 0:
            raise ValueError(f"--tools sleep:MS must be >= 0, got {ms:g}")
        return _sleep(ms)
    if kind == "module" and arg:
        return _module(arg)
    if kind == "mcp":
        raise NotImplementedError(
            "--tools mcp:CONFIG: external MCP servers are not built yet; put the server's "
            "@tool functions in a module and use module:PKG.MOD"
        )
    raise ValueError(f"unknown tool set {spec!r} (expected builtin, sleep:MS or module:PKG.MOD)")
