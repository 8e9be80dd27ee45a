"""The outer cluster search's shortcuts (issue 18, point 4): each is exact, and held so here.

- `layout_degrees`: the degrees a valid layout can take per axis. The layout search enumerates
  only those (`search(degree_values=...)`): it must find the same layouts, with the same counts
  of valid assignments and groups, as the search that walks every ordered factorisation.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from parc.pipeline import compile_text
from parc.search import search
from parc.search.cluster import layout_degrees

from .test_bounds import layouts

EVERY_HOLE_8B = ("job q\ntp ? x cp ? x pp ? x dp ? x ep ? on nodes(4 gpus, nvlink)\norder ?\n"
                 "model llama3-8b { layers 30 }\nhardware { gpu h100-sxm, nodes NODES }\n"
                 "train { seq 4096, global-batch 120, micro-batch ?, recompute ? }\n"
                 "tp { sequence-parallel ? }\npp { schedule ?, virtual-stages ? }\ndp { sharding ? }\n")
"""Every hole open, 30 layers and a batch of 120: node counts of many divisors (3, 5, ...) that
the rules mostly reject."""

MOE_FOLDED = ("job q\ntp ? x cp ? x pp ? x dp ? on nodes(8 gpus, nvlink)\nep ? over dp x cp\norder ?\n"
              "model mixtral-8x7b\nhardware { gpu h100-sxm, nodes NODES }\n"
              "train { seq 8192, global-batch 96, micro-batch ?, recompute ? }\n"
              "pp { schedule ?, virtual-stages ? }\ndp { sharding ? }\n")
"""An MoE model with ep folded over dp x cp (the fold's ep is not a layout axis)."""

MOE_AXIS = ("job q\ntp ? x pp ? x dp ? x ep ? on nodes(8 gpus, nvlink)\n"
            "model mixtral-8x7b\nhardware { gpu h100-sxm, nodes NODES }\n"
            "train { seq 4096, global-batch 96, micro-batch 1, recompute ? }\n")
"""ep as a layout axis of its own (it divides the batch with dp)."""

SPLIT = ("job q\ntp ? x pp ? x dp ? on nodes(8 gpus, nvlink)\nmodel llama3-8b\n"
         "hardware { gpu h100-sxm, nodes NODES }\n"
         "train { seq 4096, global-batch 96, micro-batch 1, recompute ? }\n"
         "pp { split [8, 8, 8, 8], schedule ?, virtual-stages ? }\n")
"""A written split: pp x v is its length, whatever divides the layers."""

CASES = [(EVERY_HOLE_8B, n) for n in (3, 6, 9, 15, 30, 36)] + [(MOE_FOLDED, n) for n in (3, 12)] + \
    [(MOE_AXIS, 6), (SPLIT, 2), (SPLIT, 6)]


@pytest.mark.parametrize(("template", "nodes"), CASES)
def test_a_search_over_the_layout_degrees_is_the_same_search(template, nodes):
    """The same top 5 (assignments and steps), valid assignments, groups and memory and time
    evaluations, with fewer degree tuples walked where the cluster's size has many divisors."""
    c = compile_text(template.replace("NODES", str(nodes)))
    assert c.plan is not None and not any(d.is_error for d in c.diagnostics)
    full = search(c, top=5)
    fast = search(c, top=5, degree_values=layout_degrees(c.plan))
    assert [x.assignment for x in fast.candidates] == [x.assignment for x in full.candidates]
    assert [x.step for x in fast.candidates] == [x.step for x in full.candidates]
    assert [d.code for d in fast.diagnostics] == [d.code for d in full.diagnostics]
    for name in ("valid", "groups", "merged", "bounded", "out_of_memory", "timed", "memory_evaluations",
                 "time_evaluations"):
        assert getattr(fast.stats, name) == getattr(full.stats, name), name
    assert fast.stats.raw <= full.stats.raw


def test_the_layout_degrees_cut_the_walk_of_a_many_divisor_cluster():
    """Not vacuous: on 36 nodes of 4 GPUs (144 = 2^4 x 3^2) most degree tuples are skipped."""
    c = compile_text(EVERY_HOLE_8B.replace("NODES", "36"))
    full = search(c, top=1)
    fast = search(c, top=1, degree_values=layout_degrees(c.plan))
    assert full.candidates and fast.stats.raw * 2 < full.stats.raw


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(layouts())
def test_every_valid_layout_takes_the_layout_degrees(text):
    """The premise, on tests/test_bounds.py's random layouts that `parc check` accepts (memory
    aside: E04xx): every degree is in its axis's set."""
    compiled = compile_text(text, path="x.par")
    plan = compiled.plan
    assume(plan is not None)
    assume(not any(d.is_error and not d.code.startswith("E04") for d in compiled.diagnostics))
    allowed = layout_degrees(plan)
    for name in ("tp", "cp", "pp", "dp", "ep"):
        degree = getattr(plan.layout, name).degree or 1
        assert degree in allowed[name], (name, degree)


@pytest.mark.parametrize("path", ["tests/golden/search/specs/five-axes.par", "tests/golden/search/specs/schedules.par",
                                  "tests/golden/search/specs/moe-fold.par"])
def test_the_shared_first_backward_floor_is_the_plain_sum(path):
    """`memory.model.first_backward_floors`, kept on what it reads and summed per chunk signature,
    equals the plain sum over each rank's chunks (one micro-batch's saved activations on each,
    plus the last chunk's working set, or one chunk's micro-batch with its own), on sampled
    groups of three spaces, read twice (the second from the cache), interleaved ranks of many
    chunks among them."""
    import random

    from parc.memory.model import (
        _chunk_activations,
        activation_knobs,
        distinct_rank_signatures,
        first_backward_floors,
        released_backward,
    )
    from parc.search.engine import Engine

    from .test_search_engine import _space

    engine = Engine(_space(path), keep=1)
    groups = []
    engine._scan = lambda found: groups.extend(found)
    engine.run()
    assert groups
    shape = engine.shape
    sample = random.Random(path).sample(groups, min(300, len(groups)))
    assert any(group[2] > 1 for group in sample)  # virtual stages: ranks of several chunks
    for _ in range(2):
        for group in sample:
            k = engine._knobs(*group)
            ak = activation_knobs(k.tp, k.sequence_parallel, k.cp, k.cp_flavour, k.seq, k.micro_batch, k.runtime,
                                  k.ep if shape.moe else 1, k.precision, k.device)
            plain = {}
            for mine in distinct_rank_signatures(shape, k.pp, k.virtual_stages, k.schedule, k.split):
                pieces = [_chunk_activations(shape, ak, sig, k.recompute, k.recompute_layers, k.pp > 1,
                                             released_backward(k.schedule, k.pp)) for sig in mine]
                # a micro-batch on each chunk with the last chunk's working set, or any chunk's own
                plain[mine] = max(sum(p.activations.saved for p in pieces) + pieces[-1].working,
                                  max(p.activations.saved + p.working for p in pieces))
            assert dict(first_backward_floors(shape, k)) == plain, group
