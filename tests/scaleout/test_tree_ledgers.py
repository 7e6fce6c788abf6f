"""A worker keeps one ledger per tree open for its jobs, and closes it only after them."""

from __future__ import annotations

import time
import uuid

import trio

from agents.scaleout import open_postgres_ledger, open_shared_ledger
from agents.scaleout.worker import open_tree_ledgers

TERMS = {"input_cost_usd": 0.001, "output_usd_per_mtok": 10.0, "min_output_tokens": 100}


async def test_the_jobs_of_a_tree_share_its_ledger_until_it_lingers_out(postgres_dsn: str) -> None:
    tree = f"tree-{uuid.uuid4().hex}"
    async with open_tree_ledgers(postgres_dsn, 5.0, linger_s=0.2) as ledgers:
        async with ledgers.use(tree) as first, ledgers.use(tree) as second:
            assert first is second
        async with ledgers.use(tree) as again:  # within the linger: still the same
            assert again is first
        deadline = time.monotonic() + 10
        while tree in ledgers._trees:  # closed once unused for linger_s
            assert time.monotonic() < deadline, "an unused tree ledger was never closed"
            await trio.sleep(0.05)
        async with ledgers.use(tree) as later:
            assert later is not first


async def test_a_cancelled_jobs_last_settle_reaches_postgres(postgres_dsn: str) -> None:
    """The worker is cancelled while a job's request is in flight: the job settles what the cut
    response used, and that settle lands before the tree's ledger closes."""
    tree = f"tree-{uuid.uuid4().hex}"
    booked = trio.Event()
    async with open_postgres_ledger(postgres_dsn, tree, cap=1.0) as observer:
        with trio.CancelScope() as worker:

            async def job() -> None:
                async with (
                    ledgers.use(tree) as pg,
                    open_shared_ledger(pg, name="job") as ledger,
                ):
                    await ledger.prepare_request("main", max_tokens=1_000, **TERMS)  # type: ignore[arg-type]
                    reservation = ledger.try_reserve_request("main", max_tokens=1_000, **TERMS)  # type: ignore[arg-type]
                    assert reservation is not None
                    booked.set()
                    try:
                        await trio.sleep_forever()  # the response streaming
                    finally:
                        with trio.CancelScope(shield=True):
                            await trio.sleep(0.3)  # the job's own cleanup takes a moment
                        ledger.settle_and_report(reservation, 0.004)  # what the cut one used

            async with open_tree_ledgers(postgres_dsn, 5.0) as ledgers, trio.open_nursery() as n:
                n.start_soon(job)
                await booked.wait()
                worker.cancel()
        stats = await observer.statistics()
    assert (stats.total, stats.reserved) == (0.004, 0)
