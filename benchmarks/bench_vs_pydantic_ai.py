"""trio-agents beside Pydantic AI on one fake Messages API server, the same two-turn scenario.

Turn 1 answers with text and four tool calls (Read, Read, Glob, Grep) over a 60-file tree,
turn 2 with the answer. The server is ``agents.testing``'s ``FakeAnthropicServer``, in its own
process; each client runs in its own process too, and the rounds alternate between them, so
that a change in the machine's load hits all. Printed, one JSON line each:

* ``vs_pydantic_ai`` per client: the median wall time of a query and the median per-turn gap
  (the server's view: from the end of the first response to the arrival of the second
  request — the tools and the loop between the turns);
  and the median CPU time of the client process per query, its children's (ripgrep's) included
  (the steadier figure on a loaded host);
* ``vs_pydantic_ai_ratio``: Pydantic AI's medians over trio-agents' (the target is ≥ 2 on wall
  and gap).

``--vs PYTHON`` adds another build's default path (``previous_build_default``, e.g. the main
branch's virtual environment) to the rounds, as the control of this build's figures.

Clients: ``trio_agents_default`` (``query()`` as a user calls it: no backend passed, the base
URL from ``ANTHROPIC_BASE_URL``), ``trio_agents_reused`` (one ``AnthropicBackend`` for all
queries) and ``pydantic_ai`` (one ``Agent`` and model client reused; its Read, Glob and Grep
are plain Python functions written here with the same inputs).

Pydantic AI is optional: it runs from ``--pai-python`` (by default ``.venv-pai/bin/python``
beside this checkout, made with ``pip install 'pydantic-ai-slim[anthropic]' -e .``, the
``vs-pydantic-ai`` extra); without it the
script says so in a ``pydantic_ai_missing`` line and measures trio-agents alone::

    python benchmarks/bench_vs_pydantic_ai.py               # 5 rounds of 20 queries
    python benchmarks/bench_vs_pydantic_ai.py --quick       # the smoke test
    python benchmarks/bench_vs_pydantic_ai.py --vs /work/main/.venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _fake_server import ServerProcess  # this folder's (the scripts run from it)

from agents.backends import ModelRequest
from agents.testing.scripted import Step, text, tool_use

HERE = Path(__file__).resolve().parent
DEFAULT_PAI_PYTHON = HERE.parent / ".venv-pai" / "bin" / "python"


def emit(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def respond(request: ModelRequest) -> Step:
    """Turn 1: text and four lookups under ``BENCH_ROOT``; turn 2: the answer."""
    root = os.environ["BENCH_ROOT"]
    if len(request.messages) == 1:
        return Step(
            [
                text("Looking."),
                tool_use("Read", {"file_path": os.path.join(root, "pkg0000", "mod00001.py")}),
                tool_use("Read", {"file_path": os.path.join(root, "pkg0000", "mod00002.py")}),
                tool_use("Glob", {"pattern": "**/*.py", "path": root}),
                tool_use("Grep", {"pattern": "NEEDLE_\\w+", "path": root}),
            ]
        )
    return Step([text("done")])


#: trio-agents' client: ``sys.argv``: base URL, root, queries, "default" or "reused".
_OURS = """
import json, os, sys, time
import trio
from agents import AgentOptions, query

base_url, root, n, path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]

def cpu():  # this process's and its finished children's (ripgrep's) CPU seconds
    import resource
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
os.environ.update(ANTHROPIC_BASE_URL=base_url, ANTHROPIC_API_KEY="bench")

async def main():
    walls = []
    backend = None
    if path == "reused":
        from agents.backends import AnthropicBackend
        backend = AnthropicBackend(api_key="bench", base_url=base_url)
    cpus = []
    for _ in range(n + 1):  # the first is a warm-up
        options = AgentOptions(cwd=root, backend=backend)
        t0, c0 = time.perf_counter(), cpu()
        async for _ in query(prompt="go", options=options):
            pass
        walls.append(time.perf_counter() - t0)
        cpus.append(cpu() - c0)
    if backend is not None:
        await backend.aclose()
    print(json.dumps([walls[1:], cpus[1:]]))

trio.run(main)
"""

#: Pydantic AI's client, with Read, Glob and Grep as plain Python (same inputs as ours).
_THEIRS = """
import asyncio, json, os, re, sys, time
from pathlib import Path
from pydantic_ai import Agent
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.providers.anthropic import AnthropicProvider

base_url, root, n = sys.argv[1], sys.argv[2], int(sys.argv[3])

def cpu():  # this process's and its finished children's CPU seconds
    import resource
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
model = AnthropicModel(
    "claude-sonnet-4-5", provider=AnthropicProvider(api_key="bench", base_url=base_url)
)
agent = Agent(model)

@agent.tool_plain(name="Read")
def read(file_path: str) -> str:
    with open(file_path, encoding="utf-8") as f:
        return "".join(f"{i:6}\\t{line}" for i, line in enumerate(f, 1))

@agent.tool_plain(name="Glob")
def glob(pattern: str, path: str | None = None) -> str:
    return "\\n".join(sorted(str(p) for p in Path(path or root).glob(pattern)))

