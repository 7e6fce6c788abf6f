"""The real model path end to end (issue 3): ``query()`` → ``AnthropicBackend`` → the ``anthropic``
client → HTTP on 127.0.0.1 → ``FakeAnthropicServer``, and back.

One query of two turns: the first response asks for four parallel calls of a read-only custom
tool, the second answers. Prints one JSON line per measured query and a summary::

    python benchmarks/bench_anthropic_roundtrip.py            # 50 measured queries
    python benchmarks/bench_anthropic_roundtrip.py --quick    # 3 (the smoke test)
    python benchmarks/bench_anthropic_roundtrip.py --server subprocess

* ``total_ms``: wall time of the whole query, from calling ``query()`` to its last message
  (interpreter start and the first connection are excluded by a warm-up query).
* ``gap_ms``: from the server writing the last byte of response 1 to it having request 2 — the
  loop's own per-turn cost: parsing the stream, running the four tools, building the next request.

Each query runs twice, alternating: through one ``AnthropicBackend`` reused across queries, and
on the default path (``query()`` with no backend, as a user calls it), whose ratio to the
reused one is the last line (``default_over_reused``, target ≤ 1.2).

Targets (issue 3): total ≤ 12 ms, gap ≤ 5 ms. ``--server inproc`` (default) runs the server in the
same Trio loop, so its own work counts against the client; ``subprocess`` runs it in another
process, as a real API would be (its timestamps come from the same monotonic clock).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from typing import Any

import trio

from agents import AgentOptions, ToolAnnotations, create_sdk_mcp_server, query, tool
from agents.backends import AnthropicBackend, ModelRequest
from agents.testing.fake_api import FakeAnthropicServer
from agents.testing.scripted import Step, text, tool_use, usage

TARGET_TOTAL_MS = 12.0
TARGET_GAP_MS = 5.0
TARGET_DEFAULT_RATIO = 1.2  # query() with no backend, over a reused AnthropicBackend


def emit(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def respond(request: ModelRequest) -> Step:
    """Turn 1: four parallel lookups; turn 2: the answer."""
    if len(request.messages) == 1:
        return Step(
            [text("Looking these up."), *(tool_use("mcp__kv__lookup", {"key": k}) for k in "abcd")],
            usage=usage(2400, 80, cache_read_input_tokens=2000),
        )
    return Step([text("a, b, c and d are all present.")], usage=usage(2600, 20))


def lookup_server() -> Any:
    @tool("lookup", "Look a key up", {"key": str}, annotations=ToolAnnotations(readOnlyHint=True))
    async def lookup(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": f"value of {args['key']}"}]}

    return create_sdk_mcp_server("kv", "1.0", [lookup])


async def one_query(backend: AnthropicBackend | None, cwd: str) -> float:
    """One query; ``backend=None`` is the default path, as a user calls ``query()``."""
    options = AgentOptions(backend=backend, cwd=cwd, mcp_servers={"kv": lookup_server()})
    t0 = time.perf_counter()
    async for _ in query(prompt="Are a, b, c and d present?", options=options):
        pass
    return time.perf_counter() - t0


async def run_inproc(n: int, cwd: str) -> None:
    async with FakeAnthropicServer(respond) as server:
        await measure(n, cwd, server.base_url, lambda: server_times(server))


def server_times(server: FakeAnthropicServer) -> list[tuple[float, float]]:
    """The timings of the requests since the last call; the records are dropped, so the bodies
    the server keeps do not pile up on the heap and slow the client's garbage collector."""
    times = [(r.received_at, r.finished_at) for r in server.requests]
    server.requests.clear()
    return times


async def measure(n: int, cwd: str, base_url: str, times: Any) -> None:
    """``n`` queries through a reused backend and ``n`` on the default path (no backend passed:
    the client comes from ``ANTHROPIC_BASE_URL``), alternating, so both see the same load."""
    saved = {name: os.environ.get(name) for name in ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY")}
    os.environ.update(ANTHROPIC_BASE_URL=base_url, ANTHROPIC_API_KEY="bench")
    try:
        await measure_paths(n, cwd, base_url, times)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


async def measure_paths(n: int, cwd: str, base_url: str, times: Any) -> None:
    totals: dict[str, list[float]] = {"reused": [], "default": []}
    gaps: dict[str, list[float]] = {"reused": [], "default": []}
    async with AnthropicBackend(api_key="bench", base_url=base_url) as reused:
        for warm in (reused, None):  # warm-up: imports, first connections, caches
            await one_query(warm, cwd)
        times()
        for i in range(n):
            order = ("reused", "default") if i % 2 == 0 else ("default", "reused")
            for path in order:
                total = await one_query(reused if path == "reused" else None, cwd)
                stamps = times()
                assert len(stamps) == 2, f"expected two requests per query, got {len(stamps)}"
                gap = stamps[1][0] - stamps[0][1]
                totals[path].append(total)
                gaps[path].append(gap)
                emit(
                    bench="anthropic_roundtrip",
                    path=path,
                    run=i,
                    total_ms=round(total * 1e3, 3),
                    gap_ms=round(gap * 1e3, 3),
                )
    medians = {}
    for path in ("reused", "default"):
        med_total = statistics.median(totals[path]) * 1e3
        med_gap = statistics.median(gaps[path]) * 1e3
        medians[path] = med_total
        emit(
            bench="anthropic_roundtrip_summary",
            path=path,
            runs=n,
            total_ms_median=round(med_total, 3),
            total_ms_min=round(min(totals[path]) * 1e3, 3),
            total_ms_p90=round(sorted(totals[path])[int(0.9 * (n - 1))] * 1e3, 3),
            gap_ms_median=round(med_gap, 3),
            gap_ms_min=round(min(gaps[path]) * 1e3, 3),
            target_total_ms=TARGET_TOTAL_MS,
            target_gap_ms=TARGET_GAP_MS,
            ok=med_total <= TARGET_TOTAL_MS and med_gap <= TARGET_GAP_MS,
        )
    ratio = medians["default"] / medians["reused"]
    emit(
        bench="anthropic_default_path",
        default_over_reused=round(ratio, 3),
        target_ratio=TARGET_DEFAULT_RATIO,
        ok=ratio <= TARGET_DEFAULT_RATIO,
    )


def run_with_subprocess_server(n: int, cwd: str) -> None:
    """The server in another process; its timings are fetched over a pipe after each query."""
    from _fake_server import ServerProcess  # this folder's (a script runs from it)

    server = ServerProcess("bench_anthropic_roundtrip")
    try:
        trio.run(measure, n, cwd, server.base_url, server.times)
    finally:
        server.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="three measured queries (smoke test)")
    parser.add_argument("-n", type=int, default=50, help="measured queries (default 50)")
    parser.add_argument("--server", choices=("inproc", "subprocess"), default="inproc")
    args = parser.parse_args()
    n = 3 if args.quick else args.n
    with tempfile.TemporaryDirectory() as cwd:
        os.environ.setdefault("TRIO_AGENTS_DATA_DIR", os.path.join(cwd, ".data"))
        if args.server == "inproc":
            trio.run(run_inproc, n, cwd)
        else:
            run_with_subprocess_server(n, cwd)


if __name__ == "__main__":
    main()
