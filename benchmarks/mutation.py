"""Mutation run: how many small planted bugs the budget and scheduler property tests kill.

Each mutant is one textual edit of one source file — an operator flipped, a comparison
swapped, an off-by-one, a statement dropped — applied in a temporary copy of the tree (the
working tree is never modified). For each mutant only the property tests that guard that file
run; a mutant is *killed* when they fail (or time out), *survived* when they pass. Prints one
JSON line per mutant and a summary line with the kill ratio, overall and per file::

    python benchmarks/mutation.py                 # every mutant
    python benchmarks/mutation.py --quick         # two mutants (the smoke test)
    python benchmarks/mutation.py --only L01 S03  # chosen mutants
    python benchmarks/mutation.py --list          # what the mutants are
    BUDGET_PROPERTY_EXAMPLES=300 python benchmarks/mutation.py   # the tree properties smaller

The run first checks that the copy is the one imported and that its tests pass unmutated.
Hypothesis runs derandomized, without its example database and without shrinking (a failure
found is a kill), so figures are reproducible; a mutant whose tests run 4x longer than the
unmutated ones (a deadlock, typically) counts as killed by the timeout, and says so. The tree
properties run as many examples as ``BUDGET_PROPERTY_EXAMPLES`` says (1 000 by default, as in
CI).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent

LEDGER = "runtime/_ledger.py"
SCHEDULER = "runtime/_scheduler.py"
BUDGET = "agents/_loop/budget.py"
MODEL_CALL = "agents/_loop/model_call.py"
SESSION = "agents/_loop/session.py"
TOOL_CALLS = "agents/_loop/tool_calls.py"
ONE_SHOT = "agents/_loop/one_shot.py"  # the classifier's and prompt hooks' requests
HOOKPOINTS = "agents/_features/hookpoints.py"

#: the properties of the loop's budget path: the trees under a cap, and the worst case
LOOP_PROPERTIES = [
    # the one that kills most first: -x stops at the first kill
    "tests/agents/test_budget.py::test_soft_cap_bound_holds_for_random_trees",
    "tests/agents/test_budget.py::test_hard_cap_is_never_exceeded",
    "tests/agents/test_budget.py::test_an_interrupt_a_slow_reader_or_a_clear_loses_no_usage",
    "tests/agents/test_budget.py::test_without_a_cap_every_scripted_response_is_charged_once",
    "tests/agents/test_budget_worst_case.py",  # 1 000 examples whatever the environment says
]

#: the property tests that guard each mutated file (nothing else runs for its mutants)
PROPERTIES: dict[str, list[str]] = {
    LEDGER: [
        "tests/runtime/test_ledger.py::test_the_ledger_keeps_exact_books_under_any_sequence",
        "tests/runtime/test_ledger.py::test_hard_cap_is_never_exceeded",
        "tests/runtime/test_ledger.py::test_soft_cap_trips_on_the_first_charge_reaching_it",
        "tests/runtime/test_ledger.py::test_total_is_exact_and_order_independent",
    ],
    SCHEDULER: [
        "tests/runtime/test_scheduler.py::test_scheduling_property",
        "tests/runtime/test_scheduler.py"
        "::test_a_drawn_concurrency_limit_is_respected_and_every_call_runs_once",
        "tests/runtime/test_scheduler.py"
        "::test_waits_cut_at_a_drawn_instant_end_there_and_nothing_cut_runs",
    ],
    BUDGET: LOOP_PROPERTIES,
    MODEL_CALL: LOOP_PROPERTIES,
    SESSION: LOOP_PROPERTIES,
    TOOL_CALLS: LOOP_PROPERTIES,
    ONE_SHOT: LOOP_PROPERTIES,
    HOOKPOINTS: LOOP_PROPERTIES,
}


class Mutant(NamedTuple):
    """Replace the one occurrence of ``old`` in ``path`` by ``new``."""

    id: str
    path: str
    kind: str
    old: str
    new: str


def _m(id: str, path: str, kind: str, old: str, new: str) -> Mutant:
    return Mutant(id, path, kind, old, new)


MUTANTS: list[Mutant] = [
    # -- the ledger ----------------------------------------------------------------------------
    _m("L01", LEDGER, "comparison swapped", "if cap is None or self._total < cap:",
       "if cap is None or self._total <= cap:"),
    _m("L02", LEDGER, "statement dropped", "        self._charges += 1\n", ""),
    _m("L03", LEDGER, "operand dropped", "per_agent[agent_id] = spent + units",
       "per_agent[agent_id] = units"),
    _m("L04", LEDGER, "constant flipped",
       "        if self._is_tripped:\n            return True\n        cap = self._cap_units\n"
       "        if cap is None or self._total",
       "        if self._is_tripped:\n            return False\n        cap = self._cap_units\n"
       "        if cap is None or self._total"),
    _m("L05", LEDGER, "guard dropped", "        if self._is_tripped:\n            return\n", ""),
    _m("L06", LEDGER, "statement dropped", "        self.tripped.set()\n", ""),
    _m("L07", LEDGER, "comparison swapped", "self._total + self._reserved + units > cap",
       "self._total + self._reserved + units >= cap"),
    _m("L08", LEDGER, "operand dropped", "self._total + self._reserved + units > cap",
       "self._total + units > cap"),
    _m("L09", LEDGER, "condition dropped", "(self._is_tripped or self._total", "(self._total"),
    _m("L10", LEDGER, "statement dropped", "        self._reserved += units\n", ""),
    _m("L11", LEDGER, "per-ledger ids", "rid = next(_reservation_ids)",
       "rid = len(self._outstanding)"),
    _m("L12", LEDGER, "statement dropped",
       "        self._reserved -= booked\n        tripped = self._charge_units",
       "        tripped = self._charge_units"),
    _m("L13", LEDGER, "comparison swapped", "overrun = units > booked",
       "overrun = units >= booked"),
    _m("L14", LEDGER, "statements dropped",
       "                self._trip()\n                tripped = True\n", "                pass\n"),
    _m("L15", LEDGER, "condition dropped",
       "if self._cap_units is not None:  # without a cap", "if True:  # without a cap"),
    _m("L16", LEDGER, "condition negated", "if reservation.issuer is not self:",
       "if reservation.issuer is self:"),
    _m("L17", LEDGER, "condition dropped",
       "if entry is None or entry[1] != reservation.agent_id:", "if entry is None:"),
    _m("L18", LEDGER, "statement dropped",
       "        if booked is not None:\n            self._reserved -= booked\n",
       "        if booked is not None:\n            pass\n"),
    _m("L19", LEDGER, "guard dropped",
       "        if self._is_tripped:\n            return 0.0\n", ""),
    _m("L20", LEDGER, "off by one", "min(max_tokens, left // per_token)",
       "min(max_tokens, left // per_token + 1)"),
    _m("L21", LEDGER, "operand dropped", "tokens >= min(least, max_tokens)", "tokens >= least"),
    _m("L22", LEDGER, "clamp dropped", "min(max_tokens, left // per_token)", "left // per_token"),
    _m("L23", LEDGER, "off by one", "(agent_id, input_units + tokens * per_token, tokens)",
       "(agent_id, input_units + (tokens - 1) * per_token, tokens)"),
    _m("L24", LEDGER, "wrong scale", "math.ceil(output_usd_per_mtok * 1e6)",
       "math.ceil(output_usd_per_mtok * 1e5)"),
    _m("L25", LEDGER, "comparison swapped", "if self._cap_units <= 0:", "if self._cap_units < 0:"),
    _m("L26", LEDGER, "old exhausted state", "        return self._is_tripped\n\n    def spent",
       "        return self._cap_units is not None and self._total >= self._cap_units\n\n"
       "    def spent"),
    _m("L27", LEDGER, "rounding", "    return round(value * _SCALE)",
       "    return int(value * _SCALE)"),
    _m("L28", LEDGER, "operand dropped", "left = available - input_units",
       "left = available"),
    _m("L29", LEDGER, "statement dropped", "            self._overruns += 1\n", ""),
    _m("L30", LEDGER, "condition dropped",
       "        if self._is_tripped:\n            return None\n        available",
       "        available"),
    _m("L31", LEDGER, "condition dropped",
       "        if self._cap_units is not None:\n            self._trip()\n",
       "        self._trip()\n"),
    _m("L32", LEDGER, "operand dropped", "units = per_agent.get(agent_id, 0)\n        for below",
       "units = 0\n        for below"),
    _m("L33", LEDGER, "off by one", "below.setdefault(agent_id[:cut], [])",
       "below.setdefault(agent_id[:cut + 1], [])"),
    # -- the scheduler -------------------------------------------------------------------------
    _m("S01", SCHEDULER, "comparison swapped", "if self._running < self._max_concurrency:",
       "if self._running <= self._max_concurrency:"),
    _m("S02", SCHEDULER, "statement dropped",
       "            else:\n                self._running -= 1\n", "            else:\n"
       "                pass\n"),
    _m("S03", SCHEDULER, "condition dropped",
       "            if waiting:\n                waiting.unpark()",
       "            if False:\n                waiting.unpark()"),
    _m("S04", SCHEDULER, "off by one", "runs.append(range(start, i))",
       "runs.append(range(start, i + 1))"),
    _m("S05", SCHEDULER, "statement dropped",
       "    if start < n:\n        runs.append(range(start, n))\n", ""),
    _m("S06", SCHEDULER, "off by one", "first, next_index = next_index, stop",
       "first, next_index = next_index + 1, stop"),
    _m("S07", SCHEDULER, "statement dropped", "        results[index] = result\n", ""),
    _m("S08", SCHEDULER, "comparison swapped", "if len(run) == 1:", "if len(run) <= 2:"),
    _m("S09", SCHEDULER, "statement dropped", "        self._calls_total += 1\n", ""),
    _m("S10", SCHEDULER, "comparison swapped", "if self._running > self._max_parallel:",
       "if self._running < self._max_parallel:"),
    _m("S11", SCHEDULER, "statement dropped", "            self._runs_total += 1\n", ""),
    _m("S12", SCHEDULER, "statement dropped",
       "        if self._running < self._max_concurrency:\n            self._running += 1\n",
       "        if self._running < self._max_concurrency:\n            pass\n"),
    _m("S13", SCHEDULER, "guard dropped",
       "            await trio.lowlevel.checkpoint_if_cancelled()  # a cancelled run",
       "            #"),
    _m("S14", SCHEDULER, "off by one", "            if start < i:\n",
       "            if start < i - 1:\n"),
    _m("S15", SCHEDULER, "cut ignored", "        return not scope.cancelled_caught\n",
       "        return True\n"),
    _m("S16", SCHEDULER, "wait not watched",
       "        if cut is None:\n            await self._waiting.park()",
       "        if True:\n            await self._waiting.park()"),
    _m("S17", SCHEDULER, "statement dropped",
       "            if on_complete is not None:\n"
       "                await on_complete(index, call, result)\n            return\n",
       "            return\n"),
    # -- the loop's budget path ----------------------------------------------------------------
    _m("B01", BUDGET, "guard dropped", "    if ledger.exhausted:\n        return None\n", ""),
    _m("B02", BUDGET, "condition dropped", "    if not reserve or ledger.cap is None:",
       "    if True:"),
    _m("B03", BUDGET, "wrong scale", "input_cost = input_tokens * per_in / 1_000_000",
       "input_cost = input_tokens * per_in / 10_000_000"),
    _m("B04", BUDGET, "statement dropped",
       "        request = msgspec.structs.replace(request, max_tokens=fitted)", "        pass"),
    _m("B05", BUDGET, "operand dropped", "extra += IMAGE_ALLOWANCE * encoded.count(_IMAGE)",
       "extra += encoded.count(_IMAGE)"),
    _m("B06", BUDGET, "statement dropped",
       "        extra += DOCUMENT_ALLOWANCE * encoded.count(_DOCUMENT)\n", "        pass\n"),
    _m("B07", BUDGET, "report dropped",
       "            await publish(overrun_message(settlement))", "            pass"),
    _m("B08", BUDGET, "shield dropped",
       "        with trio.CancelScope(shield=True), trio.move_on_after(OVERRUN_REPORT_TIMEOUT):",
       "        with trio.move_on_after(OVERRUN_REPORT_TIMEOUT):"),
    _m("M01", MODEL_CALL, "operand dropped",
       "total += len(encoded) + MESSAGE_MARGIN + allowances(encoded)",
       "total += len(encoded) + MESSAGE_MARGIN"),
    _m("M02", MODEL_CALL, "allowance dropped", "return size + TOOLS_ALLOWANCE if request.tools",
       "return size if request.tools"),
    _m("M03", MODEL_CALL, "condition dropped",
       "if history.generation != self._est_generation or len(history) < self._est_count:",
       "if len(history) < self._est_count:"),
    _m("M04", MODEL_CALL, "input not booked",
       "self.input_estimate(loop, request) if self.reserve else 0,", "0,"),
    _m("M05", MODEL_CALL, "statement dropped",
       "            if loop.is_main:\n                session.ledger.exhaust()",
       "            if False:\n                session.ledger.exhaust()"),
    _m("M06", BUDGET, "operand dropped",
       "    if not usage and reservation is None:\n        return\n",
       "    if reservation is None:\n        return\n"),
    _m("M07", MODEL_CALL, "statements swapped",
       "                    feed(event)  # recorded before emitted: a slow reader cannot"
       " lose its usage\n"
       "                    await emit(\n"
       "                        StreamEvent(uuid=new_id(), session_id=sid,"
       " event=_to_builtins(event))\n"
       "                    )",
       "                    await emit(\n"
       "                        StreamEvent(uuid=new_id(), session_id=sid,"
       " event=_to_builtins(event))\n"
       "                    )"
       "\n                    feed(event)"),
    _m("M08", MODEL_CALL, "report dropped",
       "            await loop.publish(overrun_message(settlement))", "            pass"),
    _m("M09", MODEL_CALL, "watch dropped",
       "                with watching_the_budget(loop.session.ledger) as wait:",
       "                with trio.CancelScope() as wait:"),
    _m("C01", SESSION, "wrong ledger",
       "issuer = reservation.issuer if reservation.issuer is not None else self.ledger",
       "issuer = self.ledger"),
    _m("C02", SESSION, "operand dropped",
       "max(t.input, t.cache_write_5m, t.cache_write_1h, t.cache_read) for t in tiers)",
       "t.input for t in tiers)"),
    _m("C03", SESSION, "tier dropped",
       "tiers = [info] if info.long_context is None else [info, info.long_context]\n"
       "        per_in", "tiers = [info]\n        per_in"),
    _m("C04", SESSION, "statement dropped",
       "            entry[key] += usage.get(key) or 0\n", "            pass\n"),
    _m("C05", SESSION, "wrong ledger",
       "return cost, (ledger or self.ledger).charge(agent_id, cost), None",
       "return cost, self.ledger.charge(agent_id, cost), None"),
    _m("T01", TOOL_CALLS, "guard dropped",
       "    if loop.session.ledger.exhausted:  # no tool starts after the trip",
       "    if False:  # no tool starts after the trip"),
    _m("T02", TOOL_CALLS, "watch dropped", "with watching_the_budget(ledger) as wait:",
       "with trio.CancelScope() as wait:"),
    _m("T03", TOOL_CALLS, "queue not watched",
       "if ledger.cap is None:  # no budget to trip (the hot path)",
       "if True:  # no budget to trip (the hot path)"),
    _m("H01", HOOKPOINTS, "watch dropped",
       "with watching_the_budget(loop.session.ledger) as wait:  # a hook ends at the trip",
       "with trio.CancelScope() as wait:"),
    _m("H02", HOOKPOINTS, "cut ignored",
       "if result is CUT_BY_THE_BUDGET:  # the hook might have asked", "if False:  #"),
    _m("H03", HOOKPOINTS, "output passed on",
       "if result is CUT_BY_THE_BUDGET:  # the hook could not vet", "if False:  #"),
    _m("G01", ONE_SHOT, "one-shot request not booked",
       "admitted = await admit(session, agent_id, request, size, reserve=reserve)",
       "admitted = await admit(session, agent_id, request, size, reserve=False)"),
]  # fmt: skip

#: the smoke test's two mutants, both quick to kill
QUICK = ["L01", "S05"]


def mutate(source: str, mutant: Mutant) -> str:
    """``source`` with the mutant applied; its ``old`` text must occur exactly once."""
    count = source.count(mutant.old)
    if count != 1:
        raise ValueError(f"mutant {mutant.id}: expected one occurrence of its text, found {count}")
    return source.replace(mutant.old, mutant.new)


def copy_tree(dest: Path) -> None:
    """The packages, tests and project file (no virtualenv, caches or git) into ``dest``."""
    ignore = shutil.ignore_patterns("__pycache__", ".hypothesis", "*.egg-info", ".mypy_cache")
    for name in ("runtime", "agents", "tests"):
        shutil.copytree(ROOT / name, dest / name, ignore=ignore)
    shutil.copy2(ROOT / "pyproject.toml", dest / "pyproject.toml")


def run_tests(tree: Path, tests: Sequence[str], timeout: float) -> tuple[str, float]:
    """Run ``tests`` in ``tree``: ("passed" | "failed" | "timeout" | "error", seconds)."""
    shutil.rmtree(tree / ".hypothesis", ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    command = [sys.executable, "-m", "pytest", "-q", "-x", "--no-header", "--hypothesis-seed=0"]
    command += ["--hypothesis-profile=mutation"]  # a failure found is enough: no shrinking
    command += tests
    start = time.perf_counter()
    try:
        done = subprocess.run(
            command, cwd=tree, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return "timeout", time.perf_counter() - start
    seconds = time.perf_counter() - start
    if done.returncode == 0:
        return "passed", seconds
    if done.returncode == 1:
        return "failed", seconds
    return "error", seconds


def check_copy_is_imported(tree: Path) -> None:
    """The tests must import the copy, not the working tree (an editable install is on path)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    code = "import runtime, agents; print(runtime.__file__); print(agents.__file__)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tree, env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    if not all(Path(p).is_relative_to(tree) for p in out):
        raise SystemExit(f"the copy in {tree} is not the one imported: {out}")


