"""``agents worker``: a process that runs the agents of many trees, taking jobs from Redis.

Each job (:class:`~agents.scaleout.queue.SpawnRequest`) is one agent run as a ``query()`` whose
transcript lives in PostgreSQL under the job's session id and whose spending is booked on the
tree's shared ledger:

* **Budget.** Before its first request the job books its allowance (``budget_usd``) on the tree's
  :class:`~agents.scaleout.PostgresLedger` and runs with a hard cap of exactly that allowance, so
  the tree's total stays within its cap however many hosts run its agents. The job settles the
  allowance with what it spent; a trip of the tree on any host cancels it (status ``stopped``).
* **A dead worker's job is resumed, never restarted.** A job whose transcript already exists was
  begun by a worker that died: it is resumed from that transcript with a short instruction to
  continue, so nothing is lost but the response that was in flight. The store's fencing makes
  sure a worker presumed dead cannot write the transcript any more.
* **Shutdown.** Cancelling the worker cancels its jobs without acknowledging them; they stay
  pending and another worker reclaims them after the lease.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import logging
import os
import socket
import sys
from collections.abc import Callable
from typing import Literal

import attrs
import trio

from agents.messages import ResultMessage
from agents.scaleout.ledger import PostgresLedger, SharedReservation, open_postgres_ledger
from agents.scaleout.queue import Job, SpawnQueue, SpawnRequest, SpawnResult, open_spawn_queue
from agents.sessions.postgres import PostgresSessionStore
from agents.sessions.store import SessionKey, project_key_for

__all__ = ["RESUME_PROMPT", "Worker", "load_backend", "run_worker"]

Status = Literal["completed", "failed", "stopped"]

log = logging.getLogger("agents.scaleout")

#: The prompt a reclaimed job is resumed with (its history already holds the original prompt).
RESUME_PROMPT = (
    "Your previous worker stopped before you finished. Continue the task from where the "
    "conversation ends; do not start over."
)


def load_backend(spec: str, request: SpawnRequest) -> object:
    """Build the backend named ``package.module:function`` (called with the request)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"backend must be 'package.module:function', got {spec!r}")
    factory: Callable[[SpawnRequest], object] = getattr(importlib.import_module(module_name), attr)
    return factory(request)


