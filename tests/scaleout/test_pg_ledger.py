"""PostgresLedger: the hard cap holds exactly across processes; leases, idempotence, trips."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import trio

from agents.scaleout import open_postgres_ledger

WORKER = Path(__file__).with_name("ledger_worker.py")


def _tree() -> str:
    return f"tree-{uuid.uuid4().hex}"


async def _wait_until(predicate, seconds: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    """Poll a real-time condition (a real server is involved) with a deadline."""
    deadline = time.monotonic() + seconds
    while not await predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        await trio.sleep(0.02)


async def test_reserve_refuses_what_does_not_fit_and_settle_charges_actual(
    postgres_dsn: str,
) -> None:
    """A reservation fits or is refused; settling swaps the booked worst case for the actual."""
    async with open_postgres_ledger(postgres_dsn, _tree(), cap=1.0) as ledger:
        first = await ledger.try_reserve("main", 0.6)
        assert first is not None
        assert await ledger.try_reserve("main/a-1", 0.5) is None
        assert await ledger.settle(first, 0.2) is False
        second = await ledger.try_reserve("main/a-1", 0.5)
        assert second is not None
        stats = await ledger.statistics()
    assert (stats.total, stats.reserved, stats.charges) == (0.2, 0.5, 1)
    assert stats.per_agent == {"main": 0.2}


async def test_settle_is_idempotent_per_reservation(postgres_dsn: str) -> None:
    """Settling (or releasing) the same reservation again changes nothing."""
    async with open_postgres_ledger(postgres_dsn, _tree(), cap=1.0) as ledger:
        reservation = await ledger.try_reserve("main", 0.5)
        assert reservation is not None
        await ledger.settle(reservation, 0.25)
        await ledger.settle(reservation, 0.25)
        await ledger.release(reservation)
        stats = await ledger.statistics()
    assert (stats.total, stats.reserved, stats.charges) == (0.25, 0.0, 1)


async def test_a_reservation_of_another_tree_is_refused(postgres_dsn: str) -> None:
    """A reservation is settled only on the tree that issued it."""
    async with (
        open_postgres_ledger(postgres_dsn, _tree(), cap=1.0) as one,
        open_postgres_ledger(postgres_dsn, _tree(), cap=1.0) as other,
    ):
        reservation = await one.try_reserve("main", 0.5)
        assert reservation is not None
        with pytest.raises(ValueError, match=r"belongs to tree"):
            await other.settle(reservation, 0.1)


async def test_the_trip_reaches_every_ledger_of_the_tree(postgres_dsn: str) -> None:
    """The charge that reaches the cap sets tripped on another process's ledger promptly."""
    tree = _tree()
    seen: list[str] = []
    async with (
        open_postgres_ledger(postgres_dsn, tree, cap=1.0) as here,
        open_postgres_ledger(postgres_dsn, tree) as there,
    ):
        there.add_trip_callback(lambda: seen.append("there"))
        assert await here.charge("main", 0.5) is False
        assert not there.tripped.is_set()
        assert await here.charge("main/a-1", 0.5) is True
        with trio.fail_after(2):
            await there.tripped.wait()
        assert await there.try_reserve("main", 0.0) is None  # no reservation once tripped
    assert seen == ["there"]


async def test_concurrent_reservers_never_exceed_the_cap(postgres_dsn: str) -> None:
    """Many ledgers of one tree racing reserve/settle end at or under the cap."""
    tree = _tree()
    cap = 0.3

    async def spender(i: int) -> None:
        async with open_postgres_ledger(postgres_dsn, tree, cap=cap, max_connections=1) as led:
            for _ in range(30):
                reservation = await led.try_reserve(f"a{i}", 0.02)
                if reservation is not None:
                    await led.settle(reservation, 0.02)

    async with trio.open_nursery() as nursery:
        for i in range(6):
            nursery.start_soon(spender, i)
    async with open_postgres_ledger(postgres_dsn, tree) as ledger:
        stats = await ledger.statistics()
    assert stats.total <= cap
    assert stats.total == pytest.approx(cap)  # everything that fitted was spent
    assert stats.reserved == 0


@pytest.mark.parametrize("mode", ["spend", "shared"])
@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_worker_processes_hold_the_hard_cap_exactly(
    postgres_dsn: str, seed: int, mode: str
) -> None:
    """Four processes spending drawn amounts on one tree — directly, or through shared ledgers
    as agent loops do — total <= cap, nothing left booked."""
    tree = _tree()
    cap = 0.5 + seed / 10
    async with open_postgres_ledger(postgres_dsn, tree, cap=cap):
        pass  # the tree exists with its cap before the workers join it
    procs = [
        await trio.lowlevel.open_process(
            [sys.executable, str(WORKER), postgres_dsn, tree, str(seed * 10 + i), mode],
            stdout=subprocess.PIPE,
        )
        for i in range(4)
    ]
    settled = 0.0
    for proc in procs:
        with trio.fail_after(60):
            await proc.wait()
        assert proc.returncode == 0
        assert proc.stdout is not None
        out = await proc.stdout.receive_some()
        settled += json.loads(out)["settled"]
    async with open_postgres_ledger(postgres_dsn, tree) as ledger:
        stats = await ledger.statistics()
    assert stats.total <= cap
    assert stats.total == pytest.approx(settled)
    assert stats.reserved == 0


async def test_a_killed_workers_worst_case_is_charged_when_its_lease_expires(
    postgres_dsn: str,
) -> None:
    """SIGKILL mid-request: its worst case stays booked for the lease, then is charged in full."""
    tree = _tree()
    async with open_postgres_ledger(postgres_dsn, tree, cap=1.0) as ledger:
        proc = await trio.lowlevel.open_process(
            [sys.executable, str(WORKER), postgres_dsn, tree, "7", "hang"],
            stdout=subprocess.PIPE,
        )
        try:
            assert proc.stdout is not None
            with trio.fail_after(30):
                line = b""
                while not line.endswith(b"\n"):
                    line += await proc.stdout.receive_some()
            assert line.strip() == b"reserved"
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            await proc.wait()
            if proc.stdout is not None:
                await proc.stdout.aclose()
        killed_at = time.monotonic()
        assert await ledger.try_reserve("main", 0.6) is None  # the dead worker's 0.5 is booked

        async def expired() -> bool:
            stats = await ledger.statistics()
            return stats.reserved == 0

        await _wait_until(expired)
        assert time.monotonic() - killed_at >= 0.5  # not before the lease (1 s) has run out
        stats = await ledger.statistics()
        assert (stats.total, stats.per_agent) == (0.5, {"w7": 0.5})  # what it may have spent
        assert await ledger.try_reserve("main", 0.6) is None
        assert await ledger.try_reserve("main", 0.5) is not None


async def test_a_late_settle_after_expiry_corrects_the_charge(postgres_dsn: str) -> None:
    """A slow worker whose lease ran out settles later: the total becomes its actual cost."""
    async with open_postgres_ledger(postgres_dsn, _tree(), cap=1.0, lease_s=0.2) as ledger:
        reservation = await ledger.try_reserve("slow", 0.5)
        assert reservation is not None
        ledger._outstanding.clear()  # the heartbeat no longer renews it, as if the worker froze

        async def expired() -> bool:
            return (await ledger.statistics()).reserved == 0

        await _wait_until(expired)
        assert (await ledger.statistics()).total == 0.5
        await ledger.settle(reservation, 0.1)
        await ledger.settle(reservation, 0.1)  # idempotent here too
        stats = await ledger.statistics()
    assert (stats.total, stats.reserved, stats.per_agent) == (0.1, 0.0, {"slow": 0.1})
