"""The reserve mode's worst case of a request is an upper bound of what the API can bill, and
the incremental estimate of a turn's request is never stale, whatever rewrote the history."""

from __future__ import annotations

import types
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from agents._loop.budget import DOCUMENT_ALLOWANCE, IMAGE_ALLOWANCE, TOOLS_ALLOWANCE
from agents._loop.history import History
from agents._loop.model_call import ModelCall, request_size
from agents._loop.session import Session
from agents.backends.base import ModelRequest
from agents.backends.pricing import ModelInfo, PriceTable

PROPERTY = settings(max_examples=1_000, deadline=None)

texts = st.text(max_size=60)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)
sources = st.one_of(
    st.builds(
        lambda data: {"type": "base64", "media_type": "image/png", "data": data},
        st.text("ABCDEFabcdef0123456789+/", max_size=80),
    ),
    st.builds(lambda url: {"type": "url", "url": "https://x.test/" + url}, texts),
)
text_block = st.builds(lambda t: {"type": "text", "text": t}, texts)
image_block = st.builds(lambda s: {"type": "image", "source": s}, sources)
document_block = st.builds(lambda s: {"type": "document", "source": s}, sources)
tool_use_block = st.builds(
    lambda i, n, args: {"type": "tool_use", "id": f"toolu_{i}", "name": n, "input": args},
    st.integers(0, 99),
    texts,
    st.dictionaries(texts, json_values, max_size=3),
)
tool_result_block = st.builds(
    lambda i, content: {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": content},
    st.integers(0, 99),
    st.one_of(texts, st.lists(st.one_of(text_block, image_block), max_size=3)),
)
blocks = st.one_of(text_block, image_block, document_block, tool_use_block, tool_result_block)
messages = st.builds(
    lambda role, content: {"role": role, "content": content},
    st.sampled_from(["user", "assistant"]),
    st.one_of(texts, st.lists(blocks, max_size=4)),
)
tools = st.lists(
    st.builds(
        lambda n, d, schema: {"name": n, "description": d, "input_schema": schema},
        texts,
        texts,
        st.dictionaries(texts, json_values, max_size=3),
    ),
    max_size=3,
)
systems = st.lists(text_block, max_size=2)


def request_of(history: list[dict[str, Any]], system: Any, tool_list: Any) -> ModelRequest:
    return ModelRequest(
        model="m", messages=list(history), max_tokens=1024, system=system, tools=tool_list
    )


def api_bound(request: ModelRequest) -> int:
    """The most input tokens the API can bill for ``request``, on the assumptions the README
    states: at most one token per UTF-8 byte of every string the model reads, a few tokens per
    message for its role, the allowance of each image and document block, and the tool-use
    system prompt when there are tools."""
    strings = images = documents = 0

    def walk(value: Any) -> None:
        nonlocal strings, images, documents
        if isinstance(value, str):
            strings += len(value.encode())
        elif isinstance(value, dict):
            if value.get("type") == "image":
                images += 1
            elif value.get("type") == "document":
                documents += 1
            for key, item in value.items():
                strings += len(key.encode())
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif value is not None:
            strings += len(msgspec.json.encode(value))

    walk(request.messages)
    walk(request.system)
    walk(request.tools)
    roles = 4 * len(request.messages)
    tooling = TOOLS_ALLOWANCE if request.tools else 0
    return strings + roles + images * IMAGE_ALLOWANCE + documents * DOCUMENT_ALLOWANCE + tooling


@PROPERTY
@given(history=st.lists(messages, max_size=6), system=systems, tool_list=tools)
def test_the_worst_case_covers_what_the_api_can_bill(
    history: list[dict[str, Any]], system: Any, tool_list: Any
) -> None:
    """For any request — text in any script, tool calls and results, images and documents by
    data or by URL, tools — the measured size is at least what the API can bill."""
    request = request_of(history, system, tool_list)
    assert request_size(request) >= api_bound(request)


operations = st.one_of(
    st.tuples(st.just("append"), messages),
    st.tuples(st.just("compact"), st.lists(messages, max_size=3)),
    st.tuples(st.just("same length"), messages),
    st.tuples(st.just("tools"), tools),
)


@PROPERTY
@given(ops=st.lists(operations, min_size=1, max_size=8), system=systems, first=tools)
def test_the_incremental_estimate_is_the_whole_request_measured_again(
    ops: list[tuple[str, Any]], system: Any, first: Any
) -> None:
    """A turn's request is measured incrementally (only new entries), yet after any sequence of
    appends and rewrites (a compaction into fewer, more or as many entries; new tools) it is
    exactly the request measured whole: never a stale estimate of an older history."""
    history = History()
    loop: Any = types.SimpleNamespace(history=history)
    call = ModelCall(reserve=True)
    tool_list = first
    for kind, value in ops:
        if kind == "append":
            history.append(value)
        elif kind == "compact":
            history.replace(value, "compact")
        elif kind == "same length":  # as many entries as before, one of them bigger
            history.replace([*history[:-1], value] if history else [value], "compact")
        else:
            tool_list = list(value)
        request = request_of(list(history), system, tool_list)
        assert call.input_estimate(loop, request) == request_size(request)


prices = st.floats(0.0, 100.0, allow_nan=False)


@PROPERTY
@given(
    base=st.tuples(prices, prices, prices, prices, prices),
    long=st.one_of(st.none(), st.tuples(prices, prices, prices, prices, prices)),
    threshold=st.integers(0, 5_000),
    estimate=st.integers(0, 10_000),
    max_tokens=st.integers(1, 64_000),
    split=st.tuples(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1), st.floats(0, 1)),
    output=st.floats(0, 1),
)
def test_the_worst_case_price_covers_every_split_of_the_tokens(
    base: tuple[float, ...],
    long: tuple[float, ...] | None,
    threshold: int,
    estimate: int,
    max_tokens: int,
    split: tuple[float, ...],
    output: float,
) -> None:
    """However the input splits into plain, cache-read and cache-written tokens (5 min, 1 h),
    whichever price tier applies, and whatever output up to max_tokens comes back, the cost is
    at most the booked worst case."""

    def info(p: tuple[float, ...]) -> dict[str, float]:
        keys = ("input", "output", "cache_write_5m", "cache_write_1h", "cache_read")
        return dict(zip(keys, p, strict=True))

    data: dict[str, Any] = info(base)
    if long is not None:
        data["long_context"] = {**info(long), "threshold": threshold}
    table = PriceTable(models={"m": ModelInfo.from_dict("m", data)})
    session = object.__new__(Session)
    session.prices = table
    worst = session.worst_case("m", estimate, max_tokens)
    a, b, c, _plain = split
    total = sum(split) or 1.0
    read = int(estimate * a / total)
    w5m = int(estimate * b / total)
    w1h = int(estimate * c / total)
    plain = max(estimate - read - w5m - w1h, 0)
    usage = {
        "input_tokens": plain,
        "output_tokens": int(max_tokens * output),
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": w5m + w1h,
        "cache_creation": {"ephemeral_5m_input_tokens": w5m, "ephemeral_1h_input_tokens": w1h},
    }
    cost = table.cost("m", usage)
    assert cost is not None and cost <= worst * (1 + 1e-12) + 1e-15
