"""``agents worker``: a process that runs the agents of many trees, taking jobs from Redis.

Each job (:class:`~agents.scaleout.queue.SpawnRequest`) is one agent run as a ``query()`` whose
transcript lives in PostgreSQL under the job's session id and whose spending is booked on the
tree's shared ledger:

* **Budget.** The job's query spends on a :class:`~agents.scaleout.SharedLedger` of the tree
  (``AgentOptions(ledger=...)``, hard cap): each of its requests books its worst case on the
  tree's row in PostgreSQL before it is sent, so the tree's total stays within its cap however
  many hosts run its agents. ``budget_usd`` further limits what the job itself may spend. A trip
  of the tree on any host cancels the job (status ``stopped``), its cut response charged.
* **One ledger per tree per worker.** The worker keeps each tree's
  :class:`~agents.scaleout.PostgresLedger` (its pool, heartbeat and trip watcher) open while
  jobs of the tree run, and for ``linger_s`` after the last one, instead of opening it per job.
* **A dead worker's job is resumed, never restarted.** A job whose transcript already exists was
  begun by a worker that died: it is resumed from that transcript with a short instruction to
  continue, so nothing is lost but the response that was in flight. The store's fencing makes
  sure a worker presumed dead cannot write the transcript any more.
* **Shutdown.** Cancelling the worker cancels its jobs without acknowledging them; they stay
  pending and another worker reclaims them after the lease.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import logging
import os
import socket
import sys
from collections.abc import AsyncIterator, Callable
from typing import Literal

import attrs
import trio

from agents.messages import ResultMessage
from agents.scaleout.ledger import PostgresLedger, open_postgres_ledger
from agents.scaleout.queue import Job, SpawnQueue, SpawnRequest, SpawnResult, open_spawn_queue
from agents.scaleout.shared import SharedLedger, open_shared_ledger
from agents.sessions.postgres import PostgresSessionStore
from agents.sessions.store import SessionKey, project_key_for

__all__ = [
    "RESUME_PROMPT",
    "TreeLedgers",
    "Worker",
    "load_backend",
    "open_tree_ledgers",
    "run_worker",
]

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
class _Tree:
    """One tree's open ledger in a worker, and how many jobs use it."""

    ready: trio.Event = attrs.field(factory=trio.Event)
    ledger: PostgresLedger | None = None
    users: int = 0
    error: BaseException | None = None
    changed: trio.Event = attrs.field(factory=trio.Event)
    #: shields the ledger from outside cancellation: only its owner closes it, once unused
    scope: trio.CancelScope = attrs.field(factory=lambda: trio.CancelScope(shield=True))