def emit(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"only {' and '.join(QUICK)}")
    parser.add_argument("--only", nargs="+", metavar="ID", help="only these mutants")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument(
        "--timeout", type=float, help="seconds per mutant (default: 4x the unmutated run, >= 60)"
    )
    parser.add_argument(
        "--skip-baseline",
        action="store_true",
        help="do not run the unmutated tests first (needs --timeout; for a run split in parts "
        "of which one checks the baseline)",
    )
    args = parser.parse_args(argv)
    if args.skip_baseline and args.timeout is None:
        parser.error("--skip-baseline needs --timeout")
    chosen = MUTANTS
    if args.quick:
        chosen = [m for m in MUTANTS if m.id in QUICK]
    if args.only:
        unknown = set(args.only) - {m.id for m in MUTANTS}
        if unknown:
            parser.error(f"unknown mutant ids: {', '.join(sorted(unknown))}")
        chosen = [m for m in MUTANTS if m.id in args.only]
    if args.list:
        for m in chosen:
            emit(mutant=m.id, file=m.path, kind=m.kind, old=m.old, new=m.new)
        return 0

    with tempfile.TemporaryDirectory(prefix="mutation-") as tmp:
        tree = Path(tmp)
        copy_tree(tree)
        check_copy_is_imported(tree)
        timeouts: dict[str, float] = {}
        for tests in dict.fromkeys(tuple(PROPERTIES[m.path]) for m in chosen):
            if args.skip_baseline:
                timeouts.update({m.path: args.timeout for m in chosen})
                break
            status, seconds = run_tests(tree, tests, args.timeout or 3600.0)
            files = sorted({m.path for m in chosen if tuple(PROPERTIES[m.path]) == tests})
            emit(baseline=files, status=status, seconds=round(seconds, 1))
            if status != "passed":
                raise SystemExit(f"the property tests of {files} fail unmutated: {status}")
            for path in files:
                timeouts[path] = args.timeout or max(60.0, 4 * seconds)
        killed: dict[str, int] = {}
        total: dict[str, int] = {}
        survivors: list[str] = []
        for m in chosen:
            target = tree / m.path
            original = target.read_text()
            mutated = mutate(original, m)
            compile(mutated, m.path, "exec")  # a mutant must be valid Python
            target.write_text(mutated)
            try:
                status, seconds = run_tests(tree, PROPERTIES[m.path], timeouts[m.path])
            finally:
                target.write_text(original)
            dead = status in ("failed", "timeout")  # an "error" (pytest could not run the
            # tests) counts as survived, and says so: a long run goes on past it
            total[m.path] = total.get(m.path, 0) + 1
            killed[m.path] = killed.get(m.path, 0) + dead
            if not dead:
                survivors.append(m.id)
            emit(
                mutant=m.id,
                file=m.path,
                kind=m.kind,
                status="killed" if dead else "survived",
                by={"timeout": "timeout", "error": "pytest error"}.get(status, "properties"),
                seconds=round(seconds, 1),
            )
        all_killed, all_total = sum(killed.values()), sum(total.values())
        emit(
            bench="mutation",
            killed=all_killed,
            total=all_total,
            ratio=round(all_killed / all_total, 3) if all_total else None,
            per_file={p: f"{killed[p]}/{total[p]}" for p in sorted(total)},
            survived=survivors,
            target_ratio=0.9,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
