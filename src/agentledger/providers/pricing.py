"""What a call cost, from the packaged price table (``agentledger/data/prices.yaml``).

A model with no entry has no cost (None), never an estimate: a wrong price is worse than none.
"""

from __future__ import annotations

import functools
import re
from importlib import resources
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentledger.errors import RecordError
from agentledger.providers.base import Usage

__all__ = ["ModelPrice", "PriceTable", "cost_usd", "default_prices", "load_prices"]

# What may follow an entry's name in a served model id: a snapshot, never another model.
_SNAPSHOT = re.compile(r"(-\d{8}|-\d{4}-\d{2}-\d{2}|@\d{8}|-\d{3}|-latest)")


class _Tier(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    above: int = Field(gt=0, description="Input tokens above which this price applies.")
    input: float = Field(ge=0, description="USD per million input tokens.")
    output: float = Field(ge=0, description="USD per million output tokens.")


class ModelPrice(BaseModel):
    """List price of one model, in US dollars per million tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    long_context: _Tier | None = None

    def cost(self, usage: Usage) -> float:
        """The cost of `usage` at this price."""
        rates: ModelPrice | _Tier = self
        if self.long_context and usage.input_tokens > self.long_context.above:
            rates = self.long_context
        total = usage.input_tokens * rates.input + usage.output_tokens * rates.output
        return round(total / 1_000_000, 10)


class PriceTable(BaseModel):
    """Prices by provider, then by model name (see the matching rule in prices.yaml)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: int = 1
    anthropic: dict[str, ModelPrice] = Field(default_factory=dict)
    openai: dict[str, ModelPrice] = Field(default_factory=dict)
    google: dict[str, ModelPrice] = Field(default_factory=dict)

    def price(self, provider: str, model: str) -> ModelPrice | None:
        """The price of `model` at `provider`, or None when the table does not know it."""
        entries: dict[str, ModelPrice] = getattr(self, provider, None) or {}
        name = model.strip().lower().removeprefix("models/")
        if name in entries:
            return entries[name]
        best: str | None = None
        for entry in entries:
            if (
                name.startswith(entry)
                and _SNAPSHOT.fullmatch(name[len(entry) :])
                and (best is None or len(entry) > len(best))
            ):
                best = entry
        return entries[best] if best else None


def load_prices(path: str | Path) -> PriceTable:
    """Read a price table from a YAML file shaped like the packaged one."""
    source = Path(path)
    return _parse(source.read_text(encoding="utf-8"), str(source))


def _parse(text: str, source: str) -> PriceTable:
    try:
        data = yaml.safe_load(text)
        return PriceTable.model_validate(data)
    except yaml.YAMLError as exc:
        raise RecordError(source, f"malformed YAML: {exc}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise RecordError(source, first["msg"], field=field) from None


@functools.cache
def default_prices() -> PriceTable:
    """The price table packaged with agentledger."""
    resource = resources.files("agentledger").joinpath("data/prices.yaml")
    return _parse(resource.read_text(encoding="utf-8"), "agentledger/data/prices.yaml")


def cost_usd(
    provider: str | None,
    models: str | tuple[str | None, ...] | None,
    usage: Usage | None,
    *,
    table: PriceTable | None = None,
) -> float | None:
    """The list-price cost of `usage`, using the first of `models` the table knows.

    Pass the model served first, then the model asked for. None when there is no usage, no
    provider to price as, or no known price.
    """
    if usage is None or provider is None:
        return None
    prices = table or default_prices()
    candidates = models if isinstance(models, tuple) else (models,)
    for model in candidates:
        if model:
            price = prices.price(provider, model)
            if price is not None:
                return price.cost(usage)
    return None