@agent.tool_plain(name="Grep")
def grep(pattern: str, path: str | None = None) -> str:
    regex = re.compile(pattern)
    found = [str(p) for p in sorted(Path(path or root).rglob("*"))
             if p.is_file() and regex.search(p.read_text(errors="replace"))]
    return f"Found {len(found)} files\\n" + "\\n".join(found)

async def main():
    walls = []
    cpus = []
    for _ in range(n + 1):  # the first is a warm-up
        t0, c0 = time.perf_counter(), cpu()
        await agent.run("go")
        walls.append(time.perf_counter() - t0)
        cpus.append(cpu() - c0)
    print(json.dumps([walls[1:], cpus[1:]]))

asyncio.run(main())
"""


def make_tree(root: Path, files: int = 60) -> None:
    sys.path.insert(0, str(HERE))
    from bench_tools import make_tree as build

    build(root, files)


def pydantic_ai_python(given: str | None) -> str | None:
    """The interpreter that has Pydantic AI, or None."""
    candidate = given or str(DEFAULT_PAI_PYTHON)
    if not os.path.exists(candidate):
        return None
    probe = subprocess.run(
        [candidate, "-c", "import pydantic_ai.models.anthropic"], capture_output=True, check=False
    )
    return candidate if probe.returncode == 0 else None


def run_client(
    argv: list[str], root: Path, server: ServerProcess
) -> tuple[list[float], list[float], list[float]]:
    """One client process's walls and CPU times per query, and its per-turn gaps from the
    server's timings."""
    server.times()  # drop what came before
    done = subprocess.run(argv, capture_output=True, text=True, cwd=root, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed: {done.stderr[-2000:]}")
    walls, cpus = json.loads(done.stdout.strip().splitlines()[-1])
    stamps = server.times()[2:]  # the warm-up query's two requests
    assert len(stamps) == 2 * len(walls), f"expected two requests per query, got {len(stamps)}"
    gaps = [stamps[i + 1][0] - stamps[i][1] for i in range(0, len(stamps), 2)]
    return walls, cpus, gaps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--pai-python", help="an interpreter with pydantic-ai-slim[anthropic]")
    parser.add_argument(
        "--vs", metavar="PYTHON", help="another build's interpreter: its default path, alternated"
    )
    opts = parser.parse_args()
    rounds, queries = (1, 2) if opts.quick else (opts.rounds, opts.queries)
    pai = pydantic_ai_python(opts.pai_python)
    if pai is None:
        emit(
            bench="pydantic_ai_missing",
            note="Pydantic AI is not installed: pass --pai-python, an interpreter with "
            "pip install 'pydantic-ai-slim[anthropic]'; measuring trio-agents alone",
        )
    with tempfile.TemporaryDirectory(prefix="bench-vs-pai-") as tmp:
        root = Path(os.path.realpath(tmp)) / "project"
        make_tree(root)
        data = Path(tmp) / "data"
        data.mkdir()
        os.environ["TRIO_AGENTS_DATA_DIR"] = str(data)
        server = ServerProcess("bench_vs_pydantic_ai", {"BENCH_ROOT": str(root)})
        clients: dict[str, list[str]] = {
            "trio_agents_default": [sys.executable, "-c", _OURS],
            "trio_agents_reused": [sys.executable, "-c", _OURS],
        }
        if opts.vs:
            clients["previous_build_default"] = [opts.vs, "-c", _OURS]
        if pai is not None:
            clients["pydantic_ai"] = [pai, "-c", _THEIRS]
        walls: dict[str, list[float]] = {name: [] for name in clients}
        gaps: dict[str, list[float]] = {name: [] for name in clients}
        cpus: dict[str, list[float]] = {name: [] for name in clients}
        try:
            for _ in range(rounds):
                for name, argv in clients.items():
                    extra = [server.base_url, str(root), str(queries)]
                    if name != "pydantic_ai":
                        extra.append("reused" if name.endswith("reused") else "default")
                    w, c, g = run_client([*argv, *extra], root, server)
                    walls[name] += w
                    cpus[name] += c
                    gaps[name] += g
        finally:
            server.close()
    medians: dict[str, tuple[float, float, float]] = {}
    for name in clients:
        wall, gap = statistics.median(walls[name]) * 1e3, statistics.median(gaps[name]) * 1e3
        cpu = statistics.median(cpus[name]) * 1e3
        medians[name] = (wall, gap, cpu)
        emit(
            bench="vs_pydantic_ai", client=name, queries=len(walls[name]),
            wall_ms_median=round(wall, 3), gap_ms_median=round(gap, 3),
            cpu_ms_median=round(cpu, 3), wall_ms_min=round(min(walls[name]) * 1e3, 3),
            gap_ms_min=round(min(gaps[name]) * 1e3, 3),
        )  # fmt: skip
    if pai is not None:
        theirs = medians["pydantic_ai"]
        for name in [n for n in clients if n != "pydantic_ai"]:
            ours = medians[name]
            emit(
                bench="vs_pydantic_ai_ratio", client=name,
                pydantic_ai_over_ours_wall=round(theirs[0] / ours[0], 2),
                pydantic_ai_over_ours_gap=round(theirs[1] / ours[1], 2),
                pydantic_ai_over_ours_cpu=round(theirs[2] / ours[2], 2), target=2.0,
            )  # fmt: skip


if __name__ == "__main__":
    main()
