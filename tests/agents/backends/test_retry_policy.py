"""The retry delay: backoff capped by retry_max_delay, a server's retry-after honoured above the cap
up to a 60 s ceiling."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
import trio.testing

from agents import AgentOptions, SystemMessage
from agents.backends import AnthropicBackend
from agents.backends.base import RETRY_AFTER_CEILING, retry_delay
from agents.testing import FakeAnthropicServer, Fault, ScriptedBackend, Step, text

from ..helpers import collect, result_of


def test_backoff_doubles_up_to_the_cap() -> None:
    """Without retry-after the delay is base·2^(n−1), capped by retry_max_delay."""
    assert [retry_delay(n, 0.5, 3.0, None, 0.0) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 3.0]


def test_retry_after_above_the_cap_is_honoured() -> None:
    """retry-after: 3 with retry_max_delay=1 waits 3 s, whatever the jitter."""
    assert retry_delay(1, 0.5, 1.0, 3.0, 0.0) == 3.0
    assert retry_delay(1, 0.5, 1.0, 3.0, 0.999) == 3.0


def test_retry_after_is_cut_to_the_ceiling() -> None:
    """An hour of retry-after waits the documented 60 s ceiling."""
    assert RETRY_AFTER_CEILING == 60.0
    assert retry_delay(1, 0.5, 1.0, 3600.0, 0.0) == RETRY_AFTER_CEILING


def test_a_short_retry_after_does_not_shorten_the_backoff() -> None:
    """retry-after is a floor: the backoff still applies when it is longer."""
    assert retry_delay(3, 1.0, 32.0, 0.5, 0.0) == 4.0


def test_attempt_numbers_start_at_one() -> None:
    with pytest.raises(ValueError, match=r"^attempt must be >= 1, got 0$"):
        retry_delay(0, 0.5, 1.0, None, 0.0)


def _retries(messages: list[object]) -> list[SystemMessage]:
    return [m for m in messages if isinstance(m, SystemMessage) and m.subtype == "api_retry"]


@pytest.mark.parametrize(("retry_after", "waited"), [(3.0, 3.0), (3600.0, RETRY_AFTER_CEILING)])
async def test_the_loop_waits_retry_after_above_retry_max_delay(
    project: Path, autojump_clock: trio.testing.MockClock, retry_after: float, waited: float
) -> None:
    """The loop sleeps what retry-after asks (up to the ceiling), not retry_max_delay."""
    backend = ScriptedBackend(
        [Step(fault=Fault(status=429, message="slow down", retry_after=retry_after)),
         Step([text("fine")])],
        retry_base_delay=0.1,
        retry_max_delay=1.0,
    )  # fmt: skip
    start = trio.current_time()
    messages, error = await collect("hi", AgentOptions(cwd=str(project), backend=backend))
    elapsed = trio.current_time() - start
    assert error is None and result_of(messages).result == "fine"
    [retry] = _retries(list(messages))
    assert retry.data["delay_s"] == waited
    assert waited <= elapsed < waited + 1


async def test_anthropic_backend_retry_after_header_beats_its_cap(project: Path) -> None:
    """Through the real client: the retry-after header (0.3 s) wins over retry_max_delay=0.01."""
    script = [Step(fault=Fault(status=429, message="slow", retry_after=0.3)), Step([text("ok")])]
    async with (
        FakeAnthropicServer(script) as server,
        AnthropicBackend(
            api_key="test-key",
            base_url=server.base_url,
            retry_base_delay=0.001,
            retry_max_delay=0.01,
        ) as backend,
    ):
        start = trio.current_time()
        messages, error = await collect("hi", AgentOptions(cwd=project, backend=backend, tools=[]))
        elapsed = trio.current_time() - start
    assert error is None and result_of(messages).result == "ok"
    [retry] = _retries(list(messages))
    assert retry.data["delay_s"] == pytest.approx(0.3)
    assert elapsed >= 0.3