@attrs.define(eq=False)
class Worker:
    """One worker process's job runner; see the module docstring."""

    queue: SpawnQueue
    store: PostgresSessionStore
    dsn: str
    name: str
    lease_s: float = 10.0

    async def serve(self, job: Job) -> None:
        """Run ``job`` and publish its result; while it runs, keep it from looking abandoned."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._keep_alive, job)
            result = await self.run(job)
            nursery.cancel_scope.cancel()
        await self.queue.finish(job, result)

    async def _keep_alive(self, job: Job) -> None:
        while True:
            await trio.sleep(self.lease_s / 3)
            await self.queue.touch(self.name, job)

    async def run(self, job: Job) -> SpawnResult:
        request = job.request
        async with open_postgres_ledger(self.dsn, request.tree_id, lease_s=self.lease_s) as ledger:
            allowance: SharedReservation | None = None
            if request.budget_usd is not None:
                agent = f"{request.tree_id}/{request.agent_type}-{request.job_id}"
                allowance = await ledger.try_reserve(agent, request.budget_usd)
                if allowance is None:
                    return self._result(request, "stopped", errors=["Budget limit reached"])
            try:
                return await self._query(request, ledger, allowance)
            except BaseException:
                if allowance is not None:  # spent at most the allowance, and perhaps all of it
                    with trio.CancelScope(shield=True):
                        await ledger.settle(allowance, allowance.amount)
                raise

    async def _query(
        self, request: SpawnRequest, ledger: PostgresLedger, allowance: SharedReservation | None
    ) -> SpawnResult:
        from agents import AgentOptions, ResultError, query

        cwd = request.cwd or os.getcwd()
        key = SessionKey(project_key_for(cwd), request.session_id)
        resumed = await self.store.load(key) is not None
        if resumed:
            await self.store.claim(key)  # fence off the worker presumed dead
        options = AgentOptions(
            cwd=cwd,
            model=request.model,
            system_prompt=request.system_prompt,
            max_turns=request.max_turns,
            tools=request.tools,
            allowed_tools=request.allowed_tools,
            disallowed_tools=request.disallowed_tools,
            permission_mode=request.permission_mode,
            max_budget_usd=None if allowance is None else allowance.amount,
            budget_mode="reserve",
            session_store=self.store,
            resume=request.session_id if resumed else None,
            session_id=None if resumed else request.session_id,
            backend=None if request.backend is None else load_backend(request.backend, request),
        )
        final: ResultMessage | None = None
        with trio.CancelScope() as scope:
            ledger.add_trip_callback(scope.cancel)
            try:
                async for message in query(
                    prompt=RESUME_PROMPT if resumed else request.prompt, options=options
                ):
                    if isinstance(message, ResultMessage):
                        final = message
            except ResultError:
                pass  # the error result was yielded first and is reported below
            finally:
                ledger.remove_trip_callback(scope.cancel)
        spent = final.total_cost_usd if final is not None and final.total_cost_usd else 0.0
        if scope.cancelled_caught or final is None:
            spent = allowance.amount if allowance is not None else spent
        if allowance is not None:
            await ledger.settle(allowance, min(spent, allowance.amount))
        elif spent:
            await ledger.charge(f"{request.tree_id}/{request.agent_type}-{request.job_id}", spent)
        if scope.cancelled_caught or final is None:
            return self._result(
                request, "stopped", errors=["Budget limit reached"], resumed=resumed
            )
        return self._result(
            request,
            "completed" if not final.is_error else "failed",
            result=final.result,
            errors=list(final.errors or []),
            total_cost_usd=spent,
            num_turns=final.num_turns,
            resumed=resumed,
        )

    def _result(
        self,
        request: SpawnRequest,
        status: Status,
        *,
        result: str | None = None,
        errors: list[str] | None = None,
        total_cost_usd: float = 0.0,
        num_turns: int = 0,
        resumed: bool = False,
    ) -> SpawnResult:
        return SpawnResult(
            job_id=request.job_id,
            status=status,
            result=result,
            errors=errors or [],
            total_cost_usd=total_cost_usd,
            num_turns=num_turns,
            worker=self.name,
            resumed=resumed,
        )


async def run_worker(
    redis_url: str,
    dsn: str,
    *,
    name: str | None = None,
    concurrency: int = 4,
    lease_s: float = 10.0,
    prefix: str = "trio-agents",
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Take jobs until cancelled: at most ``concurrency`` at once, reclaiming abandoned ones."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    if not lease_s > 0:
        raise ValueError(f"lease_s must be > 0, got {lease_s!r}")
    name = name or f"{socket.gethostname()}-{os.getpid()}"
    async with (
        open_spawn_queue(redis_url, prefix=prefix) as queue,
        PostgresSessionStore(dsn, max_connections=concurrency + 1) as store,
        trio.open_nursery() as nursery,
    ):
        worker = Worker(queue, store, dsn, name, lease_s)
        slots = trio.Semaphore(concurrency)
        next_reclaim = trio.current_time()
        task_status.started()
        log.info("worker %s serving %s with %d slots", name, redis_url, concurrency)
        while True:
            await slots.acquire()
            job: Job | None = None
            if trio.current_time() >= next_reclaim:
                claimed = await queue.reclaim(name, min_idle_s=lease_s)
                next_reclaim = trio.current_time() + lease_s / 2
                for extra in claimed[1:]:  # more than one: serve the rest when slots free up
                    await slots.acquire()
                    nursery.start_soon(_serve_in_slot, worker, extra, slots)
                job = claimed[0] if claimed else None
            if job is None:
                job = await queue.next_job(name, block_s=min(1.0, lease_s / 2))
            if job is None:
                slots.release()
                continue
            nursery.start_soon(_serve_in_slot, worker, job, slots)


async def _serve_in_slot(worker: Worker, job: Job, slots: trio.Semaphore) -> None:
    try:
        log.info(
            "worker %s: job %s%s",
            worker.name,
            job.request.job_id,
            " (reclaimed)" if job.reclaimed else "",
        )
        await worker.serve(job)
    finally:
        slots.release()


def main(argv: list[str] | None = None) -> int:
    """``python -m agents.scaleout.worker --redis URL --postgres DSN``: ``agents worker``."""
    from agents.cli import main as cli_main

    return cli_main(["worker", *(sys.argv[1:] if argv is None else argv)])


def run_from_args(args: argparse.Namespace) -> int:
    """Run the worker that ``args`` (from :func:`add_arguments`) describe until interrupted."""
    work = functools.partial(
        run_worker,
        args.redis,
        args.postgres,
        name=args.name,
        concurrency=args.concurrency,
        lease_s=args.lease,
        prefix=args.prefix,
    )
    try:
        trio.run(work)
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
