"""Which moment of the schedule sets each stage's peak (`memory.moment`, `parc explain`'s
`memory.per_stage[].peak_moment`).

The small case is walked by hand; the shipped pipelined specs are checked against a plain walk of
their schedules written here (the action at the named position, its micro-batch, the
chunk-micro-batches held then) and against the stage's own `in_flight`.
"""

from __future__ import annotations

import json

import pytest
from parc.memory import estimate, knobs_of, peak_moments, shape_of
from parc.memory.model import receive_bytes
from parc.memory.schedules import actions
from parc.pipeline import compile_path, compile_text

from .conftest import ROOT, run_cli

FOUR_STAGES = """tp 1 x pp 4 x dp 2 on nodes(8 gpus, nvlink)
model llama3-8b { layers 16 }
hardware {
  gpu h100-sxm
}
train {
  seq 4096
  global-batch 16
  micro-batch 1
  recompute selective
}
"""
"""Llama 3 8B (16 layers) on pp 4 x dp 2: the spec every case here varies by its pp block."""

ONE_F_ONE_B = FOUR_STAGES + "pp { schedule 1f1b }\n"


def test_1f1b_pp4_m8_by_hand(tmp_path):
    """1F1B on 4 stages with 8 micro-batches. Stage r runs 4 - r warm-up forwards, then
    backward-forward pairs. Stage 0: F0 F1 F2 F3 | B0 F4 B1 F5 B2 F6 B3 F7 | B4 B5 B6 B7: it holds
    4 micro-batches from F3 to B0, and B0 (action 4) runs the backward's working set on top of
    them, the first backward after the warm-up. Stage 3 (one warm-up forward): F0 B0 ...: the
    backward of micro-batch 0, action 1, with 1 held."""
    spec = tmp_path / "p4.par"
    spec.write_text(ONE_F_ONE_B)
    report = json.loads(run_cli("explain", str(spec), "--format", "json").stdout)
    stages = report["memory"]["per_stage"]
    assert report["microbatches"] == 8 and len(stages) == 4
    expected = {  # stage: (action, micro-batch, position, held), by hand from the orders above
        0: ("backward", 0, 4, 4),
        1: ("backward", 0, 3, 3),
        2: ("backward", 0, 2, 2),
        3: ("backward", 0, 1, 1),
    }
    for s in stages:
        m = s["peak_moment"]
        assert (m["action"], m["microbatch"], m["position"], m["in_flight"]) == expected[s["stage"]], (s["stage"], m)
        assert m["chunk"] == 0 and m["paired"] is False and m["adds"] == "the backward's working set"
        assert m["receive_buffers"] is None  # 1F1B posts each receive right before its use
        assert m["in_flight"] == s["in_flight"]
    text = run_cli("explain", str(spec)).stdout
    assert ("peak moment of stage 3: the backward of micro-batch 0 (action 2 of the step), 1 micro-batch held, "
            "plus the backward's working set") in text  # JSON's position counts from 0, the text from 1


def plain_walk(schedule: str, pp: int, v: int, m: int, rank: int, position: int) -> tuple[str, int, int, int]:
    """(kind, chunk, micro-batch, chunk-micro-batches held while it runs) of the action at
    `position`: held after a forward, before a backward (written here, apart from the module)."""
    held = 0
    numbered: dict[tuple[str, int], int] = {}
    for i, (kind, chunk) in enumerate(actions(schedule, pp, v, m, rank)):
        key = ("W" if kind == "W" else "F" if kind == "F" else "B", chunk)
        index = numbered.get(key, 0)
        numbered[key] = index + 1
        if kind == "F":
            held += 1
        if i == position:
            return kind, chunk, index, held
        if kind in ("B", "W"):
            held -= 1
    raise AssertionError(f"no action {position}")


NAMES = {"forward": "F", "backward": "B", "backward-input": "I", "backward-weight": "W"}


