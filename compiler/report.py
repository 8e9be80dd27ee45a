"""`parc report`: one self-contained HTML page that shows a layout, for review.

Four pictures, each built as data with `svg.py` and drawn from facts computed elsewhere:

- the device grid: every GPU, node by node, coloured by pipeline stage, with tp, cp and ep
  groups outlined and a band for the dp replica; hover (an SVG <title>, and a line of text a
  tiny inline script fills) names a rank's coordinates. Past `DETAIL_GPUS` GPUs the first nodes
  are drawn in full and an overview draws one cell per node, so 16,384 GPUs stay readable;
- the pipeline schedule: forward, backward and weight-gradient blocks per stage across
  micro-batches, placed by `schedule.py` with the time model's per-chunk times; idle time is
  hatched, so the bubble shows;
- memory per stage as stacked bars against the usable HBM (`parc explain`'s memory section),
  with the moment of the schedule that sets each stage's peak in a table and in each bar's hover;
- the step-time breakdown (`parc explain`'s time section), and with a training budget in the
  spec the whole run's days, GPU-hours and cost in the same breakdown (`parc explain`'s budget).

The page needs nothing from the network (no fonts, scripts or images from elsewhere), carries no
timestamp, and is byte-identical for the same spec and parc version.
"""

from __future__ import annotations

import math
from typing import Any

from . import budget as run_budget
from .diagnostics import Style, render_text
from .explain import moment_text
from .human import count, percent
from .human import size as gib
from .pipeline import Compilation
from .plan import Plan
from .svg import Element, el, number, render

DETAIL_GPUS = 512
"""Up to this many GPUs every GPU is drawn; beyond, the first nodes in detail plus an overview."""
TIMELINE_BLOCKS_PER_STAGE = 160
"""Most blocks the schedule picture draws on one stage's row, so each stays wide enough to read;
longer steps show whole rounds of micro-batches (`drawable_microbatches`)."""
GiB = 1 << 30

INK = "#1d2430"
MUTED = "#5b6575"
GRID = "#d9dee7"
KIND_COLOURS = {"F": "#4c78a8", "B": "#54a24b", "I": "#72b7b2", "W": "#f2a93b"}
SECOND_CHUNK_COLOURS = {"F": "#a6c4e0", "B": "#a9d6a4", "I": "#b9dedb", "W": "#f8d59c"}
"""The same kinds, lighter, for a rank's second (and later) chunks."""
KIND_NAMES = {"F": "forward", "B": "backward (input and weight gradients)", "I": "backward, input gradients",
              "W": "backward, weight gradients"}
MEMORY_PARTS = (("params_bytes", "parameters", "#4c78a8"), ("grads_bytes", "gradients", "#72b7b2"),
                ("optimizer_bytes", "optimizer states", "#b279a2"), ("activations_bytes", "activations", "#f58518"),
                ("buffers_bytes", "buffers", "#9d9d9d"))
TIME_PARTS = (("compute_seconds", "compute", "#4c78a8"), ("recompute_seconds", "recompute", "#72b7b2"),
              ("bubble_seconds", "bubble", "#d9d9d9"), ("tp", "tp exposed", "#e45756"),
              ("cp", "cp exposed", "#b279a2"), ("ep", "ep exposed", "#ff9da6"), ("pp", "pp exposed", "#9d755d"),
              ("dp", "dp exposed", "#f58518"), ("optimizer_seconds", "optimizer", "#54a24b"),
              ("offload_seconds", "offload", "#a6c4e0"), ("dp_copy_seconds", "dp copies", "#bab0ac"))
"""The step's parts; "offload" (activation offloading's copies) and "dp copies" (the data-parallel
runtime's own copies) only where the step has them."""
HOVER_AXES = ("tp", "cp", "ep", "dp")
"""Axes whose group the page highlights when a GPU is hovered."""
LIGHT = frozenset({"#d9d9d9", "#ff9da6", "#72b7b2", "#f2a93b", "#a6c4e0", "#a9d6a4", "#b9dedb", "#f8d59c"})
"""Fills light enough to need dark text."""
GROUP_STYLES = {
    "tp": {"stroke": "#111111", "stroke-width": 2, "offset": 1.5, "dash": None},
    "cp": {"stroke": "#1f5fbf", "stroke-width": 2, "offset": 3, "dash": "4 2"},
    "ep": {"stroke": "#c0267d", "stroke-width": 1.5, "offset": 4.5, "dash": "2 2"},
}


# ---------------------------------------------------------------------------------------------
# Colours and numbers


STAGE_PALETTE = ("#e69f00", "#56b4e9", "#0072b2", "#f0e442", "#cc79a7", "#d55e00", "#009e73")
"""Okabe and Ito's colour-blind-safe colours (2008; their black left out: outlines are dark),
ordered so that neighbours stay furthest apart for protan, deutan and tritan viewers too."""
STAGE_SHADES = (0.0, 0.3, -0.4)
"""Each round of seven stages is mixed toward white (+) or black (-) by this much, so stages 0,
7 and 14 differ as well; neighbours always differ in hue."""


