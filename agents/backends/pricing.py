"""Model prices and limits, shipped as data (``models.json``) and overridable.

Prices are USD per million tokens. Dated ids (``claude-sonnet-4-5-20250929``) price as their alias.
An unknown model has no price: its cost is ``None``, and setting a budget for it is an error at
construction, naming the model and the field::

    table = default_price_table().with_overrides({"my-model": {"input": 1, "output": 2}})
    table.cost("my-model", {"input_tokens": 1000, "output_tokens": 10})   # 0.00102
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

import attrs

__all__ = ["ModelInfo", "PriceTable", "default_price_table"]

_DATED = re.compile(r"-\d{8}$")
_PRICE_FIELDS = ("input", "output", "cache_write_5m", "cache_write_1h", "cache_read")


@attrs.frozen
class ModelInfo:
    """One model's prices (USD per million tokens) and limits."""

    input: float
    output: float
    cache_write_5m: float = 0.0
    cache_write_1h: float = 0.0
    cache_read: float = 0.0
    context_window: int = 200_000
    max_output_default: int = 32_000
    max_output: int = 64_000
    effort: bool = False
    #: prices that apply instead when the prompt is longer than ``long_context_threshold`` tokens
    long_context: ModelInfo | None = None
    long_context_threshold: int | None = None

    @classmethod
    def from_dict(cls, name: str, data: Mapping[str, Any]) -> ModelInfo:
        """Build from the JSON shape; errors name the model and the field."""
        known = {f.name for f in attrs.fields(cls)} | {"long_context"}
        unknown = sorted(set(data) - known)
        if unknown:
            expected = ", ".join(sorted(known))
            raise ValueError(
                f"pricing[{name!r}]: unknown field {unknown[0]!r} (expected some of {expected})"
            )
        for field in ("input", "output"):
            if field not in data:
                raise ValueError(f"pricing[{name!r}]: missing required field {field!r}")
        kwargs: dict[str, Any] = {}
        for key, value in data.items():
            if key == "long_context":
                long = dict(value)
                kwargs["long_context_threshold"] = int(long.pop("threshold"))
                prices: dict[str, Any] = {k: float(v) for k, v in long.items()}
                kwargs["long_context"] = cls(**prices)
            elif key in _PRICE_FIELDS:
                if not isinstance(value, int | float) or value < 0:
                    raise ValueError(
                        f"pricing[{name!r}].{key} must be a number >= 0, got {value!r}"
                    )
                kwargs[key] = float(value)
            else:
                kwargs[key] = value
        return cls(**kwargs)

    def cost(self, usage: Mapping[str, Any]) -> float:
        """USD cost of one response's usage (input, output, cache write 5 min / 1 h, cache read)."""
        get = usage.get  # (this runs for every response)
        inp = get("input_tokens") or 0
        out = get("output_tokens") or 0
        read = get("cache_read_input_tokens") or 0
        write = get("cache_creation_input_tokens") or 0
        split = get("cache_creation")
        if split:
            w1h = split.get("ephemeral_1h_input_tokens") or 0
            w5m = write - w1h
        else:
            w1h = 0
            w5m = write
        price = self
        long_context = self.long_context
        if (
            long_context is not None
            and self.long_context_threshold is not None
            and inp + read + write > self.long_context_threshold
        ):
            price = long_context
        micro = (
            inp * price.input
            + out * price.output
            + w5m * price.cache_write_5m
            + w1h * price.cache_write_1h
            + read * price.cache_read
        )
        return micro / 1_000_000


@attrs.frozen
class PriceTable:
    """Model id → :class:`ModelInfo`; looks dated ids up under their alias."""

    models: Mapping[str, ModelInfo]
    web_search_per_request: float = 0.01

    def get(self, model: str) -> ModelInfo | None:
        """The model's info, or ``None`` when the table does not know it."""
        info = self.models.get(model)
        if info is None:
            info = self.models.get(_DATED.sub("", model))
        return info

    def cost(self, model: str, usage: Mapping[str, Any]) -> float | None:
        """USD cost of a response's usage on ``model``; ``None`` for an unknown model."""
        info = self.models.get(model)  # ``get``, its common case inlined: once per response
        if info is None:
            info = self.get(model)
            if info is None:
                return None
        cost = info.cost(usage)
        server = usage.get("server_tool_use")
        searches = (server.get("web_search_requests") or 0) if server else 0
        return cost + searches * self.web_search_per_request

    def with_overrides(self, overrides: Mapping[str, ModelInfo | Mapping[str, Any]]) -> PriceTable:
        """A new table where ``overrides`` replace or add models (``AgentOptions(pricing=...)``)."""
        models = dict(self.models)
        for name, value in overrides.items():
            if not isinstance(name, str):
                raise ValueError(f"pricing keys must be model ids (str), got {name!r}")
            if isinstance(value, ModelInfo):
                models[name] = value
            elif isinstance(value, Mapping):
                models[name] = ModelInfo.from_dict(name, value)
            else:
                kind = type(value).__name__
                raise ValueError(
                    f"pricing[{name!r}] must be a ModelInfo or a dict of prices, got {kind}"
                )
        return attrs.evolve(self, models=models)


@functools.cache
def default_price_table() -> PriceTable:
    """The table shipped with the package (read once, on first use: not at import)."""
    import json
    import pkgutil  # the package's loader reads the file (from a zip too); importlib.resources
    # would cost this process a few milliseconds more of imports before its first request

    data = pkgutil.get_data("agents.backends", "models.json")
    if data is None:  # pragma: no cover - a loader that cannot read package data
        raise RuntimeError("the price table agents/backends/models.json cannot be read")
    raw = json.loads(data)
    models = {name: ModelInfo.from_dict(name, data) for name, data in raw["models"].items()}
    return PriceTable(models=models, web_search_per_request=raw["web_search_per_request"])
