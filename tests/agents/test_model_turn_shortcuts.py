"""The model turn's shortcuts answer as the full forms they stand for: a response's text with
one block, the price of a response, whether an agent is the main one, and the check for
compaction before each request, and the scripted model's numbered ids."""

from __future__ import annotations

import itertools
import re
import types
from collections.abc import Mapping
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents import AgentOptions
from agents._loop.agent import AgentLoop
from agents._loop.compaction import ContextTracker, context_tokens, context_window, over_threshold
from agents._loop.history import History
from agents._loop.response import Response
from agents._loop.session import Session
from agents.backends.pricing import ModelInfo, PriceTable, default_price_table
from agents.messages import ContentBlock, TextBlock, ThinkingBlock, ToolUseBlock
from agents.testing import scripted
from agents.testing.scripted import tool_use
from agents.tools.base import ToolRegistry
from runtime import Ledger

PROPERTY = settings(max_examples=300, deadline=None)

words = st.text(max_size=8)
blocks = st.one_of(
    words.map(lambda t: TextBlock(text=t)),
    words.map(lambda t: ThinkingBlock(thinking=t, signature="s")),
    words.map(lambda t: ToolUseBlock(id="toolu_1", name=t, input={})),
)


@PROPERTY
@given(content=st.lists(blocks, max_size=4))
def test_a_responses_text_is_its_text_blocks_joined_whatever_its_blocks(
    content: list[ContentBlock],
) -> None:
    """``Response.text`` (one block read directly) is the text blocks' text joined by
    newlines, for any number and kind of blocks."""
    joined = "\n".join(b.text for b in content if isinstance(b, TextBlock))
    assert Response(blocks=list(content)).text == joined


# -- pricing ---------------------------------------------------------------------------------------


def reference_cost(table: PriceTable, model: str, usage: Mapping[str, Any]) -> float | None:
    """The price of a response as the pricing rules state it, without any shortcut."""
    info = table.models.get(model) or table.models.get(re.sub(r"-\d{8}$", "", model))
    if info is None:
        return None
    inp = usage.get("input_tokens") or 0
    out = usage.get("output_tokens") or 0
    read = usage.get("cache_read_input_tokens") or 0
    write = usage.get("cache_creation_input_tokens") or 0
    split = usage.get("cache_creation")
    w1h = (split or {}).get("ephemeral_1h_input_tokens") or 0
    w5m = write - w1h if split else write
    price = info
    if (
        info.long_context is not None
        and info.long_context_threshold is not None
        and inp + read + write > info.long_context_threshold
    ):
        price = info.long_context
    micro = (
        inp * price.input
        + out * price.output
        + w5m * price.cache_write_5m
        + w1h * price.cache_write_1h
        + read * price.cache_read
    )
    searches = (usage.get("server_tool_use") or {}).get("web_search_requests") or 0
    return micro / 1_000_000 + searches * table.web_search_per_request


counts = st.one_of(st.none(), st.integers(0, 300_000))
usages = st.fixed_dictionaries(
    {},
    optional={
        "input_tokens": counts,
        "output_tokens": counts,
        "cache_read_input_tokens": counts,
        "cache_creation_input_tokens": counts,
        "cache_creation": st.one_of(
            st.none(),
            st.just({}),
            st.fixed_dictionaries({}, optional={"ephemeral_1h_input_tokens": counts}),
        ),
        "server_tool_use": st.one_of(
            st.none(),
            st.just({}),
            st.fixed_dictionaries({}, optional={"web_search_requests": counts}),
        ),
    },
)
TIERED = ModelInfo.from_dict(
    "tiered",
    {
        "input": 3,
        "output": 15,
        "cache_write_5m": 3.75,
        "cache_write_1h": 6,
        "cache_read": 0.3,
        "context_window": 1_000_000,
        "long_context": {"threshold": 200_000, "input": 6, "output": 22.5, "cache_read": 0.6},
    },
)
TABLE = default_price_table().with_overrides({"tiered": TIERED})


