"""One huge transcript entry encoded and decoded a piece at a time, so a worker thread shares
the interpreter.

msgspec holds the interpreter for the whole of one call: encoding a 50 MB tool result in one call
stalls every other thread, the event loop's included, for 70–440 ms (a text full of characters
JSON escapes is the worst), even when the call runs in a worker thread. So a huge entry is encoded
by pieces of at most about :data:`PIECE_BYTES` each — a long string by slices, a long list by runs
of items, a big field of a struct in place of a marker — and between two pieces the thread lets
the event loop run. The bytes are exactly those of one ``encode`` call (the tests check it).

On the way back, a line of megabytes has its long string literals cut out and decoded by pieces
(:func:`decode_long_line`); a line of many small items is still decoded in one call.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import msgspec

from agents.sessions.entry import TranscriptEntry, rough_size

__all__ = ["PIECE_BYTES", "decode_long_line", "encode_in_pieces_into"]

#: The most one msgspec call encodes, estimated (a few milliseconds at worst).
PIECE_BYTES = 128 * 1024
#: Characters of a long string per call: escapes make a character up to 6 bytes of JSON.
_PIECE_CHARS = PIECE_BYTES // 2

_encoder = msgspec.json.Encoder()


def encode_in_pieces_into(entry: TranscriptEntry, buf: bytearray) -> None:
    """Append ``entry``'s line (with its newline) to ``buf``, a bounded piece per msgspec call."""
    _pieces(entry, buf)
    buf += b"\n"


def _is_big(value: Any) -> bool:
    return rough_size(value, PIECE_BYTES) > PIECE_BYTES


def _pieces(value: Any, buf: bytearray) -> None:
    if not _is_big(value):
        _encoder.encode_into(value, buf, -1)
    elif type(value) is str:
        _string(value, buf)
    elif type(value) is list:
        _list(value, buf)
    elif type(value) is dict and all(type(key) is str for key in value):
        _dict(value, buf)
    elif isinstance(value, msgspec.Struct):
        _struct(value, buf)
    else:  # a tuple, a dict with other keys: rare enough to encode whole
        _encoder.encode_into(value, buf, -1)


def _string(text: str, buf: bytearray) -> None:
    buf += b'"'
    for start in range(0, len(text), _PIECE_CHARS):
        piece = _encoder.encode(text[start : start + _PIECE_CHARS])
        buf += memoryview(piece)[1:-1]  # without its quotes: escaping is per character
    buf += b'"'


def _list(items: list[Any], buf: bytearray) -> None:
    """Runs of items whose estimate fits a piece, one call each; an item too big alone is
    encoded by its own pieces. Each item is sized once (a walk of its parts, in this thread)."""
    buf += b"["
    start, size = 0, 0
    for index, item in enumerate(items):
        item_size = rough_size(item, PIECE_BYTES)
        if item_size > PIECE_BYTES or size + item_size > PIECE_BYTES:
            _run(items, start, index, buf)
            start, size = index, 0
            if item_size > PIECE_BYTES:
                if index:
                    buf += b","
                _pieces(item, buf)
                start = index + 1
                continue
        size += item_size
    _run(items, start, len(items), buf)
    buf += b"]"


def _run(items: list[Any], start: int, end: int, buf: bytearray) -> None:
    """``items[start:end]`` in one call, without its brackets, after a comma unless first."""
    if start < end:
        if start:
            buf += b","
        buf += memoryview(_encoder.encode(items[start:end]))[1:-1]


def _dict(mapping: dict[str, Any], buf: bytearray) -> None:
    buf += b"{"
    for i, (key, value) in enumerate(mapping.items()):
        if i:
            buf += b","
        _encoder.encode_into(key, buf, -1)
        buf += b":"
        _pieces(value, buf)
    buf += b"}"


def _struct(value: msgspec.Struct, buf: bytearray) -> None:
    """The struct encoded with its big fields replaced by markers, each marker then replaced by
    that field's pieces (renames, tags and omitted defaults stay msgspec's own)."""
    token = uuid.uuid4().hex
    big = {
        field.name: getattr(value, field.name)
        for field in msgspec.structs.fields(value)
        if _is_big(getattr(value, field.name)) and not _is_default(field, value)
    }
    markers = {name: f"@piece-{token}-{name}@" for name in big}
    skeleton = _encoder.encode(msgspec.structs.replace(value, **markers))
    start = 0
    for name, field in big.items():
        marker = _encoder.encode(markers[name])
        at = skeleton.index(marker, start)
        buf += memoryview(skeleton)[start:at]
        _pieces(field, buf)
        start = at + len(marker)
    buf += memoryview(skeleton)[start:]