@pytest.mark.parametrize("name", ["llama3-405b", "mixtral-8x7b-5d", "deepseek-v3-like", "gpt3-175b"])
def test_the_named_action_is_the_schedules(name):
    comp = compile_path(str(ROOT / "specs" / f"{name}.par"))
    result = estimate(comp.plan)
    k = knobs_of(comp.plan, result.runtime)
    moments = peak_moments(comp.plan, result)
    assert len(moments) == k.pp > 1 and all(m is not None for m in moments)
    for stage, moment in zip(result.stages, moments, strict=True):
        kind, chunk, index, held = plain_walk(k.schedule, k.pp, k.virtual_stages, k.microbatches, stage.stage,
                                              moment.position)
        if moment.action == "idle":  # between computations: the state after the named action
            held -= kind in ("B", "W")
            assert (moment.chunk, moment.microbatch) == (chunk, index)
        else:
            assert (NAMES[moment.action], moment.chunk, moment.microbatch) == (kind, chunk, index)
        assert stage.in_flight == held, (name, stage.stage)  # the model's figure against the plain walk


def test_totals_are_unchanged_by_the_moment():
    """The moment is carried beside the figures; `peak` (search's path) still equals `per_stage`."""
    from parc.memory import peak

    comp = compile_text(ONE_F_ONE_B, path="p4.par")
    result = estimate(comp.plan)
    k = knobs_of(comp.plan, result.runtime)
    assert peak(shape_of(comp.plan), k) == (result.peak_bytes, result.peak_stage)


def test_a_long_step_is_named_in_full_and_quickly(tmp_path):
    """65,536 micro-batches on 4 stages: the moment is found on the model's short walk and
    numbered as in the full step (1F1B by hand: stage 0's first backward, of micro-batch 0, is
    action 4; stage 3's is action 1), without walking 65,536 micro-batches (the fuzzer's
    62-million-micro-batch spec timed explain out when every action was walked)."""
    spec = tmp_path / "long.par"
    spec.write_text(ONE_F_ONE_B.replace("global-batch 16", "global-batch 131072"))
    report = json.loads(run_cli("explain", str(spec), "--format", "json").stdout)
    assert report["microbatches"] == 65536
    stage0 = report["memory"]["per_stage"][0]["peak_moment"]
    assert (stage0["action"], stage0["microbatch"], stage0["position"], stage0["in_flight"]) == ("backward", 0, 4, 4)
    text = run_cli("explain", str(spec)).stdout
    assert ("peak moment of stage 3: the backward of micro-batch 0 (action 2 of the step), 1 micro-batch held, "
            "plus the backward's working set") in text  # JSON's position counts from 0, the text from 1


def accepted_layouts():
    """(schedule, pp, v, m) over a small grid, where torch builds the schedule."""
    from parc.memory import schedules

    out = []
    for schedule in schedules.MULTI_STAGE:
        for pp in (2, 3, 4):
            for v in ((2,) if schedule in ("zbv", "dualpipe-v") else (2, 3)):
                for m in (2, 3, 4, 6, 8, 12):
                    if schedule.startswith("interleaved") and not schedules.interleaved_accepts(pp, m):
                        continue
                    if schedules.receive_moments(schedule, pp, v, m, 0) is not None:
                        out.append((schedule, pp, v, m))
    return out


def test_every_moment_of_every_accepted_schedule_is_named():
    """Every moment `receive_moments` keeps (the states the model can pick as a stage's peak,
    idle ones included) names an action of the rank's step: an idle moment is filed under the
    rank's last chunk whichever ran last, and was left unnamed."""
    from parc.memory import schedules
    from parc.memory.moment import name_moment

    layouts = accepted_layouts()
    assert len(layouts) > 40
    named = idle = 0
    for schedule, pp, v, m in layouts:
        for rank in range(pp):
            for moment in schedules.receive_moments(schedule, pp, v, m, rank):
                found = name_moment(schedule, pp, v, m, rank, moment)
                assert found is not None, (schedule, pp, v, m, rank, moment)
                assert found.in_flight == sum(moment[0]) and found.receive_buffers == moment[4]
                named += 1
                idle += moment[3] == 3
                assert (found.action == "idle") == (moment[3] == 3)
    assert named > 1000 and idle > 100


