"""Model prices, as data: what a response costs where Claude Code wrote no figure for it.

The table is `prices.json` beside this module (shipped with each release), overlaid by the
user's own copy in the per-user data folder, which `claude-session prices update` writes from
LiteLLM's pricing data (the source ccusage uses) without a release. Prices are USD per million
tokens: input, output, cache read, and cache writes by their time to live (5 minutes, 1 hour).
A model is found by its name (provider prefixes, dates and context suffixes aside), else by the
table's aliases; one found nowhere gets the default tier, as Claude Code prices a model it does
not know, and its cost is an estimate. Standard library only: `core/usage.py` prices with it.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, NamedTuple

from .paths import user_data_dir

BUNDLED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "prices.json")
USER_FILE = "prices.json"  # in the per-user data folder
MAX_PRICE = 10_000.0  # USD per million tokens: past this a figure is not a price
TIER_AT = 200_000  # tokens: a model's price above this, where it has one, is for the excess
KINDS = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")


class Price(NamedTuple):
    """USD per million tokens; `above` the same for the part of a count past TIER_AT."""

    input: float
    output: float
    cache_read: float
    cache_write_5m: float
    cache_write_1h: float
    above: tuple[float, ...] | None = None


class Table(NamedTuple):
    models: dict[str, Price]
    aliases: list[tuple[str, str]]  # (part of a name, model), tried in order
    default: str  # the model whose prices an unknown model gets
    sources: list[str]  # where the figures come from, bundled first


class Bad(ValueError):
    """A price file that is not one."""


def price_of(entry: object) -> Price:
    """A table entry ({input, output, ...} per million tokens) as a Price, each figure checked;
    missing cache prices follow Anthropic's ratios to input (0.1, 1.25, 2)."""
    if not isinstance(entry, dict):
        raise Bad("an entry is not an object")

    def figure(name: str, default: float | None, where: dict[str, Any]) -> float:
        value = where.get(name, default)
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if not ok or not 0 <= float(value) <= MAX_PRICE:  # type: ignore[arg-type]
            raise Bad(f"{name}: not a price: {value!r}")
        return float(value)  # type: ignore[arg-type]

    def prices(where: dict[str, Any]) -> tuple[float, ...]:
        base = figure("input", None, where)
        return (
            base,
            figure("output", None, where),
            figure("cache_read", base * 0.1, where),
            figure("cache_write_5m", base * 1.25, where),
            figure("cache_write_1h", base * 2.0, where),
        )

    above = entry.get("above_200k")
    if above is not None and not isinstance(above, dict):
        raise Bad("above_200k is not an object")
    i, o, r, w5, w1 = prices(entry)
    return Price(i, o, r, w5, w1, above=prices(above) if above else None)


def parse(data: object) -> Table:
    """A price file's contents as a Table (Bad when it is not one)."""
    if not isinstance(data, dict) or not isinstance(data.get("models"), dict):
        raise Bad("no models")
    models = {str(k).lower(): price_of(v) for k, v in data["models"].items()}
    aliases = []
    for pair in data.get("aliases") or []:
        if not (
            isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)
        ):
            raise Bad(f"an alias is not [part, model]: {pair!r}")
        if pair[1].lower() not in models:
            raise Bad(f"alias {pair[0]!r} names no model of the file")
        aliases.append((pair[0].lower(), pair[1].lower()))
    default = str(data.get("default") or "").lower()
    if default and default not in models:
        raise Bad(f"the default {default!r} is no model of the file")
    source = data.get("source")
    return Table(models, aliases, default, [source] if isinstance(source, str) else [])


def _read(path: str) -> Table | None:
    try:
        with open(path, encoding="utf-8") as f:
            return parse(json.load(f))
    except FileNotFoundError:
        return None


def user_path() -> str:
    return os.path.join(user_data_dir(), USER_FILE)


_cache: dict[tuple[str, float], Table] = {}


