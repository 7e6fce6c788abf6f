"""A worker process for the cross-process ledger tests: spends on a shared tree until refused.

``python ledger_worker.py DSN TREE SEED MODE``; MODE ``spend`` reserves a drawn worst case, settles
a drawn actual cost at or below it, and stops after 20 refusals in a row, printing one JSON line
with what it settled; MODE ``hang`` reserves once, says ``reserved`` and waits to be killed.
"""

from __future__ import annotations

import json
import random
import sys

import trio

from agents.scaleout import open_postgres_ledger


async def main(dsn: str, tree: str, seed: int, mode: str) -> None:
    rng = random.Random(seed)
    async with open_postgres_ledger(dsn, tree, lease_s=1.0) as ledger:
        if mode == "hang":
            await ledger.try_reserve(f"w{seed}", 0.5)
            print("reserved", flush=True)
            await trio.sleep_forever()
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


if __name__ == "__main__":
    trio.run(main, sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
