"""Charts drawn on the server as inline SVG: tokens and cost per turn, and tool durations.

Each function returns SVG markup (or "" when there is nothing to draw). Every text inside is escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

from alpineagents._turn.program import PROGRAM
from alpineagents.types import HistoryEntry, ModelReplyEntry
from alpineagents.viewer.timeline import Item, duration_text

WIDTH = 640
BAR_AREA = 150
LEFT = 64
SERIES = (
    ("input", "#4c78a8"),
    ("cache read", "#9ecae9"),
    ("cache write", "#f58518"),
    ("output", "#54a24b"),
)
"""The token kinds stacked in each bar, bottom to top, with their colours."""


@dataclass(frozen=True)
class Turn:
    """The usage of one model reply."""

    label: str
    tokens: tuple[int, int, int, int]
    cost: float | None


def turns(history: Sequence[HistoryEntry]) -> list[Turn]:
    """The usage of each model reply, in order (a call the program made with run_tool has none: it is left out)."""
    found: list[Turn] = []
    for entry in history:
        if isinstance(entry, ModelReplyEntry) and entry.content.model != PROGRAM:  # not a call the program made
            usage = entry.content.usage
            tokens = (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens, usage.output_tokens)
            found.append(Turn(str(entry.turn), tokens, usage.cost))
    return found


def _nice(top: float) -> float:
    """A round number at least `top`, for the top of an axis."""
    if top <= 0:
        return 1.0
    step = 10 ** (len(str(int(top))) - 1)
    return float(-(-top // step) * step)


def _frame(title: str, height: int, body: list[str], legend: str = "") -> Markup:
    lines = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{escape(title)}"'
        ' xmlns="http://www.w3.org/2000/svg">',
        f'<text x="4" y="14" class="chart-title">{escape(title)}</text>',
        legend,
        *body,
        "</svg>",
    ]
    return Markup("\n".join(lines))


def _axis(top: float, unit: str) -> list[str]:
    base = 20 + BAR_AREA
    return [
        f'<line x1="{LEFT}" y1="{base}" x2="{WIDTH - 4}" y2="{base}" class="axis"/>',
        f'<text x="{LEFT - 4}" y="28" text-anchor="end" class="tick">{escape(_short(top, unit))}</text>',
        f'<text x="{LEFT - 4}" y="{base}" text-anchor="end" class="tick">0</text>',
    ]


def _short(value: float, unit: str) -> str:
    if unit == "$":
        return f"${value:.4g}"
    return f"{value / 1000:.0f}k" if value >= 10_000 else f"{value:.0f}"


def token_chart(data: Sequence[Turn]) -> Markup:
    """Stacked bars of the tokens of each turn: input, cache read, cache write, output."""
    if not data:
        return Markup("")
    top = _nice(max(sum(turn.tokens) for turn in data))
    slot = (WIDTH - LEFT - 8) / len(data)
    body = _axis(top, "tokens")
    for index, turn in enumerate(data):
        x = LEFT + 4 + index * slot
        y = 20 + BAR_AREA
        for (name, colour), count in zip(SERIES, turn.tokens, strict=True):
            height = BAR_AREA * count / top
            y -= height
            body.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(slot - 4, 1):.1f}" height="{height:.1f}" fill="{colour}">'
                f"<title>turn {escape(turn.label)}: {count} {name} tokens</title></rect>"
            )
        body.append(_bar_label(x + slot / 2 - 2, turn.label, len(data)))
    legend = "".join(
        f'<rect x="{200 + i * 100}" y="5" width="10" height="10" fill="{c}"/>'
        f'<text x="{214 + i * 100}" y="14" class="tick">{n}</text>'
        for i, (n, c) in enumerate(SERIES)
    )
    return _frame("tokens per turn", 20 + BAR_AREA + 22, body, legend)


def _bar_label(x: float, label: str, count: int) -> str:
    if count > 40:
        return ""
    return f'<text x="{x:.1f}" y="{20 + BAR_AREA + 14}" text-anchor="middle" class="tick">{escape(label)}</text>'


def cost_chart(data: Sequence[Turn], total: float | None = None) -> Markup:
    """Bars of the cost of each turn, or "" when no turn has a known cost. `total` is the run's cost with its
    subagents' (the header's): when it differs, the title says what the bars leave out."""
    costs = [turn.cost or 0.0 for turn in data]
    if not any(turn.cost is not None for turn in data) or not any(costs):
        return Markup("")
    top = max(costs) * 1.1
    slot = (WIDTH - LEFT - 8) / len(data)
    body = _axis(top, "$")
    for index, (turn, cost) in enumerate(zip(data, costs, strict=True)):
        x = LEFT + 4 + index * slot
        height = BAR_AREA * cost / top
        body.append(
            f'<rect x="{x:.1f}" y="{20 + BAR_AREA - height:.1f}" width="{max(slot - 4, 1):.1f}" '
            f'height="{height:.1f}" fill="#b279a2"><title>turn {escape(turn.label)}: ${cost:.4f}</title></rect>'
        )
        body.append(_bar_label(x + slot / 2 - 2, turn.label, len(data)))
    own = sum(costs)
    title = f"cost per turn (total ${own:.4f})"
    if total is not None and abs(total - own) >= 0.00005:
        title = f"cost per turn of this run's own requests (${own:.4f}; with its subagents' ${total:.4f})"
    return _frame(title, 20 + BAR_AREA + 22, body)


def duration_chart(items: Sequence[Item]) -> Markup:
    """One horizontal bar per tool call that ran, as long as it took."""
    timed = [item for item in items if item.kind == "tool_result" and item.duration is not None]
    if not timed:
        return Markup("")
    top = max(item.duration or 0.0 for item in timed) or 1.0
    row = 18
    label_width = 200
    body: list[str] = []
    for index, item in enumerate(timed[:60]):
        y = 24 + index * row
        seconds = item.duration or 0.0
        width = (WIDTH - label_width - 70) * seconds / top
        name = item.label if len(item.label) <= 30 else item.label[:29] + "…"
        body.append(
            f'<text x="{label_width - 6}" y="{y + 12}" text-anchor="end" class="tick">{escape(name)}</text>'
            f'<rect x="{label_width}" y="{y + 2}" width="{max(width, 1):.1f}" height="{row - 5}" '
            f'class="bar-{escape(item.tone or "plain")}"><title>{escape(item.label)}: {duration_text(seconds)}</title></rect>'
            f'<text x="{label_width + width + 4:.1f}" y="{y + 12}" class="tick">{duration_text(seconds)}</text>'
        )
    return _frame("tool durations", 30 + len(timed[:60]) * row, body)
