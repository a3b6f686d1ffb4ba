"""Small inline-SVG charts for the offline report: bars with CI whiskers, histograms, axes.

A report must open from a copied run folder with no network and print on paper, so the
charts are plain SVG strings built here rather than a plotting library or a JavaScript
bundle. Every piece of text is escaped, because labels come from user data (group names,
foundations from a corpus). A missing value never raises: it is drawn as "—".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

__all__ = ["MARGIN", "Bar", "Frame", "bar_chart", "histogram", "nice_ticks"]

MARGIN: dict[str, int] = {"top": 14, "right": 70, "bottom": 46, "left": 58}
"""Pixels around the plot area: room for tick labels, axis titles and reference-line labels."""
HIST_RIGHT = 16
"""A histogram's right margin: no reference labels there, only half a tick label."""
DASH = "—"


@dataclass(frozen=True)
class Bar:
    """One bar: a value with an optional interval; None draws an empty slot marked "—"."""

    label: str
    value: float | None
    low: float | None = None
    high: float | None = None


def _finite(x: object) -> float | None:
    """A plottable float, or None: summaries may hold None, NaN or a stray string."""
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    return float(x) if math.isfinite(x) else None


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high] with a 1/2/5 x 10^k step (about `count` steps).

    The first and last ticks become the axis ends, so the axis always starts and stops on a
    labelled value, which is what makes a printed chart readable.
    """
    if not (math.isfinite(low) and math.isfinite(high)):
        low, high = 0.0, 1.0
    if high < low:
        low, high = high, low
    if high == low:
        low, high = low - 1.0, high + 1.0
    raw = (high - low) / max(count, 1)
    magnitude = 10.0 ** math.floor(math.log10(raw))
    residual = raw / magnitude
    step = magnitude * next(s for s in (1.0, 2.0, 5.0, 10.0) if residual <= s + 1e-9)
    first = math.floor(low / step + 1e-9)
    last = math.ceil(high / step - 1e-9)
    return [round(i * step, 10) for i in range(first, last + 1)]


def _tick_label(value: float, ticks: Sequence[float]) -> str:
    step = abs(ticks[1] - ticks[0]) if len(ticks) > 1 else 1.0
    digits = max(0, -math.floor(math.log10(step) + 1e-9))
    text = f"{value:.{digits}f}"
    return "0" if float(text) == 0 else text  # no "-0.0"


@dataclass(frozen=True)
class Frame:
    """The plot area of one chart and its linear maps from data to pixels."""

    width: int
    height: int
    x_low: float
    x_high: float
    y_low: float
    y_high: float
    right_margin: int = MARGIN["right"]

    @property
    def left(self) -> float:
        return MARGIN["left"]

    @property
    def right(self) -> float:
        return self.width - self.right_margin

    @property
    def top(self) -> float:
        return MARGIN["top"]

    @property
    def bottom(self) -> float:
        return self.height - MARGIN["bottom"]

    def x(self, value: float) -> float:
        share = (value - self.x_low) / (self.x_high - self.x_low)
        return self.left + share * (self.right - self.left)

    def y(self, value: float) -> float:
        clipped = min(max(value, self.y_low), self.y_high)
        share = (clipped - self.y_low) / (self.y_high - self.y_low)
        return self.bottom - share * (self.bottom - self.top)


def _text(x: float, y: float, text: str, anchor: str = "middle", cls: str = "") -> str:
    extra = f' class="{cls}"' if cls else ""
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{extra}>{escape(text)}</text>'


def _line(x1: float, y1: float, x2: float, y2: float, cls: str) -> str:
    return f'<line class="{cls}" x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}"/>'


def _y_axis(frame: Frame, ticks: Sequence[float], title: str) -> list[str]:
    parts = [_line(frame.left, frame.top, frame.left, frame.bottom, "axis")]
    for t in ticks:
        y = frame.y(t)
        parts.append(_line(frame.left - 4, y, frame.right, y, "grid"))
        parts.append(_text(frame.left - 7, y + 4, _tick_label(t, ticks), "end", "tick"))
    mid = (frame.top + frame.bottom) / 2
    parts.append(
        f'<text class="axis-title" text-anchor="middle" '
        f'transform="translate(14,{mid:.1f}) rotate(-90)">{escape(title)}</text>'
    )
    return parts


def _open(frame: Frame, title: str) -> str:
    return (
        f'<svg class="chart" width="{frame.width}" height="{frame.height}" '
        f'viewBox="0 0 {frame.width} {frame.height}" role="img" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title>'
    )


def bar_chart(
    bars: Sequence[Bar],
    *,
    title: str,
    y_title: str,
    limits: tuple[float, float] | None = None,
    references: Sequence[tuple[float | None, str]] = (),
    width: int = 640,
    height: int = 280,
) -> str:
    """Vertical bars from zero with CI whiskers, a zero line and dashed reference lines.

    The y range follows the data (values, interval ends, references, and zero) so small
    differences stay visible; `limits` caps it, because a tiny n can give an interval far
    outside a metric's possible range. Whiskers past the range are clipped at its edge.
    """
    spans = [v for b in bars for v in (b.value, b.low, b.high)]
    spans += [r for r, _ in references]
    points = [v for v in map(_finite, spans) if v is not None] + [0.0]
    low, high = min(points), max(points)
    if limits is not None:
        low, high = max(low, limits[0]), min(high, limits[1])
    ticks = nice_ticks(low, high)
    frame = Frame(width, height, 0.0, float(max(len(bars), 1)), ticks[0], ticks[-1])
    parts = [_open(frame, title), *_y_axis(frame, ticks, y_title)]
    slot = (frame.right - frame.left) / max(len(bars), 1)
    for i, bar in enumerate(bars):
        centre = frame.x(i + 0.5)
        parts.append(_text(centre, frame.bottom + 16, bar.label, cls="tick"))
        value = _finite(bar.value)
        if value is None:
            parts.append(_text(centre, frame.y(0.0) - 4, DASH, cls="missing"))
            continue
        y0, y1 = frame.y(0.0), frame.y(value)
        half = slot * 0.3
        parts.append(
            f'<rect class="bar" x="{centre - half:.1f}" y="{min(y0, y1):.1f}" '
            f'width="{2 * half:.1f}" height="{abs(y1 - y0):.1f}"/>'
        )
        lo, hi = _finite(bar.low), _finite(bar.high)
        if lo is not None and hi is not None:
            ylo, yhi, cap = frame.y(lo), frame.y(hi), slot * 0.12
            parts.append(_line(centre, ylo, centre, yhi, "whisker"))
            parts.append(_line(centre - cap, ylo, centre + cap, ylo, "whisker"))
            parts.append(_line(centre - cap, yhi, centre + cap, yhi, "whisker"))
    if ticks[0] <= 0.0 <= ticks[-1]:
        parts.append(_line(frame.left, frame.y(0.0), frame.right, frame.y(0.0), "zero"))
    for value, label in references:
        ref = _finite(value)
        if ref is not None:
            y = frame.y(ref)
            parts.append(_line(frame.left, y, frame.right, y, "ref"))
            parts.append(_text(frame.right + 4, y + 4, label, "start", "ref-label"))
    parts.append("</svg>")
    return "".join(parts)


def histogram(
    edges: Sequence[float],
    counts: Sequence[int],
    *,
    title: str,
    x_title: str,
    scale: float = 1.0,
    width: int = 300,
    height: int = 170,
) -> str:
    """Adjacent bins from the summary's (edges, counts); x ticks are shown times `scale`.

    Malformed or empty input gives a framed "no data" chart rather than an error: a report
    of a half-finished run is still worth reading.
    """
    x = [v for v in map(_finite, edges) if v is not None]
    y = [v for v in map(_finite, counts) if v is not None]
    complete = len(x) == len(edges) and len(y) == len(counts)
    if not (complete and len(x) == len(y) + 1 and any(y) and x[-1] > x[0]):
        frame = Frame(width, height, 0.0, 1.0, 0.0, 1.0, HIST_RIGHT)
        mid_x, mid_y = (frame.left + frame.right) / 2, (frame.top + frame.bottom) / 2
        return _open(frame, title) + _text(mid_x, mid_y, "no data", cls="missing") + "</svg>"
    y_ticks = [t for t in nice_ticks(0.0, max(y), 4) if t == int(t)] or [0.0, max(y)]
    frame = Frame(width, height, x[0], x[-1], 0.0, max(y_ticks[-1], max(y)), HIST_RIGHT)
    parts = [_open(frame, title), *_y_axis(frame, y_ticks, "count")]
    for left, right, count in zip(x[:-1], x[1:], y, strict=True):
        if count > 0:
            top = frame.y(count)
            parts.append(
                f'<rect class="bin" x="{frame.x(left):.1f}" y="{top:.1f}" '
                f'width="{max(frame.x(right) - frame.x(left) - 1, 0.5):.1f}" '
                f'height="{frame.bottom - top:.1f}"/>'
            )
    parts.append(_line(frame.left, frame.bottom, frame.right, frame.bottom, "axis"))
    lo, hi = x[0] * scale, x[-1] * scale
    x_ticks = nice_ticks(lo, hi, 4)
    for t in (t for t in x_ticks if lo - 1e-9 <= t <= hi + 1e-9):
        px = frame.x(t / scale)
        parts.append(_line(px, frame.bottom, px, frame.bottom + 4, "axis"))
        parts.append(_text(px, frame.bottom + 15, _tick_label(t, x_ticks), cls="tick"))
    parts.append(_text((frame.left + frame.right) / 2, height - 8, x_title, cls="axis-title"))
    parts.append("</svg>")
    return "".join(parts)
