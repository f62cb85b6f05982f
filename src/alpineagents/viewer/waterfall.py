"""The waterfall of a run: each model request and each tool call on one time axis, with the subagent runs a call
started nested under it, and each duration to the millisecond (the history keeps every entry's time to the
microsecond).

A request lasts from its `model_request` entry to its reply; a tool call from the moment it was ready (see
`timeline`) to its result. A subagent's rows come from its own saved run, one level deeper.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from markupsafe import Markup, escape

from alpineagents.viewer.timeline import Item, duration_text

MAX_DEPTH = 8
"""Subagents nested deeper than this are not drawn (a guard against a damaged store that links in a circle)."""

MAX_ROWS = 400
"""At most this many rows are drawn; a longer run says how many were left out."""

WIDTH = 1000
ROW = 18
LABEL_WIDTH = 330


@dataclass(frozen=True)
class Span:
    """One row: what ran, from when to when, how deep, and its colour (`tone`)."""

    label: str
    start: datetime
    end: datetime
    depth: int
    tone: str
    run_id: str
    seq: int

    @property
    def seconds(self) -> float:
        return (self.end - self.start).total_seconds()


def spans(
    run_id: str,
    items: Sequence[Item],
    children: Callable[[str], Sequence[Item] | None],
    depth: int = 0,
    path: frozenset[str] = frozenset(),
) -> list[Span]:
    """The rows of one run's timeline `items`, each tool call followed by the rows of the subagent runs it started
    (`children(id)` gives a child run's items, or None when it cannot be read)."""
    found: list[Span] = []
    for item in items:
        if item.duration is None:
            continue
        start = item.at - timedelta(seconds=item.duration)
        tone = "request" if item.kind == "model_reply" else (item.tone or "plain")
        label = item.label if item.kind != "model_reply" else item.label.replace("reply from", "request to", 1)
        found.append(Span(label, start, item.at, depth, tone, run_id, item.seq))
        if depth + 1 > MAX_DEPTH:
            continue
        for child_id in item.links if item.kind == "tool_result" else []:
            if child_id in path:
                continue
            child = children(child_id)
            if child is not None:
                found += spans(child_id, child, children, depth + 1, path | {child_id})
    return found


def chart(rows: Sequence[Span], link: Callable[[str], str], own: str) -> Markup:
    """The waterfall of the run `own` as inline SVG ("" without any timed row). Each bar links to its entry: on
    this page for the run's own rows, on the subagent's page (`link(id)`) for the others."""
    if not rows:
        return Markup("")
    shown = list(rows[:MAX_ROWS])
    origin = min(span.start for span in shown)
    total = max((max(span.end for span in shown) - origin).total_seconds(), 0.001)
    scale = (WIDTH - LABEL_WIDTH - 90) / total
    body: list[str] = [
        f'<text x="{LABEL_WIDTH}" y="30" class="tick">0</text>',
        f'<text x="{WIDTH - 90}" y="30" text-anchor="end" class="tick">{escape(duration_text(total))}</text>',
        f'<line x1="{LABEL_WIDTH}" y1="34" x2="{WIDTH - 90}" y2="34" class="axis"/>',
    ]
    for index, span in enumerate(shown):
        y = 40 + index * ROW
        x = LABEL_WIDTH + (span.start - origin).total_seconds() * scale
        width = max(span.seconds * scale, 1.5)
        name = ("  " * span.depth) + (span.label if len(span.label) <= 44 else span.label[:43] + "…")
        target = "" if span.run_id == own else link(span.run_id)
        entry = f"{span.run_id}-e{span.seq}"
        anchor = f"{target.split('#')[0]}#{entry}" if target else f"#{entry}"
        text = duration_text(span.seconds)
        body.append(
            f'<g class="span depth-{span.depth}" data-run="{escape(span.run_id)}" data-seq="{span.seq}">'
            f'<text x="{6 + span.depth * 12}" y="{y + 12}" class="tick span-label">{escape(name.strip())}</text>'
            f'<a href="{escape(anchor)}"><rect x="{x:.1f}" y="{y + 2}" width="{width:.1f}" height="{ROW - 5}" '
            f'class="bar-{escape(span.tone)}"><title>{escape(span.label)}: {escape(text)}</title></rect></a>'
            f'<text x="{x + width + 4:.1f}" y="{y + 12}" class="tick span-time">{escape(text)}</text></g>'
        )
    title = "waterfall: model requests and tool calls on one time axis, subagents nested"
    if len(rows) > len(shown):
        title += f" (the first {len(shown)} of {len(rows)})"
    height = 48 + len(shown) * ROW
    lines = [
        f'<svg class="chart waterfall" viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{escape(title)}"'
        ' xmlns="http://www.w3.org/2000/svg">',
        f'<text x="4" y="14" class="chart-title">{escape(title)}</text>',
        *body,
        "</svg>",
    ]
    return Markup("\n".join(lines))