@PROPERTY
@given(
    model=st.sampled_from(
        ["claude-opus-5-5", "claude-sonnet-4-5-20250929", "tiered", "tiered-20250101", "unknown"]
    ),
    usage=usages,
)
def test_a_responses_price_is_the_pricing_rules_for_any_usage(
    model: str, usage: dict[str, Any]
) -> None:
    """``PriceTable.cost`` (the model looked up at once, the usage read once) prices any usage
    as the rules do: input, output, cache writes split 5 min / 1 h, cache reads, the long
    context tier, web searches; an unknown model has no price."""
    expected = reference_cost(TABLE, model, usage)
    cost = TABLE.cost(model, usage)
    if expected is None:
        assert cost is None
    else:
        assert cost == expected


# -- the loop --------------------------------------------------------------------------------------


def _session() -> Session:
    supervisor = types.SimpleNamespace(ledger=Ledger())
    fields = {"options": AgentOptions(), "supervisor": supervisor, "ledger": supervisor.ledger}
    return cast(Session, types.SimpleNamespace(**fields))


ids = st.one_of(
    st.sampled_from(["main", "", "main/worker-1", "mai", "main ", "Main"]), st.text(max_size=12)
)


@PROPERTY
@given(first=ids, renamed=st.lists(ids, max_size=3))
def test_an_agent_is_the_main_one_exactly_while_its_id_is_main(
    first: str, renamed: list[str]
) -> None:
    """``is_main`` (a field kept with ``agent_id``) is ``agent_id == "main"`` from the start
    and after every rename (a subagent takes its actor's address)."""
    loop = AgentLoop(
        session=_session(), agent_id=first, agent_type="t", model="m", tools=ToolRegistry()
    )
    assert loop.is_main is (first == "main")
    for agent_id in renamed:
        loop.take_name(agent_id, None)
        assert loop.agent_id == agent_id
        assert loop.is_main is (agent_id == "main")


# -- compaction's check ----------------------------------------------------------------------------


@PROPERTY
@given(
    texts=st.lists(words, max_size=5),
    last_input=st.one_of(st.none(), st.integers(0, 3_000)),
    last_output=st.integers(0, 500),
    mark=st.integers(0, 6),
    threshold=st.sampled_from([0.00001, 0.0001, 0.001, 0.8]),
    model=st.sampled_from(["claude-opus-5-5", "tiered", "tiered-20250101", "unknown"]),
)
def test_the_check_before_a_request_is_the_context_size_against_the_threshold(
    texts: list[str],
    last_input: int | None,
    last_output: int,
    mark: int,
    threshold: float,
    model: str,
) -> None:
    """``over_threshold`` (its measures inlined, the tail measured only when there is one) is
    ``context_tokens`` when that exceeds ``compact_threshold`` of ``context_window``, else
    None: before the first response (an estimate of the whole request) and after one."""
    messages = [{"role": "user", "content": t} for t in texts]
    context = ContextTracker(last_input=last_input, last_output=last_output, mark=mark)
    session = types.SimpleNamespace(
        prices=TABLE, options=types.SimpleNamespace(compact_threshold=threshold)
    )
    loop = cast(
        AgentLoop,
        types.SimpleNamespace(
            context=context,
            history=History(messages),
            system=[{"type": "text", "text": "be brief"}],
            tools=ToolRegistry(),
            session=session,
            model=model,
        ),
    )
    tokens = context_tokens(loop)
    limit = threshold * context_window(cast(Session, session), model)
    assert over_threshold(loop) == (tokens if tokens > limit else None)


# -- the scripted model ----------------------------------------------------------------------------


@PROPERTY
@given(
    start=st.one_of(st.integers(0, 2_000), st.integers(999_990, 1_000_010), st.integers(0, 10**12))
)
def test_the_scripted_models_ids_are_numbered_as_a_six_digit_format_would(start: int) -> None:
    """Message and tool-call ids of the scripted model (``zfill``) read as ``f"{n:06d}"``:
    zero-padded to six digits, longer numbers whole."""
    ids = itertools.count(start)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scripted, "_ids", ids)
        assert tool_use("Read").id == f"toolu_{start:06d}"
        assert scripted._numbered("msg_") == f"msg_{start + 1:06d}"
