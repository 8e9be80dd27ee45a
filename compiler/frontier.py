"""The time-cost frontier of a cluster question as an SVG picture (`parc report`).

Every cluster `parc search` evaluated (compiler/search/cluster.py) with a known cost is a dot at
(cost of the run, time to train); the Pareto frontier (no other cluster is both faster and
cheaper) is joined by a line and each of its points is labelled with its cluster and GPU; the
answer is ringed. Points off the frontier are light, named by their hover title. Axes are in
human units (dollars with k/M/B, days or hours), on a log scale where the values span more than a
factor of three. Label boxes are placed greedily (right, left, above, below the dot) so that none
overlaps another label, a dot, the frontier's line or the picture's edge; a label with no free place is replaced by
its number, and the table under the picture names every point.
"""

from __future__ import annotations

import math

from .budget import days_text, dollars
from .svg import Element, el, number

WIDTH, HEIGHT = 820, 440
LEFT, RIGHT, TOP, BOTTOM = 84, 24, 16, 52
LABEL_PX = 11
FRONTIER = "#1f5fbf"
OTHER = "#9aa3b2"
CHOSEN = "#d62728"


def _text_width(text: str) -> float:
    from .report import text_width

    return text_width(text, LABEL_PX)


class Scale:
    """Values to pixels along one axis: log when the values span more than 3x, else linear."""

    def __init__(self, low: float, high: float, start: float, end: float):
        self.log = high > 3 * low > 0
        if self.log:
            self.low, self.high = math.log10(low) - 0.08, math.log10(high) + 0.08
        else:
            pad = (high - low) * 0.08 or max(abs(high) * 0.05, 1e-9)
            self.low, self.high = low - pad, high + pad
        self.start, self.end = start, end

    def __call__(self, value: float) -> float:
        v = math.log10(value) if self.log else value
        return self.start + (v - self.low) / (self.high - self.low) * (self.end - self.start)

    def ticks(self) -> list[float]:
        if self.log:
            out = []
            for decade in range(math.floor(self.low), math.ceil(self.high) + 1):
                for m in (1, 2, 5):
                    v = m * 10.0**decade
                    if self.low <= math.log10(v) <= self.high:
                        out.append(v)
            return out
        span = self.high - self.low
        raw = span / 5
        mag = 10 ** math.floor(math.log10(raw))
        step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
        first = math.ceil(self.low / step) * step
        return [first + i * step for i in range(int((self.high - first) / step) + 1) if first + i * step > 0]


def point_name(point) -> str:
    return f"{point.probe.nodes:,} nodes of {point.probe.gpu}"


