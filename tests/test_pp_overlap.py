"""Pipeline sends beside the next chunk (`timing.Software.pp_overlap`, `timing.pp_sends_exposed`).

What each runtime does is read from its code (docs/time-model.md, "Pipeline sends beside the next
chunk"): Megatron-Core's interleaved schedule with `overlap_p2p_comm` waits on a send only a
chunk later; from Megatron-LM 260cba7133 it waits on the forward send at once; without
interleaving every send is waited on. The tests hold the model to those facts: a waited send
costs its whole transfer, an overlapped one never less than the SMs it holds nor more than its
transfer, and only what outlasts the computation beside it; and the reader gives each published
row the behaviour its own release ships.
"""

from __future__ import annotations

import sys
from dataclasses import replace

import pytest
from parc import kernels, timing
from parc.calibration import DEFAULT
from parc.memory.inputs import knobs_of, shape_of
from parc.pipeline import compile_text
from parc.targets import software_of

from .conftest import ROOT, load_yaml

SPEC = """
job pp_overlap
{layout} on nodes(8 gpus, nvlink)
model llama3-70b
hardware {{ gpu h100-sxm, network 8 x 400 Gb/s }}
target megatron
train {{ seq 8192, global-batch 64, micro-batch 1, precision bf16, optimizer adam, recompute none }}
{pp}
"""

INTERLEAVED = "pp { schedule interleaved-1f1b, virtual-stages 4 }"


def _ranks(layout: str, pp: str, overlap: str):
    """The rank loads and times of a Megatron job on H100, its sends charged under `overlap`."""
    plan = compile_text(SPEC.format(layout=layout, pp=pp), path="pp.par").plan
    hw = timing.hardware_of(plan)
    shape, k, geo = shape_of(plan), knobs_of(plan, "megatron"), timing.geometry_of(plan, hw)
    sw = replace(software_of(plan), pp_overlap=overlap)
    loads, times = timing.rank_times(shape, k, hw, geo, DEFAULT, sw)
    send = timing.link(geo.pp, hw, DEFAULT).send(timing.ACT * k.seq * k.micro_batch * shape.hidden / k.tp)
    return loads, times, send, hw


@pytest.mark.parametrize("target", ["megatron", "torch", "torchtitan"])
def test_every_target_runs_its_interleaved_sends_beside_the_next_chunk(target):
    """Megatron-LM core_v0.16.0's `overlap_p2p_comm` and torch's `_PipelineScheduleRuntime` (parc's
    job, torchtitan) both post a multi-stage rank's sends without waiting on them at once."""
    text = SPEC.format(layout="tp 8 x pp 4 x dp 2", pp=INTERLEAVED).replace("target megatron", f"target {target}")
    assert software_of(compile_text(text, path="pp.par").plan).pp_overlap == "all"


def test_an_overlapped_send_costs_at_least_its_sms_and_at_most_its_transfer():
    """Interleaved ranks, sends between nodes (pp across nodes over the NIC): under "all" each
    send costs between its SM share of the transfer and the whole transfer, and here, where a
    chunk's computation outlasts the transfer, exactly the SM share; under "none" the whole
    transfer; under "backward" the forward sends whole and the backward ones shared."""
    loads, waited, send, hw = _ranks("tp 8 x pp 4 x dp 2", INTERLEAVED, "none")
    _, overlapped, _, _ = _ranks("tp 8 x pp 4 x dp 2", INTERLEAVED, "all")
    _, forward_waits, _, _ = _ranks("tp 8 x pp 4 x dp 2", INTERLEAVED, "backward")
    share = kernels.sm_share(kernels.NCCL_SMS, hw.sms)
    checked = 0
    for load in loads:
        assert load.chunks == 4
        w, o, f = waited[load], overlapped[load], forward_waits[load]
        assert w.exposed_f[3] == pytest.approx(load.sends_f * send)
        assert w.exposed_b[3] == pytest.approx(load.sends_b * send)
        chunk_forward = o.forward / load.chunks
        assert chunk_forward > send  # the computation beside a send outlasts it
        if load.sends_f:
            assert o.exposed_f[3] == pytest.approx(load.sends_f * share * send)
            assert f.exposed_f[3] == pytest.approx(load.sends_f * send)
            checked += 1
        if load.sends_b:
            assert o.exposed_b[3] == pytest.approx(load.sends_b * share * send)
            assert f.exposed_b[3] == pytest.approx(load.sends_b * share * send)
        assert 0 < share < 1
        assert o.total < w.total
    assert checked > 0


