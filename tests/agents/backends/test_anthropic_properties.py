"""Properties of the Anthropic backend's pure parts: SSE parsing and request building."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from agents.backends import ModelRequest
from agents.backends.anthropic import _SSEParser, build_params
from agents.testing.fake_api import _sse
from agents.testing.scripted import Step, events_for, text, thinking, tool_use

blocks = st.lists(
    st.one_of(
        st.text(max_size=30).map(text),
        st.text(min_size=1, max_size=30).map(lambda t: thinking(t, "sig")),
        st.dictionaries(st.text(max_size=5), st.integers(), max_size=3).map(
            lambda d: tool_use("Read", d, id="toolu_x")
        ),
    ),
    max_size=5,
)


def _unchunk(data: bytes) -> bytes:
    """The SSE payloads out of the fake server's chunked framing."""
    out = bytearray()
    while data:
        size, _, rest = data.partition(b"\r\n")
        n = int(size, 16)
        out += rest[:n]
        data = rest[n + 2 :]
    return bytes(out)


@given(content=blocks, cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=8))
def test_any_chunking_parses_to_the_same_events(content: list[Any], cuts: list[int]) -> None:
    """However the bytes are split into chunks, the parser yields exactly the events sent."""
    req = ModelRequest(model="m", messages=[{"role": "user", "content": "q"}], max_tokens=5)
    events = events_for(Step(content), req, "msg_1")
    wire = _unchunk(b"".join(_sse(e) for e in events))
    points = sorted({c % (len(wire) + 1) for c in cuts} | {0, len(wire)})
    parser = _SSEParser("m")
    got = [e for a, b in itertools.pairwise(points) for e in parser.feed(wire[a:b])]
    assert msgspec.to_builtins(got) == msgspec.to_builtins(events)
    assert parser.stopped


json_blocks = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, st.text(max_size=8)),
    st.builds(lambda t: {"type": "thinking", "thinking": t, "signature": "s"}, st.text(max_size=8)),
    st.builds(
        lambda i: {"type": "tool_result", "tool_use_id": i, "content": "ok"}, st.text(max_size=4)
    ),
)
messages = st.lists(
    st.builds(
        lambda role, content: {"role": role, "content": content},
        st.sampled_from(["user", "assistant"]),
        st.one_of(st.text(max_size=8), st.lists(json_blocks, max_size=4)),
    ),
    max_size=4,
)
defs = st.lists(
    st.builds(lambda n: {"name": n, "input_schema": {}}, st.text(max_size=4)), max_size=3
)
system = st.lists(
    st.builds(lambda t: {"type": "text", "text": t}, st.text(min_size=1, max_size=8)), max_size=3
)
BREAKPOINT = b',"cache_control":{"type":"ephemeral"}'


@given(msgs=messages, tools=defs, sys_blocks=system)
def test_build_params_marks_at_most_three_breakpoints_and_mutates_nothing(
    msgs: list[dict[str, Any]], tools: list[dict[str, Any]], sys_blocks: list[dict[str, Any]]
) -> None:
    """At most one breakpoint each on system, tools and the last message; inputs stay unchanged."""
    req = ModelRequest(model="m", messages=msgs, max_tokens=5, tools=tools, system=sys_blocks)
    before = copy.deepcopy((msgs, tools, sys_blocks))
    params = build_params(req)
    assert (msgs, tools, sys_blocks) == before
    marked = msgspec.json.encode(params).count(b'"cache_control"')
    assert marked <= 3
    assert marked >= bool(tools) + bool(sys_blocks)
    # Everything but the breakpoints is sent as given.
    stripped = msgspec.json.decode(msgspec.json.encode(params).replace(BREAKPOINT, b""))
    assert stripped.get("tools", []) == tools and stripped.get("system", []) == sys_blocks
    for sent, original in zip(stripped["messages"], msgs, strict=True):
        if isinstance(original["content"], str) and sent["content"] != original["content"]:
            assert sent["content"] == [{"type": "text", "text": original["content"]}]
        else:
            assert sent == original


def _sse_event(name: str, data: str, crlf: list[bool], spaced: bool = True) -> bytes:
    """One SSE event, each of its lines ended by LF or CRLF as ``crlf`` says (cycled); not
    ``spaced``, its fields have no space after the colon (SSE allows it; not the API's shape,
    so the parser's general path reads it)."""
    space = " " if spaced else ""
    lines = [f"event:{space}{name}", f"data:{space}{data}", ""]
    return b"".join(
        (line + ("\r\n" if crlf[i % len(crlf)] else "\n")).encode() for i, line in enumerate(lines)
    )


stop_events = st.lists(
    st.tuples(
        st.sampled_from(["content_block_stop", "ping", "future_event"]),
        st.integers(min_value=0, max_value=99),
        st.sampled_from(["", " ", "\r", "\r\r", "\n"]),  # JSON whitespace, CRs included
        st.lists(st.booleans(), min_size=1, max_size=3),
        st.booleans(),
    ),
    max_size=6,
)


@given(events=stop_events, cuts=st.lists(st.integers(min_value=0, max_value=2_000), max_size=12))
def test_any_chunking_of_crlf_and_stray_crs_parses_to_the_events_sent(
    events: list[tuple[str, int, str, list[bool], bool]], cuts: list[int]
) -> None:
    """LF and CRLF line ends mixed, CRs as JSON whitespace (``\\r\\r\\n`` among them), pings
    and unknown events, in the API's shape or not: however the bytes are cut, the parser finds
    each event's end where it lies (its search resumes where the last stopped, CRLFs normalized
    in the new bytes only)."""
    wire = bytearray()
    expected = []
    for name, index, space, crlf, spaced in events:
        data = f'{{"type":"{name}",{space}"index":{index}}}' if name != "ping" else "{}"
        if "\n" in space:
            data = data.replace("\n", "")  # a line end inside data would end the line
        wire += _sse_event(name, data, crlf, spaced)
        if name == "content_block_stop":
            expected.append({"type": name, "index": index})
    wire += _sse_event("message_stop", '{"type":"message_stop"}', [True])
    expected.append({"type": "message_stop"})
    points = sorted({c % (len(wire) + 1) for c in cuts} | {0, len(wire)})
    parser = _SSEParser("m")
    got = [e for a, b in itertools.pairwise(points) for e in parser.feed(bytes(wire[a:b]))]
    assert msgspec.to_builtins(got) == expected
    assert parser.stopped