def table() -> Table:
    """The bundled table, the user's over it (its models first, then its aliases, then ours).
    A user file that cannot be read or parsed is left out (`claude-session prices` says why)."""
    try:
        path = user_path()
        stamp = os.stat(path).st_mtime
    except OSError:
        path, stamp = "", 0.0
    key = (path, stamp)
    if key not in _cache:
        bundled = _read(BUNDLED)
        assert bundled is not None, "the price table is missing from the package"
        mine = None
        if path:
            try:
                mine = _read(path)
            except (OSError, ValueError):
                mine = None
        if mine is not None:
            bundled = Table(
                bundled.models | mine.models,
                mine.aliases + bundled.aliases,
                mine.default or bundled.default,
                [*bundled.sources, f"{path}: {', '.join(mine.sources) or 'yours'}"],
            )
        _cache.clear()
        _cache[key] = bundled
    return _cache[key]


_PREFIX = re.compile(r"^(?:[a-z]{2}\.)?(?:anthropic[./]|bedrock/|vertex_ai/)")
_SUFFIX = re.compile(r"(?:\[1m\]|-v\d+(?::\d+)?|@\d{8}|-\d{8})+$")


def normal(model: str) -> str:
    """A model name without its provider prefix, date and context or version suffixes."""
    name = _PREFIX.sub("", model.strip().lower())
    return _SUFFIX.sub("", name)


def lookup(model: str | None, prices: Table | None = None) -> tuple[Price | None, str | None]:
    """The model's price and the table's name for it; (None, None) when the table has none."""
    prices = table() if prices is None else prices
    if not model:
        return None, None
    name = model.strip().lower()
    for candidate in (name, normal(name)):
        if candidate in prices.models:
            return prices.models[candidate], candidate
    short = normal(name)
    for part, target in prices.aliases:
        if part in short:
            return prices.models[target], target
    return None, None


def default_price(prices: Table | None = None) -> Price:
    prices = table() if prices is None else prices
    return prices.models[prices.default]


def cost(price: Price, counts: dict[str, Any]) -> float:
    """USD for one response's tokens (message_usage's columns): cache writes by their TTL,
    and the part of a count past TIER_AT at the higher price where the model has one."""
    written = int(counts.get("cache_creation_tokens") or 0)
    hour = min(written, int(counts.get("cache_1h_tokens") or 0))
    amounts = (
        int(counts.get("input_tokens") or 0),
        int(counts.get("output_tokens") or 0),
        int(counts.get("cache_read_tokens") or 0),
        written - hour,
        hour,
    )
    base = price[:5]
    total = 0.0
    for i, n in enumerate(amounts):
        if price.above is not None and n > TIER_AT:
            total += TIER_AT * base[i] + (n - TIER_AT) * price.above[i]
        else:
            total += n * base[i]
    return total / 1e6


# --- LiteLLM's pricing data, the maintained source (`claude-session prices update`) --------

_LITELLM = {
    "input": "input_cost_per_token",
    "output": "output_cost_per_token",
    "cache_read": "cache_read_input_token_cost",
    "cache_write_5m": "cache_creation_input_token_cost",
    "cache_write_1h": "cache_creation_input_token_cost_above_1hr",
}


def from_litellm(data: object, source: str) -> dict[str, Any]:
    """The Claude models of LiteLLM's `model_prices_and_context_window.json` as a price file
    of ours (per token there, per million here). Bad when it holds no Claude model."""
    if not isinstance(data, dict):
        raise Bad("not a JSON object")
    models: dict[str, Any] = {}
    for name, entry in data.items():
        if not isinstance(name, str) or "claude" not in name.lower() or not isinstance(entry, dict):
            continue
        if entry.get("litellm_provider") not in (None, "anthropic"):
            continue
        prices: dict[str, Any] = {}
        above: dict[str, Any] = {}
        for ours, theirs in _LITELLM.items():
            for target, key in ((prices, theirs), (above, f"{theirs}_above_200k_tokens")):
                value = entry.get(key)
                if isinstance(value, int | float) and not isinstance(value, bool):
                    target[ours] = round(float(value) * 1e6, 6)
        if "input" not in prices or "output" not in prices:
            continue
        if "input" in above and "output" in above:
            prices["above_200k"] = above
        try:
            price_of(prices)
        except Bad:
            continue
        if any(ch.isdigit() for ch in normal(name)):  # a version: "claude-v1" names none
            models[normal(name)] = prices
    if not models:
        raise Bad("no Claude model priced in it")
    return {"source": source, "models": models}