def stage_colour(stage: int, stages: int) -> str:
    """A stage's colour: neighbouring stages differ in hue from a colour-blind-safe palette, and
    stages a palette apart differ in lightness; the same stage has the same colour at any pp."""
    r, g, b = (int(STAGE_PALETTE[stage % 7][i:i + 2], 16) for i in (1, 3, 5))
    t = STAGE_SHADES[(stage // 7) % len(STAGE_SHADES)]
    mixed = [round(c + (255 - c) * t) if t > 0 else round(c * (1 + t)) for c in (r, g, b)]
    return "#" + "".join(f"{c:02x}" for c in mixed)


def seconds(value: float) -> str:
    if value == 0:
        return "0"
    if value >= 1:
        return f"{value:,.2f} s"
    if value >= 1e-3:
        return f"{value * 1e3:,.3g} ms"
    return f"{value * 1e6:,.3g} us"


LABEL_PX = 10
"""Font size of the labels inside blocks and bar segments (`svg text.blocklabel`)."""

_NARROW, _WIDE = set("ijlft.,:;|!() '"), set("mwMW%@=<>^~#&+")


def text_width(text: str, font_px: float = LABEL_PX) -> float:
    """An upper bound on the width of `text` in pixels: advance widths per class of character,
    each at least DejaVu Sans's (the widest common UI sans font, Debian's default for system-ui):
    narrow 0.40 em, wide 1.0 em, other capitals 0.80 em, the rest 0.64 em (digits are 0.636)."""
    em = 0.0
    for ch in text:
        em += 0.40 if ch in _NARROW else 1.0 if ch in _WIDE else 0.80 if ch.isupper() else 0.64
    return em * font_px


def fitting_label(width: float, *choices: str) -> str | None:
    """The first label that fits inside a segment `width` pixels wide (2 px either side), or None:
    a label must never run over its segment's edges (the title still says everything)."""
    for text in choices:
        if text_width(text) + 4 <= width:
            return text
    return None


# ---------------------------------------------------------------------------------------------
# The device grid


def _node_shape(gpn: int) -> tuple[int, int]:
    """(columns, rows) of one node's cells: up to 16 across."""
    columns = min(gpn, 16)
    return columns, math.ceil(gpn / columns)


def _runs(cells: list[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """Maximal horizontal runs (row, first column, last column) of a set of (row, column) cells."""
    runs = []
    for row in sorted({r for r, _ in cells}):
        columns = sorted(c for r, c in cells if r == row)
        start = prev = columns[0]
        for c in columns[1:]:
            if c != prev + 1:
                runs.append((row, start, prev))
                start = c
            prev = c
        runs.append((row, start, prev))
    return runs


def _group_key(plan: Plan, axis: str, rank: int) -> tuple[int, ...] | None:
    degree = plan.layout.degree(axis) or 1
    if degree <= 1:
        return None
    return plan.layout.group(axis, rank)


def device_grid(plan: Plan) -> tuple[Element, dict[str, Any]]:
    """The GPUs of the first nodes (all of them up to DETAIL_GPUS), and facts for the caption."""
    layout = plan.layout
    gpn = plan.cluster.gpus_per_node
    world = plan.cluster.world_size
    nodes = world // gpn if world % gpn == 0 else math.ceil(world / gpn)
    detail_nodes = max(1, min(nodes, DETAIL_GPUS // gpn)) if world > DETAIL_GPUS else nodes
    shown = min(world, detail_nodes * gpn)
    pp = layout.degree("pp") or 1
    cols, rows = _node_shape(gpn)
    cell, gap = 18, 7
    node_w = cols * (cell + gap) + gap
    node_h = rows * (cell + gap) + gap
    per_column = 16 if detail_nodes > 16 else detail_nodes
    columns_of_nodes = math.ceil(detail_nodes / per_column)
    label_w = 58
    width = label_w + columns_of_nodes * (node_w + label_w) - label_w + 12
    height = per_column * (node_h + 6) + 8
    dp_degree = layout.degree("dp") or 1

    def place(rank: int) -> tuple[float, float, int, int]:
        node, gpu = divmod(rank, gpn)
        block, slot = divmod(node, per_column)
        row_in_node, col_in_node = divmod(gpu, cols)
        x0 = label_w + block * (node_w + label_w)
        y0 = 4 + slot * (node_h + 6)
        x = x0 + gap + col_in_node * (cell + gap)
        y = y0 + gap + row_in_node * (cell + gap)
        visual_row = (block, slot, row_in_node)
        return x, y, hash_row(visual_row), col_in_node

    def hash_row(key: tuple[int, int, int]) -> int:
        block, slot, row = key
        return (block * per_column + slot) * rows + row

    svg = el("svg", {"xmlns": "http://www.w3.org/2000/svg", "width": width, "height": height,
                     "viewBox": f"0 0 {number(width)} {number(height)}", "class": "grid", "role": "img",
                     "aria-label": f"device grid: ranks 0 to {shown - 1}"})
    frames = el("g", {"class": "nodes"})
    for node in range(detail_nodes):
        block, slot = divmod(node, per_column)
        x0 = label_w + block * (node_w + label_w)
        y0 = 4 + slot * (node_h + 6)
        frames.add(el("rect", {"x": x0, "y": y0, "width": node_w, "height": node_h, "rx": 4,
                               "fill": "#f6f7f9", "stroke": GRID}))
        frames.add(el("text", {"x": x0 - 6, "y": y0 + node_h / 2 + 4, "text-anchor": "end",
                               "class": "label"}, f"node {node}"))
    svg.add(frames)
    cells = el("g", {"class": "gpus"})
    positions: dict[int, tuple[float, float, int, int]] = {}
    for rank in range(shown):
        x, y, vrow, vcol = place(rank)
        positions[rank] = (x, y, vrow, vcol)
        coords = layout.coordinates(rank)
        stage = coords.get("pp", 0)
        text = ", ".join(f"{a.name} {coords[a.name]}" for a in layout.axes)
        ep = layout.ep.degree or 1
        if ep > 1 and layout.ep.folded_over:
            members = layout.group("ep", rank)
            text += f"; ep {members.index(rank)} (group of ranks {_ranks_text(members)})"
        title = f"rank {rank} (node {rank // gpn}, gpu {rank % gpn}): {text}"
        dp = coords.get("dp", 0)
        g = el("g", {"class": "gpu", "data-rank": rank, "data-info": title})
        for axis in HOVER_AXES:
            members = _group_key(plan, axis, rank)
            if members is not None:
                g.attrs[f"data-{axis}"] = members[0]
        g.add(el("title", None, title))
        g.add(el("rect", {"x": x, "y": y, "width": cell, "height": cell, "rx": 2, "class": "cell",
                          "fill": stage_colour(stage, pp)}))
        if dp_degree > 1:
            shade = "#2b3445" if dp % 2 == 0 else "#b8c0cc"
            g.add(el("rect", {"x": x, "y": y + cell - 3, "width": cell, "height": 3, "fill": shade}))
        cells.add(g)
    svg.add(cells)
    outlines = el("g", {"class": "groups", "fill": "none", "pointer-events": "none"})
    strided: dict[str, int] = {}
    for axis, style in GROUP_STYLES.items():
        groups = sorted({m for r in range(shown) if (m := _group_key(plan, axis, r)) is not None})
        if not groups:
            continue
        if not all(g == tuple(range(g[0], g[-1] + 1)) for g in groups):
            strided[axis] = groups[0][1] - groups[0][0]
            continue
        for members in groups:
            outlines.add(_outline(axis, style, [r for r in members if r < shown], positions, cell))
    svg.add(outlines)
    facts = {"shown": shown, "world": world, "nodes": nodes, "detail_nodes": detail_nodes, "gpn": gpn,
             "strided": strided}
    return svg, facts


def _ranks_text(ranks: tuple[int, ...]) -> str:
    if len(ranks) > 2 and all(b - a == ranks[1] - ranks[0] for a, b in zip(ranks, ranks[1:], strict=False)):
        step = ranks[1] - ranks[0]
        return f"{ranks[0]}-{ranks[-1]}" + (f" step {step}" if step != 1 else "")
    return ", ".join(map(str, ranks))


def _outline(axis: str, style: dict, members: list[int], positions: dict, cell: int) -> Element:
    """Rectangles around the horizontal runs of a group of consecutive ranks."""
    group = el("g", {"class": f"group-{axis}", "stroke": style["stroke"], "stroke-width": style["stroke-width"],
                     "stroke-dasharray": style["dash"]})
    lookup = {(positions[r][2], positions[r][3]): positions[r] for r in members}
    off = style["offset"]
    for row, first, last in _runs(list(lookup)):
        x1, y1, _, _ = lookup[(row, first)]
        x2, _, _, _ = lookup[(row, last)]
        group.add(el("rect", {"x": x1 - off, "y": y1 - off, "width": x2 - x1 + cell + 2 * off,
                              "height": cell + 2 * off, "rx": 3}))
    return group


def node_overview(plan: Plan) -> Element:
    """One cell per node for large layouts: the stages a node holds, as slices of its cell."""
    layout = plan.layout
    gpn = plan.cluster.gpus_per_node
    world = plan.cluster.world_size
    nodes = math.ceil(world / gpn)
    pp = layout.degree("pp") or 1
    per_row = 64
    cell, gap = 11, 2
    rows = math.ceil(nodes / per_row)
    label_w = 64
    width = label_w + per_row * (cell + gap) + 8
    height = rows * (cell + gap) + 8
    svg = el("svg", {"xmlns": "http://www.w3.org/2000/svg", "width": width, "height": height,
                     "viewBox": f"0 0 {number(width)} {number(height)}", "class": "overview", "role": "img",
                     "aria-label": f"all {nodes} nodes, one cell per node"})
    pp_axis = layout.axis("pp")
    for row in range(rows):
        svg.add(el("text", {"x": label_w - 6, "y": 4 + row * (cell + gap) + cell - 1, "text-anchor": "end",
                            "class": "label small"}, f"{row * per_row}"))
    for node in range(nodes):
        first, last = node * gpn, min(world, (node + 1) * gpn) - 1
        if pp_axis is None:
            stages = [0]
        else:
            stages = sorted({(r // pp_axis.stride) % pp_axis.degree for r in range(first, last + 1)})
        row, col = divmod(node, per_row)
        x = label_w + col * (cell + gap)
        y = 4 + row * (cell + gap)
        g = el("g", {"class": "node"})
        g.add(el("title", None, f"node {node}: ranks {first}-{last}; pp stage{'s' if len(stages) > 1 else ''} "
                                + ", ".join(map(str, stages[:8])) + (" ..." if len(stages) > 8 else "")))
        width_each = cell / len(stages)
        for i, stage in enumerate(stages):
            g.add(el("rect", {"x": x + i * width_each, "y": y, "width": width_each, "height": cell,
                              "fill": stage_colour(stage, pp)}))
        svg.add(g)
    return svg


def stage_legend(pp: int) -> Element:
    items = el("div", {"class": "legend"})
    shown = list(range(pp)) if pp <= 16 else [*range(8), None, *range(pp - 4, pp)]
    for stage in shown:
        if stage is None:
            items.add(el("span", {"class": "more"}, "..."))
            continue
        items.add(el("span", {"class": "key"},
                     el("i", {"style": f"background:{stage_colour(stage, pp)}"}), f"stage {stage}"))
    return items


def group_legend(plan: Plan) -> Element:
    items = el("div", {"class": "legend"})
    for axis, style in GROUP_STYLES.items():
        degree = plan.layout.degree(axis) or 1
        if degree <= 1:
            continue
        dash = style["dash"] or "none"
        line = el("svg", {"width": 28, "height": 10, "class": "swatch"},
                  el("line", {"x1": 1, "y1": 5, "x2": 27, "y2": 5, "stroke": style["stroke"],
                              "stroke-width": 2, "stroke-dasharray": dash}))
        over = ""
        if axis == "ep" and plan.layout.ep.folded_over:
            over = " (over " + " x ".join(plan.layout.ep.folded_over) + ")"
        items.add(el("span", {"class": "key"}, line, f"{axis} group of {degree}{over}"))
    if (plan.layout.degree("dp") or 1) > 1:
        items.add(el("span", {"class": "key"},
                     el("svg", {"width": 28, "height": 10, "class": "swatch"},
                        el("rect", {"x": 1, "y": 3, "width": 12, "height": 4, "fill": "#2b3445"}),
                        el("rect", {"x": 15, "y": 3, "width": 12, "height": 4, "fill": "#b8c0cc"})),
                     f"band: dp replica (even / odd, {plan.layout.degree('dp')} replicas)"))
    return items


# ---------------------------------------------------------------------------------------------
# The pipeline schedule


def chunk_durations(plan: Plan):
    """Per-rank, per-chunk forward, input-backward and weight-backward seconds from the time
    model (the same split `timing.step_time` uses); None when the model cannot say."""
    from . import timing
    from .calibration import DEFAULT
    from .memory.inputs import knobs_of, shape_of
    from .schedule import Durations
    from .targets import memory_runtime, software_of

    knobs = knobs_of(plan, memory_runtime(plan.target))
    if knobs is None:
        return None
    hw = timing.hardware_of(plan)
    loads, times = timing.rank_times(shape_of(plan), knobs, hw, timing.geometry_of(plan, hw), DEFAULT,
                                     software_of(plan))
    ranks = [times[load] for load in loads]
    f = tuple((r.forward + sum(r.exposed_f)) / r.chunks for r in ranks)
    b = tuple((r.backward_input + r.recompute + sum(r.exposed_b)) / r.chunks for r in ranks)
    w = tuple(r.backward_weight / r.chunks for r in ranks)
    return Durations(f, b, w)


def timeline_picture(plan: Plan) -> tuple[Element, dict[str, Any]]:
    from .schedule import Durations, drawable_microbatches, simulate

    layout = plan.layout
    pp = layout.degree("pp") or 1
    v = layout.pp.virtual_stages or 1
    schedule = layout.pp.schedule or "1f1b"
    m = plan.training.grad_accum or 1
    shown = drawable_microbatches(schedule, pp, v, m, TIMELINE_BLOCKS_PER_STAGE * pp)
    durations = chunk_durations(plan)
    timed = durations is not None
    if durations is None:
        durations = Durations.uniform(pp)
    timeline = simulate(schedule, pp, v, shown, durations)
    row_h = 22 if pp <= 16 else (14 if pp <= 32 else 9)
    label_w, plot_w, top = 64, 1000, 8
    height = top + pp * row_h + 34
    width = label_w + plot_w + 16
    scale = plot_w / timeline.makespan if timeline.makespan > 0 else 1.0
    svg = el("svg", {"xmlns": "http://www.w3.org/2000/svg", "width": width, "height": height,
                     "viewBox": f"0 0 {number(width)} {number(height)}", "class": "timeline", "role": "img",
                     "aria-label": f"{schedule} schedule over {pp} stages"})
    svg.add(el("defs", None, el("pattern", {"id": "idle", "width": 6, "height": 6, "patternUnits": "userSpaceOnUse",
                                            "patternTransform": "rotate(45)"},
                                el("rect", {"width": 6, "height": 6, "fill": "#f3f4f6"}),
                                el("line", {"x1": 0, "y1": 0, "x2": 0, "y2": 6, "stroke": "#c9ced6",
                                            "stroke-width": 2}))))
    blocks = el("g", {"class": "blocks"})
    for rank in range(pp):
        y = top + rank * row_h
        if row_h >= 14 or rank % 4 == 0 or rank == pp - 1:
            svg.add(el("text", {"x": label_w - 6, "y": y + row_h / 2 + 4, "text-anchor": "end",
                                "class": "label" if row_h >= 14 else "label small"}, f"stage {rank}"))
        svg.add(el("rect", {"x": label_w, "y": y + 1, "width": plot_w, "height": row_h - 2, "fill": "url(#idle)",
                            "class": "idle"}))
    chunks_per_rank = v
    for block in timeline.blocks:
        a = block.action
        y = top + block.rank * row_h
        x = label_w + block.start * scale
        w = max(0.5, (block.end - block.start) * scale)
        local = a.chunk // pp if schedule not in ("zbv", "dualpipe-v") else (0 if a.chunk < pp else 1)
        fill = KIND_COLOURS[a.kind] if chunks_per_rank == 1 or local == 0 else SECOND_CHUNK_COLOURS[a.kind]
        title = (f"stage {block.rank}: {KIND_NAMES[a.kind]}, micro-batch {a.micro}, chunk {a.chunk}; "
                 f"{seconds(block.start)} to {seconds(block.end)}" if timed else
                 f"stage {block.rank}: {KIND_NAMES[a.kind]}, micro-batch {a.micro}, chunk {a.chunk}")
        g = el("g", {"class": f"op op-{a.kind}"})
        g.add(el("title", None, title))
        g.add(el("rect", {"x": x, "y": y + 1, "width": w, "height": row_h - 2, "fill": fill, "stroke": "#ffffff", "stroke-width": 0.5 if w > 2 else 0}))
        label = fitting_label(w, str(a.micro)) if row_h >= 14 else None
        if label is not None:
            g.add(el("text", {"x": x + w / 2, "y": y + row_h / 2 + 4, "text-anchor": "middle", "class": "blocklabel",
                              "fill": "#1d2430" if fill in LIGHT else "#ffffff"}, label))
        blocks.add(g)
    svg.add(blocks)
    axis_y = top + pp * row_h + 4
    svg.add(el("line", {"x1": label_w, "y1": axis_y, "x2": label_w + plot_w, "y2": axis_y, "stroke": MUTED}))
    for i in range(6):
        t = timeline.makespan * i / 5
        x = label_w + plot_w * i / 5
        svg.add(el("line", {"x1": x, "y1": axis_y, "x2": x, "y2": axis_y + 4, "stroke": MUTED}))
        svg.add(el("text", {"x": x, "y": axis_y + 17, "text-anchor": "middle" if 0 < i < 5 else ("start" if i == 0 else "end"),
                            "class": "label small"}, seconds(t) if timed else f"{t:g} units"))
    facts = {"schedule": schedule, "pp": pp, "v": v, "m": m, "shown": shown, "timed": timed,
             "idle": timeline.bubble_fraction, "makespan": timeline.makespan,
             "kinds": sorted({b.action.kind for b in timeline.blocks}, key="FBIW".index)}
    return svg, facts


# ---------------------------------------------------------------------------------------------
# Memory and time


MIN_PART_PX = 2.0
"""A non-zero part of a memory bar is drawn at least this tall: a sharded optimizer's 0.4 GiB next
to 67 GiB would be a fraction of a pixel, invisible (the legend gives its size)."""


def memory_picture(memory: dict) -> Element:
    stages = memory["per_stage"]
    n = len(stages)
    label_w, plot_h, top = 64, 260, 12
    bar_gap = 4 if n <= 32 else 1
    bar_w = max(4, min(72, (900 - n * bar_gap) // n))
    plot_w = n * (bar_w + bar_gap) + bar_gap
    width = label_w + plot_w + 120
    height = top + plot_h + 40
    hbm = memory["hbm_bytes"]
    usable = memory["usable_bytes"]
    top_value = max(hbm, memory["peak_bytes"]) * 1.05
    scale = plot_h / top_value
    svg = el("svg", {"xmlns": "http://www.w3.org/2000/svg", "width": width, "height": height,
                     "viewBox": f"0 0 {number(width)} {number(height)}", "class": "memory", "role": "img",
                     "aria-label": "memory per pipeline stage"})
    base = top + plot_h
    step = _nice_step(top_value / GiB)
    tick = 0.0
    while tick * GiB <= top_value:
        y = base - tick * GiB * scale
        svg.add(el("line", {"x1": label_w, "y1": y, "x2": label_w + plot_w, "y2": y, "stroke": GRID}))
        svg.add(el("text", {"x": label_w - 6, "y": y + 4, "text-anchor": "end", "class": "label small"},
                   f"{tick:g} GiB"))
        tick += step
    for i, s in enumerate(stages):
        x = label_w + bar_gap + i * (bar_w + bar_gap)
        y = base
        g = el("g", {"class": "bar"})
        parts = "; ".join(f"{name} {gib(s[key])}" for key, name, _ in MEMORY_PARTS)
        at = s.get("peak_moment")
        when = f"; peak at {moment_text(at, memory['virtual_stages'] or 1)}" if at is not None else ""
        g.add(el("title", None, f"stage {s['stage']}: {gib(s['total_bytes'])} ({parts}){when}"))
        for key, _, colour in MEMORY_PARTS:
            h = max(s[key] * scale, MIN_PART_PX) if s[key] > 0 else 0.0
            y -= h
            g.add(el("rect", {"x": x, "y": y, "width": bar_w, "height": h, "fill": colour, "class": f"part-{key}"}))
        if s["total_bytes"] > usable:
            g.add(el("rect", {"x": x - 1, "y": y - 1, "width": bar_w + 2, "height": base - y + 1, "fill": "none",
                              "stroke": "#d62728", "stroke-width": 2}))
        svg.add(g)
        total = fitting_label(bar_w + bar_gap, gib(s["total_bytes"]))  # never over the next bar's label
        if total is not None:
            svg.add(el("text", {"x": x + bar_w / 2, "y": y - 4, "text-anchor": "middle", "class": "label small"},
                       total))
        if n <= 32 or i % max(1, n // 16) == 0:
            svg.add(el("text", {"x": x + bar_w / 2, "y": base + 14, "text-anchor": "middle", "class": "label small"},
                       str(s["stage"])))
    for value, name, colour, dash in ((hbm, "HBM", "#d62728", None), (usable, "usable", "#d62728", "5 3")):
        y = base - value * scale
        svg.add(el("line", {"x1": label_w, "y1": y, "x2": label_w + plot_w, "y2": y, "stroke": colour,
                            "stroke-width": 1.5, "stroke-dasharray": dash}))
        svg.add(el("text", {"x": label_w + plot_w + 6, "y": y + 4, "class": "label small", "fill": colour},
                   f"{name} {gib(value)}"))
    svg.add(el("text", {"x": label_w + plot_w / 2, "y": base + 30, "text-anchor": "middle", "class": "label"},
               "pipeline stage"))
    return svg


def moment_table(memory: dict) -> Element | None:
    """Which moment of the schedule sets each stage's peak (`parc explain`'s peak moment,
    `memory.moment.PeakMoment`), a row per stage: the action, its chunk (with chunks per rank),
    micro-batch and place in the step, each counted as `parc explain` prints it (the micro-batch
    from 0, the action from 1; the header says so), the chunk-micro-batches held then and what the moment adds on top. A cell the model could not
    place (a step too long to walk) reads "-". None when no stage's moment is named."""
    stages = [s for s in memory["per_stage"] if s.get("peak_moment") is not None]
    if not stages:
        return None
    chunks = (memory["virtual_stages"] or 1) > 1
    table = el("table", {"class": "moments"})
    head = ["stage", "action"] + (["chunk"] if chunks else []) + ["micro-batch (from 0)", "action of the step (from 1)", "held", "adds"]
    table.add(el("tr", None, *(el("th", None, h) for h in head)))
    for s in stages:
        m = s["peak_moment"]
        action = "idle after the action" if m["action"] == "idle" else m["action"]
        cells = [el("td", {"class": "num"}, str(s["stage"])), el("td", None, action)]
        if chunks:
            cells.append(el("td", {"class": "num"}, str(m["chunk"])))
        cells += [el("td", {"class": "num"}, "-" if m["microbatch"] is None else str(m["microbatch"])),
                  el("td", {"class": "num"}, "-" if m["position"] is None else f"{m['position'] + 1:,}"),
                  el("td", {"class": "num"}, f"{m['in_flight']:,}"), el("td", None, m["adds"])]
        table.add(el("tr", {"data-stage": s["stage"]}, *cells))
    return table


def _nice_step(top: float) -> float:
    raw = top / 5
    power = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    for m in (1, 2, 5, 10):
        if raw <= m * power:
            return m * power
    return 10 * power


def time_parts(time: dict) -> list[tuple[str, str, float]]:
    """(label, colour, seconds) of the step, in TIME_PARTS order; they sum to the step time."""
    out = []
    for key, name, colour in step_parts(time):
        value = time[key] if key in time else time["exposed_comm_seconds"].get(key, 0.0)
        out.append((name, colour, float(value)))
    return out


def step_parts(time: dict) -> tuple[tuple[str, str, str], ...]:
    """`TIME_PARTS` the step has: all but "offload" without activation offloading and "dp
    copies" where the data-parallel runtime copies nothing (Megatron-LM)."""
    return tuple(p for p in TIME_PARTS if (p[0] != "offload_seconds" or p[0] in time)
                 and (p[0] != "dp_copy_seconds" or time.get(p[0])))


def time_picture(time: dict) -> Element:
    parts = time_parts(time)
    total = sum(v for _, _, v in parts) or 1.0
    width, bar_h = 1000, 34
    svg = el("svg", {"xmlns": "http://www.w3.org/2000/svg", "width": width + 20, "height": bar_h + 44,
                     "viewBox": f"0 0 {width + 20} {bar_h + 44}", "class": "steptime", "role": "img",
                     "aria-label": "step time breakdown"})
    x = 10.0
    for name, colour, value in parts:
        w = value / total * width
        if w <= 0:
            continue
        g = el("g", {"class": "part"})
        g.add(el("title", None, f"{name}: {seconds(value)} ({percent(value / total)})"))
        g.add(el("rect", {"x": x, "y": 8, "width": w, "height": bar_h, "fill": colour}))
        share = percent(value / total)
        label = fitting_label(w, f"{name} {share}", f"{name.split()[0]} {share}", share)
        if label is not None:
            g.add(el("text", {"x": x + w / 2, "y": 8 + bar_h / 2 + 4, "text-anchor": "middle", "class": "blocklabel",
                              "fill": "#1d2430" if colour in LIGHT else "#ffffff"}, label))
        svg.add(g)
        x += w
    svg.add(el("text", {"x": 10, "y": bar_h + 32, "class": "label small"}, "0"))
    svg.add(el("text", {"x": 10 + width, "y": bar_h + 32, "text-anchor": "end", "class": "label small"},
               seconds(time["step_seconds"])))
    return svg


# ---------------------------------------------------------------------------------------------
# The page

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2430;margin:0;background:#fff}
main{max-width:1120px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 6px}
.sub{color:#5b6575;margin:0 0 12px}
table{border-collapse:collapse;margin:8px 0}td,th{padding:3px 12px 3px 0;text-align:left;vertical-align:top}
th{color:#5b6575;font-weight:500}td.num{text-align:right;font-variant-numeric:tabular-nums}
.figures{display:grid;grid-template-columns:repeat(auto-fill,minmax(170px,1fr));gap:8px;margin:12px 0}
.figure{background:#f6f7f9;border-radius:6px;padding:8px 10px}.figure b{display:block;font-size:18px}
.figure span{color:#5b6575;font-size:12px}
.caption{color:#5b6575;font-size:13px;margin:4px 0 8px}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px;color:#374151;margin:4px 0}
.legend .key{display:inline-flex;align-items:center;gap:5px}
.legend i{display:inline-block;width:12px;height:12px;border-radius:2px}
svg text.label{font-size:12px;fill:#374151}svg text.small{font-size:10px}
svg text.blocklabel{font-size:10px;pointer-events:none}
svg .gpu rect.cell{stroke:#fff;stroke-width:0}
svg .gpu.hl-dp rect.cell{stroke:#f58518;stroke-width:3}svg .gpu.hl-ep rect.cell{stroke:#c0267d;stroke-width:3}
svg .gpu.hl-cp rect.cell{stroke:#1f5fbf;stroke-width:3}svg .gpu.hl-tp rect.cell{stroke:#111;stroke-width:3}
svg .gpu:hover rect.cell{stroke:#000;stroke-width:4}
#hover{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;min-height:18px;color:#1d2430}
pre{background:#f6f7f9;padding:10px;border-radius:6px;white-space:pre-wrap;font-size:12px}
.bad{color:#b42318;font-weight:600}.ok{color:#067647;font-weight:600}
footer{color:#5b6575;font-size:12px;margin-top:32px}
"""

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"
"""The page may load nothing from anywhere: a browser refuses (and reports) any attempt."""

SCRIPT = """
(function () {
  var out = document.getElementById("hover");
  var axes = ["tp", "cp", "ep", "dp"];
  var lit = [];
  function clear() {
    lit.forEach(function (pair) { pair[0].classList.remove(pair[1]); });
    lit = [];
  }
  document.querySelectorAll(".gpu[data-info]").forEach(function (node) {
    node.addEventListener("mouseenter", function () {
      clear();
      out.textContent = node.getAttribute("data-info");
      axes.forEach(function (axis) {
        var id = node.getAttribute("data-" + axis);
        if (id === null) { return; }
        document.querySelectorAll(".gpu[data-" + axis + "='" + id + "']").forEach(function (peer) {
          peer.classList.add("hl-" + axis);
          lit.push([peer, "hl-" + axis]);
        });
      });
    });
    node.addEventListener("mouseleave", clear);
  });
  document.body.setAttribute("data-ready", "1");
})();
"""


def budget_block(budget: dict, world: int) -> Element:
    """The run's days, GPU-hours and cost, part by part as the step-time table."""
    block = el("section", {"id": "budget-section"})
    block.add(el("h2", {"id": "budget"}, "Training budget"))
    price = budget["price_per_gpu_hour"]
    where = "stated in the spec" if budget["price_source"] == "spec" else budget["price_source"]
    cost = (f" and cost {run_budget.dollars(budget['cost'])} at ${price:,.2f} per GPU-hour ({where})"
            if budget["cost"] is not None else "; no price is known for this GPU (state `price` in `hardware`)")
    block.add(el("p", {"class": "caption"},
                 f"{run_budget.tokens_text(budget['tokens'])} tokens in {budget['steps']:,} steps of "
                 f"{budget['tokens_per_step']:,} tokens on {world:,} GPUs take {run_budget.days_text(budget['days'])}, "
                 f"{run_budget.hours_text(budget['gpu_hours'])}{cost}. The predicted step times the steps: "
                 f"{budget['excludes']}."))
    table = el("table", {"class": "budget"})
    head = el("tr", None, el("th", None, "part"), el("th", None, "days"), el("th", None, "GPU-hours"))
    if budget["cost"] is not None:
        head.add(el("th", None, "cost"))
    table.add(head)
    colours = {key: colour for key, _, colour in TIME_PARTS}
    for name, part in budget["parts"].items():
        if not part["gpu_hours"]:
            continue
        colour = colours.get(name) or colours.get(f"{name}_seconds", GRID)
        row = el("tr", None, el("td", None, el("i", {"style": f"display:inline-block;width:10px;height:10px;"
                                                              f"background:{colour};margin-right:6px"}),
                                 run_budget.part_label(name)),
                 el("td", {"class": "num"}, f"{part['days']:,.2f}"),
                 el("td", {"class": "num"}, run_budget.hours_text(part["gpu_hours"])))
        if budget["cost"] is not None:
            row.add(el("td", {"class": "num"}, run_budget.dollars(part["cost"])))
        table.add(row)
    block.add(table)
    return block


def figure(value: str, label: str, bad: bool = False) -> Element:
    return el("div", {"class": "figure"}, el("b", {"class": "bad"} if bad else None, value), el("span", None, label))


def findings_figure(diagnostics) -> Element:
    """Errors and warnings as `parc check` counts them, allowed warnings included and said to be
    allowed: a card reading 0 while the Checks section lists an allowed W0323 misleads."""
    errors = sum(1 for d in diagnostics if d.is_error)
    warnings = [d for d in diagnostics if d.severity.value == "warning"]
    allowed = sum(1 for d in warnings if d.allowed)
    label = "errors / warnings" + (f" ({allowed} allowed)" if allowed else "")
    return figure(f"{errors} / {len(warnings)}", label, bad=errors > 0)


def answer_cluster(compilation: Compilation):
    """A spec that asks for its cluster: (the chosen cluster's spec compiled, the search), or the
    question with the search's diagnostics when nothing meets its constraints."""
    from .pipeline import compile_text
    from .search.cluster import search_cluster

    cluster = search_cluster(compilation)
    if cluster.diagnostics:
        compilation.diagnostics.extend(cluster.diagnostics)
        return compilation, None
    return compile_text(cluster.chosen.text, compilation.source.path), cluster


def cluster_block(cluster) -> Element:
    """The cluster question's answer and its time-cost frontier (`frontier.py`)."""
    from .frontier import frontier_picture, frontier_table
    from .search.cluster_command import constraints_text

    block = el("section", {"id": "cluster-section"})
    block.add(el("h2", {"id": "cluster"}, "Cluster"))
    chosen = cluster.chosen
    picture, drawn = frontier_picture(cluster.points, chosen)
    unpriced = sum(1 for p in cluster.points if p.ok and p.cost is None)
    block.add(el("p", {"class": "caption"},
                 f"The spec asks for its cluster; search tried {len(cluster.points)} clusters ({constraints_text(cluster)}) "
                 f"and answers {chosen.probe.nodes:,} nodes of {chosen.probe.gpu} (ringed): the page below is that "
                 "spec. Each dot is a cluster at its best layout: the run's cost against its time to train; the line "
                 "joins the frontier (no cluster tried is both faster and cheaper), whose points are labelled; hover "
                 "a dot for its layout. The table names every point."
                 + (f" {unpriced} clusters without a known price are not drawn." if unpriced else "")))
    if drawn:
        block.add(picture)
        block.add(frontier_table(drawn, chosen))
    else:
        block.add(el("p", {"class": "caption"}, "No cluster tried has a known price, so there is no cost to draw: "
                                                "state one in `hardware` (`price 2.50 $/gpu-hour`)."))
    return block


def build_page(compilation: Compilation, cluster=None) -> str:
    """The whole page as text. Needs a complete plan (no holes) without errors; `cluster`, the
    answer of a cluster question (`search/cluster.py`) whose chosen spec this is, adds its frontier."""
    from .explain import build_report

    plan = compilation.plan
    data = build_report(compilation)
    memory = data.get("memory")
    time = data.get("time")
    throughput = data.get("throughput")
    layout_text = data["layout"]
    world = plan.cluster.world_size
    main = el("main")
    main.add(el("h1", None, f"{plan.launch.job}: {layout_text}"))
    main.add(el("p", {"class": "sub"},
                f"{compilation.source.path} · {plan.model.name} ({count(plan.model.parameters)} parameters) · "
                f"{world:,} x {plan.cluster.gpu.name} in {plan.cluster.nodes:,} nodes of {plan.cluster.gpus_per_node} · "
                f"seq {plan.training.seq_len:,}, global batch {plan.training.global_batch:,}, "
                f"micro-batch {plan.training.micro_batch}, {plan.training.grad_accum or '?'} micro-batches per step"))
    figures = el("div", {"class": "figures"})
    if time is not None:
        figures.add(figure(seconds(time["step_seconds"]), "step time"))
    if throughput is not None:
        figures.add(figure(f"{throughput['tokens_per_second']:,.0f}", "tokens/s"))
        figures.add(figure(percent(throughput["mfu"]), f"MFU ({throughput['model_tflops_per_gpu']:,.0f} TFLOP/s per GPU)"))
    if time is not None:
        figures.add(figure(percent(time["bubble_share"]), "pipeline bubble (idle share of the step)"))
    budget = data.get("budget")
    if budget is not None:
        figures.add(figure(run_budget.days_text(budget["days"]), "time to train"))
        figures.add(figure(run_budget.hours_text(budget["gpu_hours"]), "for the whole run"))
        if budget["cost"] is not None:
            figures.add(figure(run_budget.dollars(budget["cost"]), f"cost at ${budget['price_per_gpu_hour']:,.2f} per GPU-hour"))
    if memory is not None:
        figures.add(figure(gib(memory["peak_bytes"]), f"peak memory (stage {memory['peak_stage']}) of "
                           f"{gib(memory['usable_bytes'])} usable" + (", at risk" if memory.get("at_risk") else ""),
                           bad=not memory["fits"] or bool(memory.get("at_risk"))))
    figures.add(findings_figure(compilation.diagnostics))
    main.add(figures)
    if cluster is not None:
        main.add(cluster_block(cluster))

    main.add(el("h2", {"id": "devices"}, "Devices"))
    grid, facts = device_grid(plan)
    order = " x ".join(a.name for a in plan.layout.axes)
    caption = (f"Each square is a GPU, each frame a node of {facts['gpn']}; colour = pipeline stage. Rank order "
               f"{order}: the first axis varies fastest.")
    if facts["shown"] < facts["world"]:
        caption += (f" {facts['world']:,} GPUs are too many to draw one by one: the first {facts['detail_nodes']} "
                    f"nodes (ranks 0-{facts['shown'] - 1}) are drawn in detail, and the overview below draws one "
                    f"cell per node for all {facts['nodes']:,} nodes.")
    if facts["strided"]:
        caption += " " + "; ".join(f"{axis} groups are strided (rank distance {step})"
                                   for axis, step in facts["strided"].items())
        caption += ": they are not outlined; hover a GPU to highlight its groups."
    else:
        caption += " Hover a GPU to highlight its groups."
    main.add(el("p", {"class": "caption"}, caption))
    main.add(stage_legend(plan.layout.degree("pp") or 1))
    main.add(group_legend(plan))
    main.add(el("div", {"id": "hover"}, "hover over a GPU for its rank and coordinates"))
    main.add(grid)
    if facts["shown"] < facts["world"]:
        main.add(el("h3", None, "All nodes"))
        main.add(el("p", {"class": "caption"}, f"All {facts['nodes']:,} nodes, one cell per node ({facts['gpn']} "
                                               "GPUs), 64 to a row; a cell split in slices holds several stages."))
        main.add(node_overview(plan))

    main.add(el("h2", {"id": "schedule"}, "Pipeline schedule"))
    picture, tl = timeline_picture(plan)
    text = f"{tl['schedule']} over {tl['pp']} stage{'s' if tl['pp'] != 1 else ''}"
    if tl["v"] > 1:
        text += f" with {tl['v']} chunks per stage (lighter = {'second chunk' if tl['v'] == 2 else 'later chunks'})"
    text += f"; {tl['m']} micro-batches per step"
    if tl["shown"] < tl["m"]:
        text += (f", the first {tl['shown']} drawn (too many blocks to draw them all; the whole step fills and "
                 "drains the same way, with a longer steady state between)")
    text += (". Blocks are placed with the time model's per-chunk times" if tl["timed"] else
             ". Blocks take one unit each (the time model cannot time this plan)")
    text += f"; hatched = idle ({percent(tl['idle'])} of the drawn stage-time"
    if time is not None:
        text += f"; the bubble, idle share of the whole step, is {percent(time['bubble_share'])}"
    text += "). Numbers are micro-batches."
    if tl["schedule"] == "dualpipe-v":
        text += " DualPipe-V's overlapped forward-backward pairs are drawn one after the other."
    main.add(el("p", {"class": "caption"}, text))
    legend = el("div", {"class": "legend"})
    for kind in tl["kinds"]:
        legend.add(el("span", {"class": "key"}, el("i", {"style": f"background:{KIND_COLOURS[kind]}"}),
                      KIND_NAMES[kind]))
    main.add(legend)
    main.add(picture)

    main.add(el("h2", {"id": "memory"}, "Memory per GPU"))
    if memory is None:
        main.add(el("p", {"class": "caption"}, f"not predicted: {data.get('memory_unpredictable') or 'holes open'}"))
    else:
        # at risk (W0410): fits by less than the memory model's measured error, drawn as a warning
        safe = memory["fits"] and not memory.get("at_risk")
        verdict = el("span", {"class": "ok" if safe else "bad"},
                     ("fits (at risk)" if memory.get("at_risk") else "fits") if memory["fits"] else "does not fit")
        main.add(el("p", {"class": "caption"},
                    f"The worst rank of each pipeline stage ({memory['runtime']} runtime), stacked by kind, against "
                    f"{gib(memory['hbm_bytes'])} HBM less a {gib(memory['reserve_bytes'])} reserve. Peak: stage "
                    f"{memory['peak_stage']}, {gib(memory['peak_bytes'])}: ", verdict,
                    f". A part smaller than {MIN_PART_PX:g} px is drawn {MIN_PART_PX:g} px tall so that none is "
                    "hidden; hover a bar for its bytes. The legend gives each part at the peak stage."))
        legend = el("div", {"class": "legend"})
        peak = next(s for s in memory["per_stage"] if s["stage"] == memory["peak_stage"])
        for key, name, colour in MEMORY_PARTS:
            legend.add(el("span", {"class": "key"}, el("i", {"style": f"background:{colour}"}),
                          f"{name} {gib(peak[key])}"))
        main.add(legend)
        main.add(memory_picture(memory))
        moments = moment_table(memory)
        if moments is not None:
            main.add(el("h3", None, "Peak moment per stage"))
            main.add(el("p", {"class": "caption"},
                        "The moment of the schedule that sets each stage's peak (as `parc explain` names it): the "
                        "action running then, its micro-batch (counted from 0) and its place in the step (counted from 1), the "
                        + ("chunk-micro-batches" if (memory["virtual_stages"] or 1) > 1 else "micro-batches")
                        + " whose saved activations are held, and what the moment adds on top of them."))
            main.add(moments)

    main.add(el("h2", {"id": "time"}, "Step time"))
    if time is None:
        main.add(el("p", {"class": "caption"}, "not predicted for this plan"))
    else:
        main.add(el("p", {"class": "caption"},
                    f"One optimizer step on the slowest pipeline stage ({time['slowest_stage']}), "
                    f"{time['microbatches']} micro-batches: {seconds(time['step_seconds'])}."))
        main.add(time_picture(time))
        table = el("table")
        table.add(el("tr", None, el("th", None, "part"), el("th", None, "time"), el("th", None, "share"),
                     el("th", None, "sent per GPU")))
        total = time["step_seconds"] or 1.0
        sent = time.get("comm_bytes", {})
        for key, name, colour in step_parts(time):
            value = time[key] if key in time else time["exposed_comm_seconds"].get(key, 0.0)
            moved = f"{sent[key] / 1e9:,.1f} GB" if key in sent and sent[key] else ""
            table.add(el("tr", None, el("td", None, el("i", {"style": f"display:inline-block;width:10px;height:10px;"
                                                                      f"background:{colour};margin-right:6px"}), name),
                         el("td", {"class": "num"}, seconds(value)), el("td", {"class": "num"}, percent(value / total)),
                         el("td", {"class": "num"}, moved)))
        main.add(table)
        caveats = time.get("caveats") or []
        if caveats:  # where the prediction leans on what the time model measured least (`parc.caveats`)
            main.add(el("h3", None, "Caveats"))
            items = el("ul", {"class": "caveats"})
            for c in caveats:
                items.add(el("li", None, el("b", None, c["code"]), f": {c['text']}"))
            main.add(items)

    if budget is not None:
        main.add(budget_block(budget, world))

    main.add(el("h2", {"id": "checks"}, "Checks"))
    if compilation.diagnostics:
        text = render_text(compilation.diagnostics, {compilation.source.path: compilation.source}, Style(False))
        main.add(el("pre", None, text.rstrip("\n")))
    else:
        main.add(el("p", {"class": "caption"}, "no findings"))
    main.add(el("footer", None, f"parc report for {compilation.source.path}. Predictions come from "
                                "parc's memory and time models (docs/memory-model.md, docs/time-model.md)."))

    html = el("html", {"lang": "en"},
              el("head", None, el("meta", {"charset": "utf-8"}),
                 el("meta", {"http-equiv": "Content-Security-Policy", "content": CSP}),
                 el("meta", {"name": "viewport", "content": "width=device-width, initial-scale=1"}),
                 el("title", None, f"parc report: {plan.launch.job}"),
                 el("style", None, CSS.strip())),
              el("body", None, main, el("script", None, SCRIPT.strip())))
    return "<!doctype html>\n" + render(html) + "\n"