def test_a_send_longer_than_the_chunk_beside_it_shows_its_excess():
    """A slow pipeline link (200 MB/s a GPU): the transfer outlasts a chunk, and an overlapped send
    adds what is left of it after the chunk, T - W, never less than its SM share."""
    plan = compile_text(SPEC.format(layout="tp 8 x pp 4 x dp 2", pp=INTERLEAVED), path="pp.par").plan
    hw = replace(timing.hardware_of(plan), nic=2e8)
    shape, k, geo = shape_of(plan), knobs_of(plan, "megatron"), timing.geometry_of(plan, hw)
    sw = software_of(plan)
    loads, times = timing.rank_times(shape, k, hw, geo, DEFAULT, sw)
    send = timing.link(geo.pp, hw, DEFAULT).send(timing.ACT * k.seq * shape.hidden / k.tp)
    checked = 0
    for load in loads:
        r = times[load]
        beside = (r.backward_input + r.backward_weight + r.recompute) / load.chunks  # a forward send's
        if load.sends_f:
            assert send > beside
            assert r.exposed_f[3] == pytest.approx(load.sends_f * (send - beside))
            checked += 1
    assert checked > 0


def test_a_single_chunk_rank_waits_for_its_sends_whatever_the_runtime():
    """Megatron-LM turns `overlap_p2p_comm` off without interleaving: 1F1B's sends cost their
    whole transfer under every setting."""
    loads, waited, send, _ = _ranks("tp 8 x pp 4 x dp 2", "pp { schedule 1f1b }", "none")
    _, overlapped, _, _ = _ranks("tp 8 x pp 4 x dp 2", "pp { schedule 1f1b }", "all")
    assert loads and all(load.chunks == 1 for load in loads)
    for load in loads:
        assert overlapped[load].exposed_f[3] == waited[load].exposed_f[3] == pytest.approx(load.sends_f * send)
        assert overlapped[load].exposed_b[3] == waited[load].exposed_b[3] == pytest.approx(load.sends_b * send)


def _published():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import published

    return published


@pytest.mark.parametrize("file, row, expected", [
    # Megatron-Bridge 26.04: its Megatron-LM (23265d2, 2026-04-16) is the day before the wait
    ("megatron_bridge_releases.yaml", "bridge2604_gb200_llama31_405b_fp8mx", "all"),
    # 26.06 carries 260cba7133 (submodule addc601f57): the forward send waited on at once
    ("megatron_bridge_releases.yaml", "bridge2606_gb200_llama31_405b_fp8mx", "backward"),
    # DGX Cloud's v24.11.1 recipes: NeMo's launcher in the nemo:24.09 image, its GPT-3 config
    # stating overlap_p2p_comm true
    ("dgxc_benchmarking_h100.yaml", "dgxc2411_h100_gpt3_175b_bf16_1024gpu", "all"),
    # NeMo 24.07's table (NeMo 1, no config of its own stated): NeMo 1's example configs leave it off
    ("nemo_performance.yaml", "nemo2407_h100_gpt3_175b_512gpu", "none"),
    # MegaScale's Megatron-LM baseline: code of 2023-01-11, before 4eeff55d1f
    ("published_public.yaml", "megascale_megatron_175b_1024gpu", "none"),
    # torch.distributed.pipelining's multi-stage schedules
    ("published_public.yaml", "torchtitan_405b_512gpu_3d_interleaved", "all"),
])
def test_each_row_gets_the_sends_its_release_ships(file, row, expected):

    published = _published()
    entries = load_yaml((ROOT / "benchmarks" / "data" / file).read_text())
    entries = entries if isinstance(entries, list) else entries.get("runs", entries)
    entry = next(e for e in entries if e.get("id") == row)
    run = published.row_spec(entry, entries)
    assert run.software.pp_overlap == expected