def _overlaps(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def frontier_picture(points: list, chosen) -> tuple[Element, list]:
    """(the SVG, the points drawn in order, numbered from 1)."""
    drawn = [p for p in points if p.ok and p.cost is not None]
    svg = el("svg", {"xmlns": "http://www.w3.org/2000/svg", "width": WIDTH, "height": HEIGHT,
                     "viewBox": f"0 0 {WIDTH} {HEIGHT}", "class": "frontier", "role": "img",
                     "aria-label": "time to train against cost of the clusters tried"})
    if not drawn:
        return svg, drawn
    x = Scale(min(p.cost for p in drawn), max(p.cost for p in drawn), LEFT, WIDTH - RIGHT)
    y = Scale(min(p.days for p in drawn), max(p.days for p in drawn), HEIGHT - BOTTOM, TOP)
    base, right = HEIGHT - BOTTOM, WIDTH - RIGHT
    for v in y.ticks():
        py = y(v)
        svg.add(el("line", {"x1": LEFT, "y1": py, "x2": right, "y2": py, "stroke": "#e5e8ee"}))
        svg.add(el("text", {"x": LEFT - 6, "y": py + 4, "text-anchor": "end", "class": "label small tick"},
                   days_text(v)))
    for v in x.ticks():
        px = x(v)
        svg.add(el("line", {"x1": px, "y1": TOP, "x2": px, "y2": base, "stroke": "#e5e8ee"}))
        svg.add(el("text", {"x": px, "y": base + 16, "text-anchor": "middle", "class": "label small tick"},
                   dollars(v)))
    svg.add(el("line", {"x1": LEFT, "y1": base, "x2": right, "y2": base, "stroke": "#5b6575"}))
    svg.add(el("line", {"x1": LEFT, "y1": TOP, "x2": LEFT, "y2": base, "stroke": "#5b6575"}))
    svg.add(el("text", {"x": (LEFT + right) / 2, "y": HEIGHT - 8, "text-anchor": "middle", "class": "label"},
               "cost of the run" + (" (log scale)" if x.log else "")))
    svg.add(el("text", {"x": 14, "y": (TOP + base) / 2, "text-anchor": "middle", "class": "label",
                        "transform": f"rotate(-90 14 {number((TOP + base) / 2)})"},
               "time to train" + (" (log scale)" if y.log else "")))
    front = sorted((p for p in drawn if p.frontier), key=lambda p: p.cost)
    if len(front) > 1:
        svg.add(el("polyline", {"points": " ".join(f"{number(x(p.cost))},{number(y(p.days))}" for p in front),
                                "fill": "none", "stroke": FRONTIER, "stroke-width": 1.5}))
    taken = [(x(p.cost) - 5, y(p.days) - 5, x(p.cost) + 5, y(p.days) + 5) for p in drawn]
    taken += _line_boxes([(x(p.cost), y(p.days)) for p in front])
    labels = el("g", {"class": "pointlabels"})
    for index, p in enumerate(drawn, start=1):
        px, py = x(p.cost), y(p.days)
        colour = CHOSEN if p is chosen else FRONTIER if p.frontier else OTHER
        title = (f"#{index} {point_name(p)} ({p.probe.gpus:,} GPUs), {p.layout}: {days_text(p.days)}, "
                 f"{dollars(p.cost)}" + (" (the answer)" if p is chosen else "")
                 + (", on the frontier" if p.frontier else ""))
        dot = el("g", {"class": "point" + (" chosen" if p is chosen else "") + (" front" if p.frontier else "")},
                 el("title", None, title),
                 el("circle", {"cx": px, "cy": py, "r": 4 if p.frontier or p is chosen else 3, "fill": colour}))
        if p is chosen:
            dot.add(el("circle", {"cx": px, "cy": py, "r": 8, "fill": "none", "stroke": CHOSEN, "stroke-width": 2}))
        svg.add(dot)
    # the answer's label is placed first, so that it always gets a spot of its own
    numbered = sorted(enumerate(drawn, start=1), key=lambda item: item[1] is not chosen)
    for index, p in numbered:
        if not (p.frontier or p is chosen):
            continue
        px, py = x(p.cost), y(p.days)
        choices = [point_name(p) + " (answer)", "answer"] if p is chosen else [point_name(p), f"#{index}"]
        for text in choices:
            placed = _place(text, px, py, taken)
            if placed is not None:
                break
        if placed is None:
            continue
        (tx, ty, anchor), box = placed
        taken.append(box)
        labels.add(el("text", {"x": tx, "y": ty, "text-anchor": anchor,
                               "class": "label pointlabel" + (" answer" if p is chosen else ""),
                               "fill": CHOSEN if p is chosen else "#1d2430"}, text))
    svg.add(labels)
    return svg, drawn


def _line_boxes(points: list[tuple[float, float]]) -> list[tuple]:
    """Small boxes along the frontier's line, so that no label is drawn across it."""
    boxes = []
    for (x1, y1), (x2, y2) in zip(points, points[1:], strict=False):
        steps = max(1, int(math.hypot(x2 - x1, y2 - y1) // 4))
        for i in range(steps + 1):
            px, py = x1 + (x2 - x1) * i / steps, y1 + (y2 - y1) * i / steps
            boxes.append((px - 1.5, py - 1.5, px + 1.5, py + 1.5))
    return boxes


def _place(text: str, px: float, py: float, taken: list) -> tuple | None:
    """The first free spot for a label next to its dot: (x, y, anchor), box; None if none."""
    w = _text_width(text)
    for dx, dy, anchor in ((10, 4, "start"), (-10, 4, "end"), (0, -10, "middle"), (0, 18, "middle"),
                           (10, -8, "start"), (10, 16, "start"), (-10, -8, "end"), (-10, 16, "end")):
        tx, ty = px + dx, py + dy
        left = tx if anchor == "start" else tx - w if anchor == "end" else tx - w / 2
        box = (left - 1, ty - LABEL_PX, left + w + 1, ty + 3)
        inside = box[0] >= LEFT + 2 and box[2] <= WIDTH - 2 and box[1] >= 0 and box[3] <= HEIGHT - BOTTOM - 2
        if inside and not any(_overlaps(box, other) for other in taken):
            return (tx, ty, anchor), box
    return None


def frontier_table(drawn: list, chosen) -> Element:
    table = el("table", {"class": "frontier-table"})
    table.add(el("tr", None, *(el("th", None, h) for h in ("#", "cluster", "GPUs", "layout", "time to train",
                                                            "cost", ""))))
    for index, p in enumerate(drawn, start=1):
        mark = "answer" if p is chosen else "frontier" if p.frontier else ""
        table.add(el("tr", None, el("td", {"class": "num"}, str(index)), el("td", None, point_name(p)),
                     el("td", {"class": "num"}, f"{p.probe.gpus:,}"), el("td", None, p.layout),
                     el("td", {"class": "num"}, days_text(p.days)), el("td", {"class": "num"}, dollars(p.cost)),
                     el("td", None, mark)))
    return table
