"""The bench's outputs: a table for the terminal, JSON lines, and PNG plots with matplotlib.

matplotlib comes from the optional ``[plot]`` extra; without it the report has the table and the
JSON lines, and :func:`write_report` says in one line how to get the plots.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ._run import BenchResult

__all__ = ["PLOT_HINT", "format_table", "json_lines", "write_report"]

PLOT_HINT = "plots need matplotlib: pip install 'trio-agents[plot]'"
_COLUMNS = (
    ("k", "{:>4}"),
    ("calls/s", "{:>9.1f}"),
    ("serial calls/s", "{:>14.1f}"),
    ("speed-up", "{:>8.2f}x"),
    ("overhead/call", "{:>11.1f} µs"),
    ("p50", "{:>8.2f} ms"),
    ("p99", "{:>8.2f} ms"),
)


def format_table(result: BenchResult) -> str:
    """The figures per k, one row each, with a heading naming the workload."""
    mix = f", {result.mutating_share:.0%} mutating" if result.mutating_share else ""
    own = ", ".join(f"{n} {s * 1000:.3g} ms" for n, s in sorted(result.own_duration_s.items()))
    lines = [
        f"agents bench: {result.tools}{mix}, {result.turns} turns per k, "
        f"model latency {result.model_latency_s * 1000:g} ms",
        f"each call alone (best of {max(3, result.turns)}): {own}",
    ]
    cells = [[fmt.format(v) for (_, fmt), v in zip(_COLUMNS, _values(r), strict=True)]
             for r in result.rows]  # fmt: skip
    widths = [max(len(h), *(len(row[i]) for row in cells)) for i, (h, _) in enumerate(_COLUMNS)]
    lines.append("  ".join(h.rjust(w) for (h, _), w in zip(_COLUMNS, widths, strict=True)))
    lines.extend("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in cells)
    return "\n".join(lines)


def _values(row: Any) -> tuple[Any, ...]:
    return (row.k, row.calls_per_s, row.serial_calls_per_s, row.speedup, row.overhead_us,
            row.p50_ms, row.p99_ms)  # fmt: skip


def json_lines(result: BenchResult) -> list[str]:
    """One JSON object per k, then one for the timeline of a turn at the largest k."""
    head = {
        "bench": "agents-bench",
        "tools": result.tools,
        "mutating": result.mutating_share,
        "model_latency_ms": result.model_latency_s * 1000,
        "turns": result.turns,
        "own_duration_ms": {n: round(s * 1000, 4) for n, s in result.own_duration_s.items()},
    }
    lines = [json.dumps({**head, **row.as_json()}) for row in result.rows]
    last = result.rows[-1]
    timeline = [
        {"name": s.name, "mutating": s.mutating, "start_ms": round(s.start_s * 1000, 3),
         "end_ms": round(s.end_s * 1000, 3)}
        for s in last.timeline
    ]  # fmt: skip
    lines.append(json.dumps({"bench": "agents-bench-timeline", "tools": result.tools,
                             "k": last.k, "calls": timeline}))  # fmt: skip
    return lines


def write_report(result: BenchResult, directory: str | Path, *, plots: bool = True) -> list[Path]:
    """Write ``results.jsonl`` and, with matplotlib, ``throughput.png``, ``overhead.png`` and
    ``timeline.png`` into ``directory``; returns the paths written. Without matplotlib the
    plots are skipped (the caller prints :data:`PLOT_HINT`)."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    jsonl = out / "results.jsonl"
    jsonl.write_text("\n".join(json_lines(result)) + "\n")
    written = [jsonl]
    if plots and plotting_available():
        written.extend(_plots(result, out))
    return written


def plotting_available() -> bool:
    """Whether matplotlib (the ``[plot]`` extra) can be imported."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _plots(result: BenchResult, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    ks = [r.k for r in result.rows]
    paths = []
    fig, ax = plt.subplots(figsize=(6.4, 4))
    ax.plot(ks, [r.calls_per_s for r in result.rows], "o-", label="parallel (concurrency k)")
    ax.plot(ks, [r.serial_calls_per_s for r in result.rows], "s--", label="serial (concurrency 1)")
    ax.set(xscale="log", xlabel="calls per turn (k)", ylabel="calls per second",
           title=f"Tool throughput: {result.tools}")  # fmt: skip
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.grid(alpha=0.3)
    ax.legend()
    paths.append(_save(fig, out / "throughput.png"))
    fig, ax = plt.subplots(figsize=(6.4, 4))
    ax.plot(ks, [r.overhead_us for r in result.rows], "o-")
    ax.set(xscale="log", xlabel="calls per turn (k)", ylabel="µs per call",
           title=f"Runtime overhead per call: {result.tools}")  # fmt: skip
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.grid(alpha=0.3)
    paths.append(_save(fig, out / "overhead.png"))
    last = result.rows[-1]
    fig, ax = plt.subplots(figsize=(6.4, max(2.5, 0.25 * len(last.timeline) + 1)))
    for i, s in enumerate(last.timeline):
        ax.barh(i, (s.end_s - s.start_s) * 1000, left=s.start_s * 1000,
                color="tab:red" if s.mutating else "tab:blue")  # fmt: skip
    ax.set_yticks(range(len(last.timeline)), [s.name.rsplit("__", 1)[-1] for s in last.timeline])
    ax.invert_yaxis()
    ax.set(xlabel="ms since the turn's tool phase began",
           title=f"One turn's {last.k} calls (red: mutating)")  # fmt: skip
    paths.append(_save(fig, out / "timeline.png"))
    return paths


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path
