"""Import the ``anthropic`` client once at collection, so its one-off import cost (about a
second) is not charged to whichever test happens to run first."""

from __future__ import annotations

import anthropic  # noqa: F401