@pytest.mark.parametrize("stated, expected", [
    ({"runtime": {"name": "Megatron-LM", "date": "2023-01-11"}}, "none"),  # before 4eeff55d1f
    ({"runtime": {"name": "Megatron-LM", "date": "2023-11"}}, "all"),
    ({"runtime": {"name": "Megatron-LM", "date": "2024"}}, "all"),  # the whole year past the default
    ({"runtime": {"name": "Megatron-LM", "date": "2023"}}, "none"),  # a year that holds the day decides nothing
    ({"runtime": {"name": "Megatron-LM", "date": "2026-05-02"}}, "backward"),  # 260cba7133 on
    ({"release": "v25.04"}, "all"),
    ({"release": "26.06.01"}, "backward"),
    ({"source": {"title": "recipe in the nvcr.io/nvidia/nemo:24.09 container (release v26.08.1)"}}, "all"),
    ({"source": {"title": "26.06.01 NeMo container"}}, "backward"),
    ({"release": "26.06", "notes": ["model.overlap_p2p_comm=False"]}, "none"),  # a stated flag first
    ({"notes": ["overlap_p2p_comm: true"]}, "all"),
    ({"release": "24.07"}, "none"),  # NeMo 1, its configs unstated
    ({"release": "24.07", "notes": ["the recipe runs NeMo's launcher"]}, "all"),  # its configs state it
])
def test_the_reader_reads_the_release_the_date_and_a_stated_flag(stated, expected):
    """`published.pp_overlap_of` on what a row may state: Megatron-LM code by its date, a NeMo
    container by its release or its image tag, and a stated `overlap_p2p_comm` above both."""
    published = _published()
    entry = {"group": "megatron", **stated}
    assert published.pp_overlap_of(entry, "megatron", None) == expected


def test_an_overlapped_send_keeps_the_nic_busy_in_the_window_it_runs_beside():
    """The NIC time data-parallel traffic queues behind (`timing.nic_busy`): a forward send run
    beside the next chunk's backward occupies the backward window, a backward send the forward
    one; waited on, each its own. The seconds only move between the windows."""
    loads, overlapped, _, hw = _ranks("tp 8 x pp 4 x dp 2", INTERLEAVED, "all")
    plan = compile_text(SPEC.format(layout="tp 8 x pp 4 x dp 2", pp=INTERLEAVED), path="pp.par").plan
    nic = timing.link(timing.geometry_of(plan, hw).pp, hw, DEFAULT)
    checked = 0
    for load in loads:
        r = overlapped[load]
        assert r.pp_windows == (1, 0)
        own = replace(r, pp_windows=(0, 1))
        beside, waited = timing.nic_busy(r, nic), timing.nic_busy(own, nic)
        assert sum(beside) == pytest.approx(sum(waited))
        if load.sends_f != load.sends_b:  # the windows differ by the sends that moved
            assert beside != pytest.approx(waited)
        checked += load.sends_f > 0
    assert checked > 0
    _, waited_ranks, _, _ = _ranks("tp 8 x pp 4 x dp 2", INTERLEAVED, "none")
    assert all(r.pp_windows == (0, 1) for r in waited_ranks.values())


GPIPE = "pp { schedule gpipe }"


def _torch_schedule_trace(schedule_class, stages: int, stage: int, microbatches: int) -> list[tuple]:
    """What torch's own single-stage schedule does on one rank, in order: each chunk computed
    ("F", i) / ("B", i), each p2p op posted ("post", kind, i) and waited on ("wait", kind, i).
    torch.distributed.pipelining's `_step_microbatches` is run as written, with a stage that
    records instead of computing and p2p calls that record instead of communicating."""
    from types import SimpleNamespace

    from torch.distributed.pipelining import schedules

    trace: list[tuple] = []
    stage_obj = SimpleNamespace(
        stage_index=stage, is_first=stage == 0, is_last=stage == stages - 1,
        get_fwd_recv_ops=lambda i: [("fwd_recv", i)] if stage > 0 else [],
        get_fwd_send_ops=lambda i: [("fwd_send", i)] if stage < stages - 1 else [],
        get_bwd_recv_ops=lambda i: [("bwd_recv", i)] if stage < stages - 1 else [],
        get_bwd_send_ops=lambda i: [("bwd_send", i)] if stage > 0 else [],
        forward_one_chunk=lambda i, *a, **kw: trace.append(("F", i)),
        backward_one_chunk=lambda i, **kw: trace.append(("B", i)),
        perform_reduce_grad=lambda *a: None)

    def batch(p2p, desc=None):
        trace.extend(("post", *op) for op in p2p)
        return {0: tuple(p2p)} if p2p else {}

    def wait(work):
        trace.extend(("wait", *op) for op in (work if isinstance(work, tuple) else ()))

    fake = SimpleNamespace(_n_microbatches=microbatches, _num_stages=stages, _stage=stage_obj, scale_grads=True,
                           _check_inputs=lambda a, k, t, losses: ([()] * microbatches, [{}] * microbatches),
                           _initialize_stage=lambda *a: None, _maybe_compute_loss=lambda *a: None,
                           _maybe_get_loss=lambda *a: None, _update_losses=lambda *a: None)
    saved = schedules._sorted_batch_p2p, schedules._batch_p2p, schedules._wait_batch_p2p
    schedules._sorted_batch_p2p = batch
    schedules._batch_p2p = lambda p2p, desc=None: batch(p2p)[0] if p2p else ()
    schedules._wait_batch_p2p = wait
    try:
        schedule_class._step_microbatches(fake)
    finally:
        schedules._sorted_batch_p2p, schedules._batch_p2p, schedules._wait_batch_p2p = saved
    return trace


