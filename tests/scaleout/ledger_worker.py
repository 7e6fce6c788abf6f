"""A worker process for the cross-process ledger tests: spends on a shared tree until refused.

``python ledger_worker.py DSN TREE SEED MODE``; MODE ``spend`` reserves a drawn worst case, settles
a drawn actual cost at or below it, and stops after 20 refusals in a row, printing one JSON line
with what it settled; MODE ``shared`` does the same through a ``SharedLedger`` as the agent loop
does (prepare, a fitted booking, a settle at or below it); MODE ``hang`` reserves once, says
``reserved`` and waits to be killed.
"""

from __future__ import annotations

import json
import random
import sys

import trio

from agents.scaleout import PostgresLedger, open_postgres_ledger, open_shared_ledger


async def main(dsn: str, tree: str, seed: int, mode: str) -> None:
    rng = random.Random(seed)
    async with open_postgres_ledger(dsn, tree, lease_s=1.0) as ledger:
        if mode == "hang":
            await ledger.try_reserve(f"w{seed}", 0.5)
            print("reserved", flush=True)
            await trio.sleep_forever()
        if mode == "shared":
            print(json.dumps({"settled": await shared(ledger, rng, seed)}), flush=True)
            return
        settled = 0.0
        refusals = 0
        while refusals < 20:
            worst = rng.choice([0.001, 0.01, 0.05, rng.uniform(0, 0.1)])
            reservation = await ledger.try_reserve(f"w{seed}/a{rng.randrange(4)}", worst)
            if reservation is None:
                refusals += 1
                continue
            refusals = 0
            actual = rng.uniform(0, reservation.amount)
            await ledger.settle(reservation, actual)
            settled += actual
        print(json.dumps({"settled": settled}), flush=True)


async def shared(tree: PostgresLedger, rng: random.Random, seed: int) -> float:
    """Fitted requests of several agents at once, as loops on one host make them."""
    settled = 0.0
    refusals = 0
    async with open_shared_ledger(tree, name=f"w{seed}") as ledger:

        async def agent(name: str) -> None:
            nonlocal settled, refusals
            while refusals < 20:
                terms = {
                    "input_cost_usd": rng.uniform(0, 0.01),
                    "output_usd_per_mtok": rng.choice([1.0, 15.0, 75.0]),
                    "max_tokens": rng.choice([256, 1024, 4096]),
                    "min_output_tokens": rng.choice([1, 64, 256]),
                }
                await ledger.prepare_request(name, **terms)  # type: ignore[arg-type]
                booked = ledger.try_reserve_request(name, **terms)  # type: ignore[arg-type]
                if booked is None:
                    refusals += 1
                    await trio.lowlevel.checkpoint()
                    continue
                refusals = 0
                await trio.sleep(rng.uniform(0, 0.002))  # the response streaming
                actual = rng.uniform(0, booked.amount)
                ledger.settle_and_report(booked, actual)
                settled += actual

        async with trio.open_nursery() as nursery:
            for i in range(3):
                nursery.start_soon(agent, f"main/a-{i}")
    return settled


if __name__ == "__main__":
    trio.run(main, sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
