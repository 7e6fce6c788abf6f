"""``agents.bench``: parallel tool throughput, measured on the scripted backend.

The measurement users ask for: for a set of tools (the built-ins, a custom tool of known cost, a
module of ``@tool`` functions), run turns of k parallel calls at chosen k and read-only/mutating
mixes, and report calls per second, the runtime's overhead per call, the speed-up over serial,
and p50/p99 call latency::

    import trio
    from agents.bench import format_table, run_bench, write_report

    result = trio.run(run_bench, "sleep:100", [1, 4, 16])
    print(format_table(result))
    write_report(result, "bench-report")   # results.jsonl (+ PNG plots with the [plot] extra)

The same is ``agents bench --tools sleep:100 -k 1,4,16 --report bench-report``.
"""

from __future__ import annotations

from ._report import PLOT_HINT as PLOT_HINT
from ._report import format_table as format_table
from ._report import json_lines as json_lines
from ._report import plotting_available as plotting_available
from ._report import write_report as write_report
from ._run import BenchResult as BenchResult
from ._run import CallSample as CallSample
from ._run import KResult as KResult
from ._run import run_bench as run_bench
from ._workload import Call as Call
from ._workload import Workload as Workload
from ._workload import load_workload as load_workload

__all__ = [
    "PLOT_HINT",
    "BenchResult",
    "Call",
    "CallSample",
    "KResult",
    "Workload",
    "format_table",
    "json_lines",
    "load_workload",
    "plotting_available",
    "run_bench",
    "write_report",
]