def long_layouts(pps=(2, 3, 4), ms=(10, 15, 16, 20, 21, 24)):
    """(schedule, pp, v, m) whose step is longer than the model's walk (`walk_microbatches`)."""
    from parc.memory import schedules

    out = []
    for schedule in ("1f1b", *schedules.MULTI_STAGE):
        for pp in pps:
            for v in ((1,) if schedule == "1f1b" else (2,) if schedule in ("zbv", "dualpipe-v") else (2, 3)):
                for m in ms:
                    if schedule.startswith("interleaved") and not schedules.interleaved_accepts(pp, m):
                        continue
                    if schedules.walk_microbatches(schedule, pp, m) < m:
                        out.append((schedule, pp, v, m))
    return out


def test_the_shorter_walk_names_the_full_steps_action(monkeypatch):
    """A step longer than the model's walk is named on that walk and renumbered; the same moment
    found by walking the whole step (its own receive trace, every action) names the same action,
    chunk, micro-batch and position."""
    check_against_the_full_walk(monkeypatch, long_layouts(), 30, 500)


@pytest.mark.long
def test_the_shorter_walk_names_the_full_steps_action_on_deep_pipelines(monkeypatch):
    """As above on pp 8 and 16 with up to 128 micro-batches (minutes: left out by default)."""
    check_against_the_full_walk(monkeypatch, long_layouts((8, 16), (40, 64, 96, 128)), 30, 2000)


def check_against_the_full_walk(monkeypatch, layouts, at_least_layouts, at_least_moments):
    from parc.memory import moment as M
    from parc.memory import schedules

    assert len(layouts) > at_least_layouts
    cases = []
    for schedule, pp, v, m in layouts:
        for rank in range(pp):
            moments = (schedules.receive_moments(schedule, pp, v, m, rank) if schedule != "1f1b" else
                       tuple((*s, None) for s in schedules.moment_states(schedule, pp, v, m, rank)))
            for moment in moments or ():
                cases.append(((schedule, pp, v, m, rank, moment), M.name_moment(schedule, pp, v, m, rank, moment)))
    monkeypatch.setattr(M, "walk_microbatches", lambda schedule, pp, m: m)  # walk the whole step
    assert len(cases) > at_least_moments
    for args, short in cases:
        full = M.name_moment(*args)
        assert full is not None and full.microbatch is not None, args
        assert short == full, args


def test_naming_a_long_steps_moments_lowers_no_second_trace():
    """The 405B spec at 3,072 micro-batches per step: naming every stage's moment reuses the
    receive trace the model lowered on its short walk and lowers none of its own (it lowered the
    full step for every stage: explain 0.8 -> 6.2 s), and every stage's moment is numbered."""
    from parc.memory import schedules

    text = (ROOT / "specs" / "llama3-405b.par").read_text().replace("global-batch 2048 ", "global-batch 196608 ")
    comp = compile_text(text, path="long405.par")
    result = estimate(comp.plan)
    k = knobs_of(comp.plan, result.runtime)
    assert k.microbatches == 3072 and schedules.walk_microbatches(k.schedule, k.pp, k.microbatches) < 3072
    misses = schedules._receive_trace.cache_info().misses
    moments = peak_moments(comp.plan, result)
    assert schedules._receive_trace.cache_info().misses == misses
    assert len(moments) == 16 and all(m is not None and m.microbatch is not None for m in moments)


def test_a_forward_named_at_the_peak_is_called_the_models_bound():
    """specs/llama3-405b.par's stage 1: its worst state (77 chunk-micro-batches with 2 receives
    alive) stands at a forward and at no backward, and the model charges that moment chunk 0's
    backward working set: the line says the figure is the model's bound, not the forward's own
    peak. The state is checked here on a plain walk of the schedule (held after the forward)."""
    comp = compile_path(str(ROOT / "specs" / "llama3-405b.par"))
    result = estimate(comp.plan)
    k = knobs_of(comp.plan, result.runtime)
    moments = peak_moments(comp.plan, result)
    forwards = [(s, m) for s, m in zip(result.stages, moments, strict=True) if m.action == "forward"]
    assert forwards
    for stage, moment in forwards:
        assert moment.bound and "(the model's bound: it charges a forward its chunk's backward working set)" in \
            moment.adds
        kind, chunk, index, held = plain_walk(k.schedule, k.pp, k.virtual_stages, k.microbatches, stage.stage,
                                              moment.position)
        assert (kind, chunk, index, held) == ("F", moment.chunk, moment.microbatch, stage.in_flight)
    assert not any(m.bound for m in moments if m.action != "forward")
    text = run_cli("explain", str(ROOT / "specs" / "llama3-405b.par")).stdout
    line = next(x for x in text.splitlines() if x.startswith("peak moment of stage 1: "))
    assert line == ("peak moment of stage 1: the forward of micro-batch 29 on chunk 0 (action 79 of the step), "
                    "77 chunk-micro-batches held, plus the backward's working set of chunk 0 and 2 receive buffers "
                    "alive (the model's bound: it charges a forward its chunk's backward working set)")


