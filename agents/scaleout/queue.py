"""Spawn requests and their results on Redis Streams (the ``redis`` extra: coredis, Trio-native).

One stream of jobs, read through one consumer group by every worker, so each job is delivered to
one worker at a time; a worker acknowledges a job only after it has published the result. A job
whose worker died stays pending in the group: once it has been idle for longer than the lease,
:meth:`SpawnQueue.reclaim` hands it to a live worker (``XAUTOCLAIM``), which resumes it from its
transcript. A worker running a long job keeps it from looking idle by touching it
(:meth:`SpawnQueue.touch`, ``XCLAIM ... JUSTID``) every third of a lease.

Results travel on one short stream per job (``<prefix>:result:<job id>``), which the spawner
reads with a blocking ``XREAD``; it expires a day after it is written.

::

    async with open_spawn_queue("redis://127.0.0.1:6379/0") as queue:
        await queue.submit(SpawnRequest(job_id=..., tree_id=..., session_id=..., prompt="..."))
        result = await queue.result(job_id)
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Literal

import attrs
import msgspec

if TYPE_CHECKING:
    from coredis import Redis
    from coredis.response.types import StreamEntry

__all__ = ["Job", "SpawnQueue", "SpawnRequest", "SpawnResult", "open_spawn_queue"]

_GROUP = "workers"
_RESULT_TTL_S = 86_400


class SpawnRequest(msgspec.Struct, frozen=True, kw_only=True):
    """What a worker needs to run one agent of a tree: everything is data, nothing is code.

    ``backend`` names a factory (``"package.module:function"``) returning the model backend, for
    tests and custom backends; unset means the default Anthropic backend. ``budget_usd`` caps what
    the job itself may spend; every request is booked on the tree's ledger either way.
    """

    job_id: str
    tree_id: str
    session_id: str
    prompt: str
    agent_type: str = "general-purpose"
    cwd: str | None = None
    system_prompt: str | None = None
    model: str | None = None
    max_turns: int | None = None
    tools: list[str] | None = None
    allowed_tools: list[str] = []
    disallowed_tools: list[str] = []
    permission_mode: str | None = None
    budget_usd: float | None = None
    backend: str | None = None


class SpawnResult(msgspec.Struct, frozen=True, kw_only=True):
    """How a job ended, as its spawner sees it (the agent's final text on success)."""

    job_id: str
    status: Literal["completed", "failed", "stopped"]
    result: str | None = None
    errors: list[str] = []
    total_cost_usd: float = 0.0
    num_turns: int = 0
    worker: str = ""
    resumed: bool = False


@attrs.frozen
class Job:
    """A request delivered to one worker; ``entry_id`` acknowledges it."""

    entry_id: str
    request: SpawnRequest
    reclaimed: bool = False


_encode = msgspec.json.Encoder().encode
_decode_request = msgspec.json.Decoder(SpawnRequest).decode
_decode_result = msgspec.json.Decoder(SpawnResult).decode


@attrs.define(eq=False)
class SpawnQueue:
    """The jobs stream of one deployment; open it with :func:`open_spawn_queue`."""

    _redis: Redis[bytes]
    prefix: str

    @property
    def jobs_stream(self) -> str:
        return f"{self.prefix}:jobs"

    def _result_stream(self, job_id: str) -> str:
        return f"{self.prefix}:result:{job_id}"

    async def ensure_group(self) -> None:
        """Create the stream and its consumer group if they do not exist yet."""
        from coredis.exceptions import StreamDuplicateConsumerGroupError

        with contextlib.suppress(StreamDuplicateConsumerGroupError):
            await self._redis.xgroup_create(self.jobs_stream, _GROUP, identifier="0", mkstream=True)

    async def submit(self, request: SpawnRequest) -> str:
        """Queue ``request`` for some worker; returns the stream entry id."""
        entry = await self._redis.xadd(self.jobs_stream, {"job": _encode(request)})
        if entry is None:  # only with NOMKSTREAM, which is not used
            raise RuntimeError(f"redis refused the job {request.job_id}")
        return entry.decode()

    async def next_job(self, consumer: str, *, block_s: float = 1.0) -> Job | None:
        """The next new job for ``consumer``, waiting up to ``block_s``; None if none came."""
        reply = await self._redis.xreadgroup(
            _GROUP,
            consumer,
            streams={self.jobs_stream: ">"},
            count=1,
            block=max(1, int(block_s * 1000)),
        )
        for entries in (reply or {}).values():
            for entry in entries:
                return self._job(entry, reclaimed=False)
        return None

    async def reclaim(self, consumer: str, *, min_idle_s: float) -> list[Job]:
        """Take over jobs pending longer than ``min_idle_s`` (their worker is gone)."""
        _, entries, *_ = await self._redis.xautoclaim(
            self.jobs_stream,
            _GROUP,
            consumer,
            min_idle_time=int(min_idle_s * 1000),
            start="0-0",
            count=10,
        )
        return [self._job(entry, reclaimed=True) for entry in entries]

    async def touch(self, consumer: str, job: Job) -> None:
        """Reset the job's idle time so that no other worker reclaims it while it runs."""
        await self._redis.xclaim(
            self.jobs_stream,
            _GROUP,
            consumer,
            min_idle_time=0,
            identifiers=[job.entry_id],
            justid=True,
        )

    async def finish(self, job: Job, result: SpawnResult) -> None:
        """Publish ``result`` to the spawner, then acknowledge the job (in that order)."""
        stream = self._result_stream(job.request.job_id)
        await self._redis.xadd(stream, {"result": _encode(result)})
        await self._redis.expire(stream, _RESULT_TTL_S)
        await self._redis.xack(self.jobs_stream, _GROUP, [job.entry_id])

    async def result(self, job_id: str, *, poll_s: float = 1.0) -> SpawnResult:
        """Wait for the result of ``job_id`` (cancel the caller's scope to give up)."""
        stream = self._result_stream(job_id)
        while True:
            reply = await self._redis.xread(
                {stream: "0-0"}, count=1, block=max(1, int(poll_s * 1000))
            )
            for entries in (reply or {}).values():
                for entry in entries:
                    return _decode_result(_field(entry, "result"))

    @staticmethod
    def _job(entry: StreamEntry, *, reclaimed: bool) -> Job:
        identifier = entry.identifier
        entry_id = identifier.decode() if isinstance(identifier, bytes) else str(identifier)
        return Job(entry_id, _decode_request(_field(entry, "job")), reclaimed)


def _field(entry: StreamEntry, name: str) -> bytes:
    values = entry.field_values
    raw = values.get(name.encode(), values.get(name))
    if raw is None:
        raise ValueError(f"stream entry has no field {name!r}: {dict(values)!r}")
    return raw if isinstance(raw, bytes) else str(raw).encode()


@contextlib.asynccontextmanager
async def open_spawn_queue(url: str, *, prefix: str = "trio-agents") -> AsyncIterator[SpawnQueue]:
    """Connect to Redis at ``url``; the connection closes when the block exits."""
    try:
        import coredis
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ImportError(
            "the spawn queue needs coredis: pip install 'trio-agents[redis]'"
        ) from exc
    client = coredis.Redis.from_url(url, decode_responses=False)
    async with client:
        queue = SpawnQueue(client, prefix)
        await queue.ensure_group()
        yield queue
