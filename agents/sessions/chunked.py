"""Encoding one huge transcript entry a piece at a time, so a worker thread shares the interpreter.

msgspec holds the interpreter for the whole of one call: encoding a 50 MB tool result in one call
stalls every other thread, the event loop's included, for 70–440 ms (a text full of characters
JSON escapes is the worst), even when the call runs in a worker thread. So a huge entry is encoded
by pieces of at most about :data:`PIECE_BYTES` each — a long string by slices, a long list by runs
of items, a big field of a struct in place of a marker — and between two pieces the thread lets
the event loop run. The bytes are exactly those of one ``encode`` call (the tests check it).
"""

from __future__ import annotations

import uuid
from typing import Any

import msgspec

from agents.sessions.entry import TranscriptEntry, rough_size

__all__ = ["PIECE_BYTES", "encode_in_pieces_into"]

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