@attrs.define(eq=False)
class TreeLedgers:
    """The trees' ledgers a worker holds open, each for as long as jobs of it run (plus
    ``linger_s``): opening one costs connections and a LISTEN, so jobs share it. Open it with
    :func:`open_tree_ledgers`; a ledger outlives every job that uses it, also under
    cancellation, so a job's last settles reach PostgreSQL before the ledger closes."""

    dsn: str
    lease_s: float
    nursery: trio.Nursery
    linger_s: float = 30.0
    _trees: dict[str, _Tree] = attrs.field(factory=dict, init=False)
    _closing: bool = attrs.field(default=False, init=False)

    @contextlib.asynccontextmanager
    async def use(self, tree_id: str) -> AsyncIterator[PostgresLedger]:
        """Tree ``tree_id``'s ledger for one job (opened if no job has it open)."""
        if self._closing:
            raise RuntimeError("the worker's tree ledgers are closing")
        tree = self._trees.get(tree_id)
        if tree is None:
            tree = self._trees[tree_id] = _Tree()
            self.nursery.start_soon(self._hold, tree_id, tree)
        tree.users += 1
        tree.changed.set()  # a lingering ledger stays open for this job
        try:
            await tree.ready.wait()
            if tree.ledger is None:
                raise RuntimeError(f"the ledger of tree {tree_id!r} could not be opened") from (
                    tree.error
                )
            yield tree.ledger
        finally:
            tree.users -= 1
            tree.changed.set()

    async def _hold(self, tree_id: str, tree: _Tree) -> None:
        try:
            with tree.scope:
                async with open_postgres_ledger(self.dsn, tree_id, lease_s=self.lease_s) as led:
                    tree.ledger = led
                    tree.ready.set()
                    await self._until_unused(tree)
                    self._forget(tree_id, tree)  # closing: a job from now on opens a new one
        except Exception as exc:  # a job of the tree reports it; the worker goes on
            log.exception("worker: the ledger of tree %s failed", tree_id)
            tree.error = exc
        finally:
            self._forget(tree_id, tree)
            tree.ledger = None
            tree.ready.set()

    async def _until_unused(self, tree: _Tree) -> None:
        while True:
            tree.changed = trio.Event()
            if tree.users == 0:
                with trio.move_on_after(0 if self._closing else self.linger_s):
                    await tree.changed.wait()
                if tree.users == 0:
                    return
            else:
                await tree.changed.wait()

    def _forget(self, tree_id: str, tree: _Tree) -> None:
        if self._trees.get(tree_id) is tree:
            del self._trees[tree_id]

    def _close(self) -> None:
        """Close each ledger as soon as no job uses it (at once for those unused now)."""
        self._closing = True
        for tree in self._trees.values():
            tree.changed.set()


@contextlib.asynccontextmanager
async def open_tree_ledgers(
    dsn: str, lease_s: float, *, linger_s: float = 30.0
) -> AsyncIterator[TreeLedgers]:
    """A worker's :class:`TreeLedgers`; on exit, each ledger closes once its jobs are done."""
    async with trio.open_nursery() as nursery:
        ledgers = TreeLedgers(dsn, lease_s, nursery, linger_s)
        try:
            yield ledgers
        finally:
            ledgers._close()


@attrs.define(eq=False)
class Worker:
    """One worker process's job runner; see the module docstring."""

    queue: SpawnQueue
    store: PostgresSessionStore
    ledgers: TreeLedgers
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
        name = f"{request.agent_type}-{request.job_id}"
        async with (
            self.ledgers.use(request.tree_id) as tree,
            open_shared_ledger(tree, name=name, limit=request.budget_usd) as ledger,
        ):
            if ledger.cap is not None and ledger.exhausted:
                return self._result(request, "stopped", errors=["Budget limit reached"])
            return await self._query(request, ledger)

    async def _query(self, request: SpawnRequest, ledger: SharedLedger) -> SpawnResult:
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
            ledger=ledger,
            budget_mode="reserve",
            session_store=self.store,
            resume=request.session_id if resumed else None,
            session_id=None if resumed else request.session_id,
            backend=None if request.backend is None else load_backend(request.backend, request),
        )
        final: ResultMessage | None = None
        with trio.CancelScope() as scope:
            ledger.tree.add_trip_callback(scope.cancel)  # the tree's trip, from any host
            try:
                async for message in query(
                    prompt=RESUME_PROMPT if resumed else request.prompt, options=options
                ):
                    if isinstance(message, ResultMessage):
                        final = message
            except ResultError:
                pass  # the error result was yielded first and is reported below
            finally:
                ledger.tree.remove_trip_callback(scope.cancel)
        spent = ledger.total  # every response of the job, a cut one included
        if scope.cancelled_caught or final is None or final.subtype == "error_max_budget_usd":
            return self._result(
                request,
                "stopped",
                errors=["Budget limit reached"],
                total_cost_usd=spent,
                resumed=resumed,
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
        open_tree_ledgers(dsn, lease_s) as ledgers,  # outlives the jobs (their last settles)
        trio.open_nursery() as nursery,
    ):
        worker = Worker(queue, store, ledgers, name, lease_s)
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
