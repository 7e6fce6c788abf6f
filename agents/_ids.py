"""Message and session ids: version-4 UUID strings, unique, made cheaply.

Every streamed message and every transcript entry gets one (two per tool call), so
``str(uuid.uuid4())`` — and even 122 fresh random bits formatted as a UUID, which cost as much
as the rest of a no-op tool call's message — is replaced by a random prefix drawn once per
process (70 random bits, with the version and variant nibbles of a version-4 UUID) and a
48-bit counter, started at a random point, as the last group. Ids must be unique, not secret
nor unguessable: within a process the counter never repeats (2**47 ids at least before it
wraps), and two processes share a prefix with a chance of 2**-70. The generator is private so
that user code calling ``random.seed()`` (as test frameworks do) cannot make ids repeat, and a
forked child draws a prefix of its own so that parent and child never share ids.
"""

from __future__ import annotations

import itertools
import os
import random
from collections.abc import Callable

__all__ = ["new_id"]

_bits = random.Random()
_CLEAR = ~((0xF000 << 64) | (0xC000 << 48))
_SET = (0x4000 << 64) | (0x8000 << 48)
#: the counter runs from 2**48 + (a random point below 2**47): ``hex`` of it always has the
#: 12 hex digits of the last group after its leading ``0x1``
_COUNTER_BASE = 1 << 48

_prefix = ""
_next: Callable[[], int] = itertools.count().__next__


def _reseed() -> None:
    """A fresh random prefix and counter start (at import, and in a forked child)."""
    global _prefix, _next
    _bits.seed()
    h = ((_bits.getrandbits(128) & _CLEAR) | _SET).to_bytes(16, "big").hex()
    _prefix = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-"
    _next = itertools.count(_COUNTER_BASE + _bits.getrandbits(47)).__next__


_reseed()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reseed)


def new_id() -> str:
    """A version-4 UUID string, unique in this process and across processes (see above)."""
    return _prefix + hex(_next())[-12:]
