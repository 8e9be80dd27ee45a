"""`parc search` on a spec that asks for its cluster (`nodes ?`, `gpus ?`, `gpu ?`): the table of
clusters tried, the answer, and `--write` of the filled spec (atomic, as the layout search's)."""

from __future__ import annotations

import click

from ..budget import days_text, dollars, hours_text
from .cluster import ClusterResult, Point, search_cluster

OBJECTIVE_TEXT = {"gpus": "the fewest GPUs", "time": "the shortest time to train", "cost": "the lowest cost",
                  "tokens-per-dollar": "the most tokens per dollar"}


def run_cluster(path: str, compilation, write: bool, fmt: str) -> int:
    from .. import cli
    from ..diagnostics import dumps_json
    from .command import write_answer

    result = search_cluster(compilation)
    if result.diagnostics:
        compilation.diagnostics.extend(result.diagnostics)
        if fmt == "json":
            click.echo(dumps_json(render_json(result)), nl=False)
            return 1
        click.echo(render_text(result), nl=False)
        cli._report([compilation], fmt)
        return 1
    if write:
        status = write_answer(path, compilation, result.chosen.text)
        if status:
            return status
    if fmt == "json":
        click.echo(dumps_json(render_json(result, written=write)), nl=False)
    else:
        click.echo(render_text(result), nl=False)
    if write:
        click.echo(f"wrote {path}", err=True)
    return 0


def _cost(p: Point) -> str:
    return "unknown" if p.cost is None else dollars(p.cost)


def constraints_text(result: ClusterResult) -> str:
    c = result.constraints
    parts = [f"objective: {OBJECTIVE_TEXT[c.objective]}"]
    if c.deadline is not None:
        parts.append(f"deadline {days_text(c.deadline / 86_400)}")
    if c.budget is not None:
        parts.append(f"budget {dollars(c.budget)}")
    return "; ".join(parts)


def render_text(result: ClusterResult) -> str:
    counts = ", ".join(f"{gpu}: {n:,} node count{'' if n == 1 else 's'}" for gpu, n in result.candidates.items())
    ruled = (f"; {result.ruled_out:,} ruled out (a floor, or no layout within the answer's limit)"
             if result.ruled_out else "")
    lines = [f"cluster search: {len(result.points)} clusters evaluated of the candidates ({counts}){ruled}; "
             f"{constraints_text(result)}", ""]
    header = ("", "gpu", "nodes", "GPUs", "layout", "step", "time to train", "GPU-hours", "cost")
    rows = [header]
    for p in result.points:
        mark = (">" if p is result.chosen else " ") + ("*" if p.frontier else " ")
        if not p.ok:
            rows.append((mark, p.probe.gpu, f"{p.probe.nodes:,}", f"{p.probe.gpus:,}", f"no layout ({p.reason.split(':')[0]})",
                         "", "", "", ""))
            continue
        rows.append((mark, p.probe.gpu, f"{p.probe.nodes:,}", f"{p.probe.gpus:,}", p.layout + ("!" if p.at_risk else ""),
                     f"{p.step:.2f} s",
                     days_text(p.days), hours_text(p.gpu_hours).replace(" GPU-hours", ""), _cost(p)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    right = {2, 3, 5, 6, 7, 8}
    for r in rows:
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))]
        lines.append("  ".join(cells).rstrip())
    lines.append("")
    lines.append("`>` the answer; `*` the frontier of time to train against cost (no cluster tried is both faster "
                 "and cheaper)")
    lines += risk_lines(result)
    chosen = result.chosen
    if chosen is not None:
        lines.append(f"answer: {chosen.probe.nodes:,} nodes of {chosen.probe.gpu} ({chosen.probe.gpus:,} GPUs), "
                     f"{chosen.layout}: {days_text(chosen.days)}, {hours_text(chosen.gpu_hours)}, {_cost(chosen)}"
                     + ("; at risk in memory (W0410, `!` above)" if chosen.at_risk else ""))
        if chosen.values:
            lines.append("with " + ", ".join(f"{k} {v}" for k, v in chosen.values.items()))
        if chosen.price_source:
            lines.append(f"price: {chosen.price_source}")
    return "\n".join(lines) + "\n"


def risk_lines(result: ClusterResult) -> list[str]:
    """`!` and, per cluster whose winner fits by less than the memory model's measured
    under-prediction (W0410, the layout search's mark), the fastest runner-up of its layout
    search clear of the band, as `parc search` on that cluster names it."""
    risky = [p for p in result.points if p.ok and p.at_risk]
    if not risky:
        return []
    from ..human import size

    lines = [f"`!` at risk in memory (W0410): the layout fits by less than the memory model's measured "
             f"under-prediction ({risky[0].memory.error_band:.1%} of its predicted max_memory_reserved)"]
    for p in risky:
        nodes = f"{p.probe.nodes:,} node{'' if p.probe.nodes == 1 else 's'}"
        where = f"  ! {nodes} of {p.probe.gpu}: fits by {size(p.memory.margin_bytes)}; "
        clear = p.clear_runner_up
        if clear is None:
            lines.append(where + f"no runner-up of the {p.listed} layouts `parc search` lists is clear of the band")
            continue
        values = ", ".join(f"{k} {v}" for k, v in clear.values.items())
        lines.append(where + f"the fastest runner-up clear of it is #{clear.rank}, {clear.layout} ({values}): "
                     f"{size(clear.margin_bytes)} to spare, {clear.slower:.1%} slower per step")
    return lines


def _runner_up_json(r) -> dict | None:
    from ..budget import _r

    if r is None:
        return None
    return {"rank": r.rank, "layout": r.layout, "values": r.values, "step_s": _r(r.step),
            "slower_fraction": _r(r.slower), "memory_margin_bytes": r.margin_bytes}


def point_json(p: Point) -> dict:
    from ..budget import _r

    return {
        "gpu": p.probe.gpu, "nodes": p.probe.nodes, "gpus": p.probe.gpus, "layout": p.layout or None,
        "reason": p.reason, "step_s": None if p.step is None else _r(p.step),
        "days": None if p.days is None else _r(p.days),
        "gpu_hours": None if p.gpu_hours is None else _r(p.gpu_hours),
        "cost": None if p.cost is None else _r(p.cost), "frontier": p.frontier, "values": p.values,
        # the winner's memory verdict, with the layout search's fields and rule (search/render.py)
        "memory_at_risk": p.at_risk,
        "memory_margin_bytes": None if p.memory is None else p.memory.margin_bytes,
        "predicted_max_memory_reserved_bytes": None if p.memory is None else p.memory.predicted_reserved_bytes,
        "reserved_limit_bytes": None if p.memory is None else p.memory.reserved_limit_bytes,
        "memory_error_band": None if p.memory is None else p.memory.error_band,
        "memory_clear_runner_up": _runner_up_json(p.clear_runner_up),
    }


def render_json(result: ClusterResult, written: bool = False) -> dict:
    from ..diagnostics import as_json

    c = result.constraints
    return {
        "cluster": {
            "objective": c.objective, "deadline_days": None if c.deadline is None else c.deadline / 86_400,
            "budget": c.budget, "candidates": result.candidates,
            "searches": result.searches, "ruled_out": result.ruled_out,
            "points": [point_json(p) for p in result.points],
            "chosen": None if result.chosen is None else point_json(result.chosen),
            "text": None if result.chosen is None else result.chosen.text,
        },
        "diagnostics": as_json(result.diagnostics),
        "written": written,
    }