def test_torchs_gpipe_posts_each_receive_just_before_its_chunk():
    """torch 2.13's `ScheduleGPipe`, run as written on a middle rank: it waits on its forward sends
    only after its last forward and on its backward sends after its last backward, but it posts
    each receive immediately before the chunk that needs it and waits on it there. A transfer
    cannot finish before its receive is posted, so each one still runs between the receiving
    rank's chunks, on the pipeline's critical path: the deferred waits hide nothing, and GPipe's
    sends are charged whole under every runtime (`timing.sends_overlapped`: only a multi-chunk
    rank, whose runtime posts its receives ahead, overlaps them). `Schedule1F1B` on the same
    rank waits on a send at most one chunk after posting it."""
    from torch.distributed.pipelining import Schedule1F1B, ScheduleGPipe

    trace = _torch_schedule_trace(ScheduleGPipe, stages=4, stage=1, microbatches=6)
    position = {event: n for n, event in enumerate(trace)}
    assert sum(1 for e in trace if e[0] == "wait" and e[1].endswith("_send")) == 12
    for i in range(6):
        for recv, compute in (("fwd_recv", "F"), ("bwd_recv", "B")):
            # posted, waited on, computed: nothing of the rank's between them
            assert position[("post", recv, i)] + 1 == position[("wait", recv, i)] == position[(compute, i)] - 1
        assert position[("wait", "fwd_send", i)] > position[("F", 5)]  # the send waits deferred
        assert position[("wait", "bwd_send", i)] > position[("B", 5)]

    trace = _torch_schedule_trace(Schedule1F1B, stages=4, stage=1, microbatches=6)
    computed = [n for n, e in enumerate(trace) if e[0] in ("F", "B")]
    waited = 0
    for n, event in enumerate(trace):
        if event[0] == "post" and event[1].endswith("_send"):
            done = trace.index(("wait", *event[1:]))
            assert sum(1 for c in computed if n < c < done) <= 1
            waited += 1
    assert waited == 12


def test_a_gpipe_rank_waits_for_its_sends_whatever_the_runtime():
    """GPipe's transfers run between the receiving rank's chunks (above): charged whole under
    "all" as under "none", for parc's torch job as for any runtime."""
    text = SPEC.format(layout="tp 8 x pp 4 x dp 2", pp=GPIPE).replace("target megatron", "target torch")
    plan = compile_text(text, path="pp.par").plan
    assert software_of(plan).pp_overlap == "all"
    hw = timing.hardware_of(plan)
    shape, k, geo = shape_of(plan), knobs_of(plan, "torch"), timing.geometry_of(plan, hw)
    send = timing.link(geo.pp, hw, DEFAULT).send(timing.ACT * k.seq * k.micro_batch * shape.hidden / k.tp)
    loads, times = timing.rank_times(shape, k, hw, geo, DEFAULT, software_of(plan))
    assert loads and all(load.chunks == 1 for load in loads)
    for load in loads:
        assert times[load].exposed_f[3] == pytest.approx(load.sends_f * send)
        assert times[load].exposed_b[3] == pytest.approx(load.sends_b * send)