SMALL_PIPELINE = FOUR_STAGES + "pp {\n  schedule SCHEDULE\n  virtual-stages 2\n}\n"


def torch_receives_alive(schedule: str, pp: int, v: int, m: int, rank: int, action: str, chunk: int,
                         microbatch: int) -> int:
    """The receive buffers alive on `rank` once the computation (action, local chunk,
    micro-batch) has taken its inputs, walked on torch's own lowering of the step
    (`_add_send_recv`), apart from parc's receive trace."""
    from .test_receive_buffers import MULTI, _fake, torch_schedules

    def owner(s):
        return (s if s < pp else 2 * pp - 1 - s) if schedule in ("zbv", "dualpipe-v") else s % pp

    cls = getattr(torch_schedules, MULTI[schedule])
    fake = _fake(pp, v, m)
    lowered = {r: torch_schedules._add_reduce_grad(torch_schedules._add_unshard_reshard(
        cls._calculate_single_rank_operations(fake, r)), m) for r in range(pp)}
    lowered = torch_schedules._add_send_recv(lowered, stage_to_rank=owner, num_stages=pp * v)
    local = {s: c for c, s in enumerate(sorted(s for s in range(pp * v) if owner(s) == rank))}
    alive, received = 0, set()
    for op in lowered[rank]:
        subs = op.sub_actions or (op,)
        for a in subs:
            kind, key = a.computation_type.value, (a.stage_index, a.microbatch_index)
            if kind in ("F", "B", "I") and ("RECV_F" if kind == "F" else "RECV_B", key) in received:
                alive -= 1
        for a in subs:
            kind = a.computation_type.value
            if kind == NAMES[action] and local.get(a.stage_index) == chunk and a.microbatch_index == microbatch:
                return alive
        for a in subs:
            if a.computation_type.value in ("RECV_F", "RECV_B"):
                alive += 1
                received.add((a.computation_type.value, (a.stage_index, a.microbatch_index)))
    raise AssertionError(f"{action} of micro-batch {microbatch} on chunk {chunk} not in rank {rank}'s lowering")


@pytest.mark.parametrize("schedule", ["interleaved-1f1b", "interleaved-zb", "zbv", "dualpipe-v"])
def test_the_named_receives_are_torchs(schedule):
    """The receive buffers a stage's peak moment holds (and so its p2p figure), against a walk
    of torch's own lowering at the named computation; the chunk-micro-batches held against a plain
    walk of the schedule. Moments at a computation only (a weight pass or an idle moment takes
    the receives alive between computations)."""
    pytest.importorskip("torch")
    comp = compile_text(SMALL_PIPELINE.replace("SCHEDULE", schedule), path=f"{schedule}.par")
    result = estimate(comp.plan)
    k = knobs_of(comp.plan, result.runtime)
    receive = receive_bytes(shape_of(comp.plan), k)
    moments = peak_moments(comp.plan, result)
    checked = 0
    for stage, moment in zip(result.stages, moments, strict=True):
        assert moment is not None
        if moment.receive_buffers is None or moment.action in ("idle", "backward-weight"):
            continue
        alive = torch_receives_alive(k.schedule, k.pp, k.virtual_stages, k.microbatches, stage.stage,
                                     moment.action, moment.chunk, moment.microbatch)
        assert stage.p2p == alive * receive, (schedule, stage.stage, moment)
        assert stage.in_flight == plain_walk(k.schedule, k.pp, k.virtual_stages, k.microbatches, stage.stage,
                                             moment.position)[3]
        checked += 1
    assert checked > 0