def _is_default(field: msgspec.structs.FieldInfo, value: msgspec.Struct) -> bool:
    """Whether the field holds its default (then a marker would stop ``omit_defaults``)."""
    current = getattr(value, field.name)
    if field.default is not msgspec.NODEFAULT:
        return bool(current == field.default)
    if field.default_factory is not msgspec.NODEFAULT:
        return bool(current == field.default_factory())
    return False


# -- decoding ------------------------------------------------------------------------------------

#: A string literal longer than this (bytes of JSON) is decoded by pieces.
_LONG_LITERAL = PIECE_BYTES
#: A line with more string literals than this is decoded in one call: scanning each literal in
#: Python would cost more than it saves (a line of many small items is not cut yet).
_MAX_LITERALS = 10_000
#: A string literal's body, escapes included; matched a window at a time (one bounded call each).
_BODY = re.compile(rb'(?:[^"\\]+|\\u[0-9a-fA-F]{4}|\\[^u])*')
#: A high surrogate's escape: a piece must not end between it and its low half.
_HIGH_SURROGATE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}$")
_QUOTE = ord('"')
#: Bytes of a literal scanned per call: text full of escapes scans at about 5 MB/s.
_SCAN_WINDOW = 32 * 1024


def decode_long_line(line: bytes | memoryview, decoder: msgspec.json.Decoder[Any]) -> Any:
    """``decoder.decode(line)`` for a line of megabytes, by pieces: each long string literal
    is cut out of the line (found a window at a time), the rest decoded in one call with a
    marker in its place, and the literal decoded a piece at a time, then put back. A line this
    does not suit (too many literals, a marker where the type wants no string) is decoded whole.
    """
    data = line if isinstance(line, bytes) else bytes(line)
    found = _long_literals(data)
    if not found:
        return decoder.decode(data)
    token = uuid.uuid4().hex
    skeleton = bytearray()
    texts: dict[str, str] = {}
    start = 0
    for i, (opening, closing, cuts) in enumerate(found):
        marker = f"@piece-{token}-{i}@"
        skeleton += memoryview(data)[start:opening]
        skeleton += _encoder.encode(marker)
        texts[marker] = _decode_literal(data, opening, closing, cuts)
        start = closing + 1
    skeleton += memoryview(data)[start:]
    try:
        value = decoder.decode(skeleton)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return decoder.decode(data)
    return _put_back(value, texts)


def _long_literals(data: bytes) -> list[tuple[int, int, list[int]]]:
    """``(opening quote, closing quote, safe cuts)`` of each long string literal; [] when the
    line has too many literals to be worth it."""
    found: list[tuple[int, int, list[int]]] = []
    position, literals, end_of_data = 0, 0, len(data)
    while True:
        opening = data.find(b'"', position)
        if opening < 0:
            return found
        literals += 1
        if literals > _MAX_LITERALS:
            return []
        end, cuts = opening + 1, []
        while True:
            window_end = min(end + _SCAN_WINDOW, end_of_data)
            match = _BODY.match(data, end, window_end)
            reached = match.end() if match else end
            if reached >= end_of_data or (reached == end and window_end == end_of_data):
                return []  # not JSON: let the decoder say so
            end = reached
            if data[end] == _QUOTE:
                break
            cuts.append(_safe_cut(data, end, opening + 1))
        if end - opening > _LONG_LITERAL:
            found.append((opening, end, cuts))
        position = end + 1


def _safe_cut(data: bytes, at: int, start: int) -> int:
    """A place at or just before ``at`` where a literal's body may be cut: not inside a UTF-8
    character (msgspec writes them raw) nor between the two escapes of a surrogate pair."""
    if _HIGH_SURROGATE.search(data, max(at - 6, start), at):
        return at - 6
    while at > start and data[at] & 0xC0 == 0x80:  # a continuation byte
        at -= 1
    return at


def _decode_literal(data: bytes, opening: int, closing: int, cuts: list[int]) -> str:
    pieces = []
    start = opening + 1
    for cut in [*cuts, closing]:
        if cut > start:
            pieces.append(_string_decoder.decode(b'"' + data[start:cut] + b'"'))
            start = cut
    return "".join(pieces)


_string_decoder = msgspec.json.Decoder(str)


def _put_back(value: Any, texts: dict[str, str]) -> Any:
    """``value`` with each marker string replaced by its text (containers rebuilt only where a
    marker is)."""
    kind = type(value)
    if kind is str:
        return texts.get(value, value)
    if kind is list:
        items = [_put_back(item, texts) for item in value]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    if kind is dict:
        pairs = {texts.get(k, k): _put_back(v, texts) for k, v in value.items()}
        return pairs if any(k not in value or pairs[k] is not value[k] for k in pairs) else value
    if isinstance(value, msgspec.Struct):
        changed = {}
        for name in value.__struct_fields__:
            field = getattr(value, name)
            new = _put_back(field, texts)
            if new is not field:
                changed[name] = new
        return msgspec.structs.replace(value, **changed) if changed else value
    return value
