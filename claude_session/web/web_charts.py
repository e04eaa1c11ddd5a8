"""The SVG charts of a session's page: its cost over time, and per turn its cost beside the
time Claude Code spent in its hooks. Every recorded string goes through `esc` (web_text)."""

from __future__ import annotations

from typing import Any

from ..core.figures import usd
from .web_text import esc, when

CHART_W, CHART_H, CHART_LEFT, CHART_BOTTOM = 640, 200, 70, 30


OUTSIDE_LABEL = "not in transcripts"  # as `cost` names the row (services/cost/costs.py)
OUTSIDE_COLOUR = "#7c3aed"


def cost_chart(points: list[tuple[float, float]], outside: float = 0.0) -> str:
    """Cumulative cost (USD) over time as a step line: a step up at each response; then, at
    the end and dashed, `outside`: what no transcript line carries (it has no time), so the
    chart ends at the session's whole cost."""
    start, end = points[0][0], points[-1][0]
    span = max(end - start, 1e-9)
    read = points[-1][1]
    top = max(read + outside, 1e-9)
    plot_w, plot_h = CHART_W - CHART_LEFT - 20, CHART_H - CHART_BOTTOM - 20

    def x_of(at: float) -> float:
        return CHART_LEFT + (at - start) / span * plot_w if end > start else CHART_LEFT + plot_w

    def y_of(cost: float) -> float:
        return 20 + plot_h - cost / top * plot_h

    base_y = 20 + plot_h
    path = [f"M{CHART_LEFT} {base_y:.1f}"]
    path += [f"H{x_of(at):.1f} V{y_of(cost):.1f}" for at, cost in points]
    path.append(f"H{CHART_LEFT + plot_w}")
    dots = "".join(
        f'<circle cx="{x_of(at):.1f}" cy="{y_of(cost):.1f}" r="2.5" fill="#0f766e">'
        f"<title>{esc(when(at))}: {esc(usd(cost))}</title></circle>"
        for at, cost in points
    )
    right = CHART_LEFT + plot_w
    beyond = (
        f'<g class="cost-outside"><title>{OUTSIDE_LABEL}: {esc(usd(outside))} (no time of'
        f" its own)</title>"
        f'<line x1="{right}" y1="{y_of(read):.1f}" x2="{right}" y2="{y_of(top):.1f}"'
        f' stroke="{OUTSIDE_COLOUR}" stroke-width="2" stroke-dasharray="4 3"/>'
        f'<text x="{right - 6}" y="{(y_of(read) + y_of(top)) / 2 + 4:.1f}" font-size="11"'
        f' fill="{OUTSIDE_COLOUR}" text-anchor="end">+{esc(usd(outside))} {OUTSIDE_LABEL}'
        "</text></g>"
        if outside > 0
        else ""
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="cost-chart" width="{CHART_W}"'
        f' height="{CHART_H}" viewBox="0 0 {CHART_W} {CHART_H}" role="img"'
        ' aria-label="cost over the session">'
        f'<line x1="{CHART_LEFT}" y1="20" x2="{CHART_LEFT}" y2="{base_y}" stroke="#94a3b8"/>'
        f'<line x1="{CHART_LEFT}" y1="{base_y}" x2="{CHART_LEFT + plot_w}" y2="{base_y}"'
        ' stroke="#94a3b8"/>'
        f'<text x="{CHART_LEFT - 6}" y="24" font-size="11" fill="#334155"'
        f' text-anchor="end">{esc(usd(read + outside))}</text>'
        f'<text x="{CHART_LEFT - 6}" y="{base_y}" font-size="11" fill="#334155"'
        ' text-anchor="end">$0</text>'
        f'<text x="{CHART_LEFT}" y="{base_y + 18}" font-size="11" fill="#64748b">'
        f"{esc(when(start))}</text>"
        f'<text x="{CHART_LEFT + plot_w}" y="{base_y + 18}" font-size="11" fill="#64748b"'
        f' text-anchor="end">{esc(when(end))}</text>'
        f'<path class="cost-line" d="{" ".join(path)}" fill="none" stroke="#0f766e"'
        ' stroke-width="2"/>'
        f"{dots}{beyond}</svg>"
    )


def hooks_ms(found: dict[str, float] | None) -> str:
    if not found:
        return "-"
    return f"{found['hooks_ms']:.0f} ms (ours {found['ours_ms']:.0f})"


def hooks_chart(turns: list[dict[str, Any]], hooks: dict[int, dict[str, float]]) -> str:
    """Per turn, two bars side by side: its cost and Claude Code's time in its hooks (ours
    the darker part), each scaled to its own largest turn."""
    top_cost = max((float(t["cost_usd"] or 0) for t in turns), default=0.0) or 1e-9
    top_ms = max((h["hooks_ms"] for h in hooks.values()), default=0.0) or 1e-9
    slot, plot_h, base_y = 36, 120, 140
    width = CHART_LEFT + slot * len(turns) + 20
    bars = []
    for i, t in enumerate(turns):
        x = CHART_LEFT + i * slot + 6
        cost = float(t["cost_usd"] or 0)
        found = hooks.get(t["turn"]) or {"hooks_ms": 0.0, "ours_ms": 0.0}
        h_cost = cost / top_cost * plot_h
        h_all = found["hooks_ms"] / top_ms * plot_h
        h_ours = found["ours_ms"] / top_ms * plot_h
        bars.append(
            f'<rect class="cost-bar" x="{x}" y="{base_y - h_cost:.1f}" width="11"'
            f' height="{h_cost:.1f}" fill="#0f766e"><title>turn {esc(t["turn"])}:'
            f" {esc(usd(t['cost_usd']))}</title></rect>"
            f'<rect class="hooks-bar" x="{x + 12}" y="{base_y - h_all:.1f}" width="11"'
            f' height="{h_all:.1f}" fill="#fdba74"><title>turn {esc(t["turn"])}:'
            f" {esc(hooks_ms(found))} in hooks</title></rect>"
            f'<rect x="{x + 12}" y="{base_y - h_ours:.1f}" width="11" height="{h_ours:.1f}"'
            ' fill="#ea580c"/>'
            f'<text x="{x + 11}" y="{base_y + 14}" font-size="10" fill="#64748b"'
            f' text-anchor="middle">{esc(t["turn"])}</text>'
        )
    return (
        f'<div class="box"><svg xmlns="http://www.w3.org/2000/svg" class="hooks-chart"'
        f' width="{width}" height="{base_y + 24}" role="img"'
        ' aria-label="cost and time in hooks per turn">'
        f'<text x="{CHART_LEFT - 6}" y="{base_y - plot_h + 4}" font-size="11" fill="#334155"'
        f' text-anchor="end">{esc(f"{top_ms:.0f} ms")}</text>'
        f'<line x1="{CHART_LEFT}" y1="{base_y}" x2="{width - 20}" y2="{base_y}"'
        ' stroke="#94a3b8"/>'
        f"{''.join(bars)}</svg></div>"
        "<p class=muted>Per turn: its cost (teal, scaled to the costliest turn) beside the time"
        " Claude Code spent in its hooks (orange, ours the darker part; scaled to the slowest"
        " turn), as Claude Code timed them in its transcripts (`claude-session hooks`).</p>"
    )
