"""A very small SVG writer: enough for line charts, with no dependency. The output is a bare
``<svg>`` element (no XML declaration, no external reference), so it can be saved as a file or
inlined in HTML as it is."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from xml.sax.saxutils import escape, quoteattr


def _attrs(attrs: dict[str, object]) -> str:
    parts = []
    for key, value in attrs.items():
        if value is None:
            continue
        if isinstance(value, float):
            value = f"{value:.2f}".rstrip("0").rstrip(".")
        parts.append(f"{key.rstrip('_').replace('_', '-')}={quoteattr(str(value))}")
    return " ".join(parts)


@dataclass
class Svg:
    width: int
    height: int
    items: list[str] = field(default_factory=list)

    def add(self, tag: str, attrs: dict[str, object], body: str | None = None) -> None:
        """One element; attribute names use ``_`` for ``-`` (``stroke_width``)."""
        a = _attrs(attrs)
        if body is None:
            self.items.append(f"<{tag} {a}/>")
        else:
            self.items.append(f"<{tag} {a}>{escape(body)}</{tag}>")

    def line(self, x1: float, y1: float, x2: float, y2: float, **attrs: object) -> None:
        self.add("line", {"x1": x1, "y1": y1, "x2": x2, "y2": y2, **attrs})

    def polyline(self, points: list[tuple[float, float]], **attrs: object) -> None:
        path = " ".join(f"{x:.2f},{y:.2f}" for x, y in points)
        self.add("polyline", {"points": path, "fill": "none", **attrs})

    def rect(self, x: float, y: float, w: float, h: float, **attrs: object) -> None:
        self.add("rect", {"x": x, "y": y, "width": max(w, 0.0), "height": max(h, 0.0), **attrs})

    def text(self, x: float, y: float, text: str, **attrs: object) -> None:
        self.add("text", {"x": x, "y": y, **attrs}, text)

    def render(self) -> str:
        head = (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" '
            f'height="{self.height}" viewBox="0 0 {self.width} {self.height}" '
            'font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">'
        )
        background = f'<rect x="0" y="0" width="{self.width}" height="{self.height}" fill="white"/>'
        return "\n".join([head, background, *self.items, "</svg>"]) + "\n"


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values (1, 2, 2.5 or 5 × 10^k) covering [low, high]."""
    if not math.isfinite(low) or not math.isfinite(high) or high <= low:
        return [low]
    raw = (high - low) / max(count, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(low / step - 1e-9) * step
    ticks = []
    v = first
    while v <= high + step * 1e-9:
        ticks.append(round(v, 12))
        v += step
    return ticks


@dataclass(frozen=True)
class Frame:
    """A plotting area: data ranges mapped to pixels."""

    left: float
    top: float
    width: float
    height: float
    x0: float
    x1: float
    y0: float
    y1: float

    def x(self, v: float) -> float:
        return self.left + (v - self.x0) / (self.x1 - self.x0 or 1.0) * self.width

    def y(self, v: float) -> float:
        return self.top + self.height - (v - self.y0) / (self.y1 - self.y0 or 1.0) * self.height

    def clip_y(self, v: float) -> float:
        return min(max(self.y(v), self.top), self.top + self.height)

    def axes(self, svg: Svg, x_label: str, y_label: str) -> None:
        bottom = self.top + self.height
        svg.rect(self.left, self.top, self.width, self.height, fill="none", stroke="#999")
        for t in nice_ticks(self.x0, self.x1, 8):
            px = self.x(t)
            svg.line(px, bottom, px, bottom + 4, stroke="#666")
            svg.text(px, bottom + 16, f"{t:g}", text_anchor="middle", fill="#333")
        for t in nice_ticks(self.y0, self.y1, 5):
            py = self.y(t)
            svg.line(self.left, py, self.left + self.width, py, stroke="#eee")
            svg.line(self.left - 4, py, self.left, py, stroke="#666")
            svg.text(self.left - 6, py + 4, f"{t:g}", text_anchor="end", fill="#333")
        svg.text(self.left + self.width / 2, bottom + 32, x_label, text_anchor="middle")
        cx, cy = self.left - 48, self.top + self.height / 2
        svg.text(cx, cy, y_label, text_anchor="middle", transform=f"rotate(-90 {cx} {cy})")
