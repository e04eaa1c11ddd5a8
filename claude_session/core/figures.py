"""How money and token counts read at a glance, one format everywhere (the CLI, the web page,
the restored context). Imports nothing: SessionStart's context uses it on the hook path."""

from __future__ import annotations

__all__ = ["plural", "token_count", "usd"]


def usd(value: object) -> str:
    """$12.34, $0.0056: two decimals from a dollar up, four below; `-` for no figure."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "-"
    return f"${value:,.2f}" if abs(value) >= 1 else f"${value:.4f}"


def token_count(value: object) -> str:
    """41k, 1.2M: a token count at a glance."""
    n = float(value) if isinstance(value, int | float) else 0.0
    if n < 1000:
        return f"{n:.0f}"
    if n < 1_000_000:
        return f"{n / 1000:.1f}k".replace(".0k", "k") if n < 10_000 else f"{n / 1000:.0f}k"
    return f"{n / 1_000_000:.1f}M"


def plural(n: int, noun: str, many: str | None = None) -> str:
    """`1 open error`, `2 open errors`: a count and its noun, singular or plural (`many`: a
    plural other than the noun with an s)."""
    return f"{n:,} {noun if n == 1 else many or noun + 's'}"
