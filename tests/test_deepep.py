"""DeepEP's deduplicated dispatch (`kernels.deepep_fractions`, `Software.ep_dispatcher`) and the
SMs its kernels take from overlapped computation (`Software.ep_overlap`), against a literal
simulation of where DeepEP sends each token and against hand-computed times."""

from __future__ import annotations

from dataclasses import replace

import pytest
from parc import hbm, kernels, timing
from parc.calibration import DEFAULT
from parc.memory.inputs import knobs_of, shape_of
from parc.pipeline import compile_text
from parc.targets import software_of


def _simulated(experts: int, top_k: int, ranks: int, local: int, tokens: int = 6000, seed: int = 0,
               node_limit: int = 0):
    """Copies per token over NVLink and over the NIC, walking DeepEP's path for each token: a
    random source rank, top_k distinct experts at random (experts dealt to ranks in blocks, ranks
    to nodes in blocks); one RDMA copy to the same-index GPU of each other node holding a chosen
    expert, which forwards it over NVLink once to each other GPU of its node holding one; inside
    the source node one NVLink copy to each other GPU holding one."""
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(seed)
    per_rank = experts // ranks
    nvlink = nic = 0
    for _ in range(tokens):
        source = int(rng.integers(ranks))
        if node_limit:  # the token's experts within node_limit nodes picked at random
            picked = rng.choice(ranks // local, size=node_limit, replace=False)
            per_node = experts * local // ranks
            pool = np.concatenate([np.arange(n * per_node, (n + 1) * per_node) for n in picked])
            chosen = rng.choice(pool, size=top_k, replace=False)
        else:
            chosen = rng.choice(experts, size=top_k, replace=False)
        targets = {int(e) // per_rank for e in chosen}
        home, index = divmod(source, local)
        by_node: dict[int, set[int]] = {}
        for r in targets:
            by_node.setdefault(r // local, set()).add(r)
        for node, ranks_there in by_node.items():
            receiver = source if node == home else node * local + index
            if node != home:
                nic += 1
            nvlink += len(ranks_there - {receiver})
    return nvlink / tokens, nic / tokens


@pytest.mark.parametrize("experts, top_k, ranks, local, limit", [
    (128, 8, 32, 8, 0),   # Qwen3-235B, ep 32 over 4 nodes (the ModelZoo's cross-node rows)
    (128, 8, 8, 2, 0),    # ep 8 spread 2 per node over 4 nodes
    (256, 8, 64, 8, 0),   # ep 64 over 8 nodes without a node limit
    (256, 8, 64, 8, 4),   # DeepSeek-V3: ep 64 over 8 nodes, each token within 4 of them
    (128, 8, 8, 8, 0),    # inside one node: one copy per destination GPU
])
def test_deepep_bytes_match_a_simulated_dispatch(experts, top_k, ranks, local, limit):
    near, far = kernels.deepep_fractions(experts, top_k, ranks, local, limit)
    sim_near, sim_far = _simulated(experts, top_k, ranks, local, node_limit=limit)
    assert sim_near > 0
    assert near * top_k == pytest.approx(sim_near, rel=0.03)
    assert far * top_k == pytest.approx(sim_far, rel=0.03, abs=1e-9)
    # a plain all-to-all sends (ranks - local) / ranks of the copies over the NIC: DeepEP never more
    assert far <= (ranks - local) / ranks + 1e-12


CROSS_NODE = "\n".join([
    "tp 2 x dp 16 x pp 8 on nodes(8 gpus, nvlink)", "ep 32 over tp x dp",
    "model {", "  layers 94, hidden 4096, ffn 12288, heads 64, kv-heads 4, vocab 151936", "  head-dim 128",
    "  activation swiglu, norm rmsnorm, position rope, tied-embeddings off",
    "  experts 128, top-k 8, expert-ffn 1536, shared-experts 0, moe-layers all", "}",
    "hardware { gpu h100-sxm, network 8 x 400 Gb/s }", "target megatron",
    "train {", "  seq 4096, global-batch 2048, micro-batch 1", "  precision bf16, optimizer adam, recompute none", "}",
    "tp { sequence-parallel on }",
    "pp { schedule interleaved-1f1b, virtual-stages 4, split [2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, "
    "3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 2] }",
    "dp { sharding none }"]) + "\n"


def test_deepep_shortens_a_cross_node_exchange_by_its_nic_bytes():
    """The ModelZoo's cross-node Qwen3-235B layout (ep 32 over 4 nodes, exposed all-to-alls): the
    exchange is NIC-bound either way, so the ep time per step falls by the ratio of the NIC
    copies per token, DeepEP's simulated distinct remote nodes against the plain all-to-all's
    top_k x (n - k) / n remote copies."""
    compiled = compile_text(CROSS_NODE, path="cross.par")
    assert compiled.plan is not None, compiled.diagnostics
    sw = software_of(compiled.plan)
    plain = timing.predict(compiled.plan, sw=sw).breakdown
    deepep = timing.predict(compiled.plan, sw=replace(sw, ep_dispatcher="deepep")).breakdown
    _, remote_nodes = _simulated(128, 8, 32, 8)
    ratio = remote_nodes / (8 * 24 / 32)
    assert plain.exposed["ep"] > 0
    # latency (31 steps per call) is the same on both sides and small against the bytes
    assert deepep.exposed["ep"] / plain.exposed["ep"] == pytest.approx(ratio, rel=0.05)
    assert deepep.step < plain.step
    assert deepep.step >= deepep.bounds.links * 0.999


def test_overlapped_deepep_costs_the_sms_it_takes():
    """A MoE layer whose all-to-alls hide under another micro-batch's computation (1F1B overlap,
    DualPipe): DeepEP's kernels hold 20 of the 132 SMs while they transfer, so W seconds of
    computation beside T seconds of transfer take max(T, W + 20/132 T), each exchange beside the
    block of the other micro-batch it is paired with (`timing.paired_ep_exposed`). By hand, from
    one layer's Work (attention g forward and backward, expert MLP g forward, 2 g backward) and
    the link's four exchanges."""
    hw = timing.Hardware("hopper", 989e12, 1979e12, 3.35e12, intra=450e9, nic=50e9, level=8)
    ep = timing.link(timing.Group(32, 8), hw, DEFAULT)
    none = timing.link(timing.Group(1, 1), hw, DEFAULT)
    share = kernels.DEEPEP_SMS / 132
    payload = 256e6
    near, far = kernels.deepep_fractions(128, 8, 32, 8)
    call = max(near * payload / ep.near, far * payload / ep.far) + 31 * ep.latency
    transfer = 4 * call  # dispatch and combine, forward and backward
    for gemm in (0.5e-3, 5e-3):  # shorter than the transfers, then longer
        work = timing.Work(gemm=gemm, attention_f=gemm, attention_b=gemm, moe_again=gemm, ep_bytes=payload,
                           ep_fanout=(128, 8, 0), ep_sm_share=share, moe=True)
        x = timing.exposed(work, none, none, ep, True, "none", DEFAULT)
        blocks = (gemm, 2 * gemm, gemm, gemm)  # attention forward, MLP backward, MLP forward, attention backward
        assert x.ep_f + x.ep_b == pytest.approx(sum(max(call - w, share * call) for w in blocks), rel=1e-9)
    # exposed (no overlap): the whole transfer
    x = timing.exposed(timing.Work(gemm=5e-3, ep_bytes=payload, ep_fanout=(128, 8, 0), ep_sm_share=share, moe=True),
                       none, none, ep, False, "none", DEFAULT)
    assert x.ep_f + x.ep_b == pytest.approx(transfer, rel=1e-9)


QWEN3_30B = "\n".join([
    "dp 8 on nodes(8 gpus, nvlink)", "ep 8 over dp",
    "model {", "  layers 48, hidden 2048, ffn 6144, heads 32, kv-heads 4, vocab 151936", "  head-dim 128",
    "  activation swiglu, norm rmsnorm, position rope, tied-embeddings off",
    "  experts 128, top-k 8, expert-ffn 768, shared-experts 0, moe-layers all", "}",
    "hardware { gpu h100-sxm }", "target megatron",
    "train {", "  seq 4096, global-batch 64, micro-batch 1", "  precision bf16, optimizer adam, recompute none", "}",
    "dp { sharding zero1 }"]) + "\n"
"""Qwen3-30B-A3B on one H100 node, ep 8 (16 experts a rank): Megatron-Bridge's small-expert MoE."""


@pytest.mark.parametrize("dispatcher", ["deepep", "hybridep"])
def test_the_flex_dispatcher_does_not_re_sort_the_copies(dispatcher):
    """Megatron-Core's all-to-all path passes over the routed copies (16-bit, h wide) seven times
    forward: `permute` reads each token and writes its copies (2), the re-sort into local-expert
    order after the exchange and back before it (`sort_chunks_by_idxs`, 2 + 2), `unpermute`'s
    gate-weighted sum (1); backward nine (the permutations' gradients 5, the re-sorts 4). Under
    the flex dispatcher the tokens arrive once per rank and are expanded into expert order there
    (Megatron-Core's `permute` after DeepEP's dispatch, Hybrid-EP's own permute kernel after its
    own) and summed back before the combine: no re-sort. Qwen3-30B-A3B at ep 8, 16 experts a rank,
    4,096 tokens: the layer's forward and backward are 4 passes shorter each, in the time and in
    the ledger's bytes alike."""
    compiled = compile_text(QWEN3_30B, path="q30.par")
    assert compiled.plan is not None, compiled.diagnostics
    plan = compiled.plan
    shape, k, hw = shape_of(plan), knobs_of(plan, "megatron"), timing.hardware_of(plan)
    sw = replace(software_of(plan), balanced_routing=True)  # every rank the mean load: the copies above
    cases = [timing.LayerCase.of(k, True, replace(sw, ep_dispatcher=d)) for d in ("all-to-all", dispatcher)]
    works = [timing.layer_work(shape, case, hw, DEFAULT) for case in cases]
    pieces = [hbm.layer_bytes(shape, case) for case in cases]
    copy = 2 * 4096 * 8 * 2048  # bytes of one pass over the routed copies
    rate = hw.hbm * DEFAULT.hbm_efficiency
    assert works[0].memory_f - works[1].memory_f == pytest.approx(4 * copy / rate, rel=1e-9)
    assert works[0].memory_b - works[1].memory_b == pytest.approx(4 * copy / rate, rel=1e-9)
    assert pieces[0].memory_f - pieces[1].memory_f == pytest.approx(4 * copy, rel=1e-9)
    assert pieces[0].memory_b - pieces[1].memory_b == pytest.approx(4 * copy, rel=1e-9)
    assert works[0].gemm == works[1].gemm and works[0].attention_f == works[1].attention_f


def test_hybridep_sends_as_deepep_does_on_its_own_sms():
    """Hybrid-EP's buffers send a token once to each other NVLink domain holding one of its
    experts (its RDMA buffer holds a rank's tokens once per remote node), DeepEP's fan-out: the
    cross-node dispatch and combine are the same records, with the same spread, under either;
    overlapped, its kernels hold `HybridEpBuffer`'s 32 SMs (DeepEP's 20)."""
    compiled = compile_text(CROSS_NODE, path="cross.par")
    assert compiled.plan is not None, compiled.diagnostics
    plan = compiled.plan
    sw = software_of(plan)
    shape, hw = shape_of(plan), timing.hardware_of(plan)
    geo, k = timing.geometry_of(plan, hw), knobs_of(plan, "megatron")

    def exchanges(dispatcher):
        _, steps = timing.rank_steps(shape, k, hw, geo, sw=replace(sw, ep_dispatcher=dispatcher))
        return [sorted((c.kind, c.payload, c.count, c.spread) for c in step.ledger.collectives
                       if c.axis == "ep" and c.kind == "all_to_all" and c.payload > 1e6) for step in steps.values()]

    deepep, hybrid = exchanges("deepep"), exchanges("hybridep")
    assert deepep and all(deepep) and hybrid == deepep
    assert all(spread is not None for rank in hybrid for *_, spread in rank)
    w = timing.Work(moe=True)
    for dispatcher, sms in (("deepep", 20), ("hybridep", 32)):
        out = timing.dispatched(w, shape, hw, replace(sw, ep_dispatcher=dispatcher, moe_host_sync=False))
        assert out.ep_sm_share == pytest.approx(sms / 132)
        assert out.ep_fanout == (128, 8, 0)


@pytest.mark.parametrize("dispatcher", ["all-to-all", "deepep", "hybridep"])
def test_each_dispatcher_exchanges_its_own_metadata(dispatcher):
    """Before its tokens, each MoE layer's forward exchanges what the dispatcher needs to place
    them: the expert counts, one int64 per expert (8 x 128 bytes for Qwen3's 128 experts), for
    NCCL's all-to-all and DeepEP; Hybrid-EP all-gathers every rank's routing map, a byte per
    (token, expert): 4,096 tokens x 128 experts from each of the 8 ranks, 4 MiB gathered. Per
    step, once per MoE layer and micro-batch (48 layers, 8 micro-batches a rank)."""
    compiled = compile_text(QWEN3_30B, path="q30.par")
    assert compiled.plan is not None, compiled.diagnostics
    plan = compiled.plan
    sw = replace(software_of(plan), ep_dispatcher=dispatcher)
    hw = timing.hardware_of(plan)
    _, steps = timing.rank_steps(shape_of(plan), knobs_of(plan, "megatron"), hw, timing.geometry_of(plan, hw), sw=sw)
    assert steps
    for rank in steps.values():
        small = [c for c in rank.ledger.collectives if c.axis == "ep" and c.payload < 1e6 and c.kind == "all_to_all"]
        gathers = [c for c in rank.ledger.collectives if c.axis == "ep" and c.kind == "all_gather"]
        if dispatcher == "hybridep":
            assert not small and len(gathers) == 1
            assert gathers[0].payload == 8 * 4096 * 128 and gathers[0].count == 48 * 8
        else:
            assert not gathers and len(small) == 1
            assert small[0].payload == 8 * 128 and small[0].count == 48 * 8
