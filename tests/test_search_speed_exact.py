"""The speed-ups of the search's hot paths change no number: each fast path against the plain
one it replaces (kept as the reference), over many schedules, depths and micro-batch counts.

- `schedule.simulate` / `schedule.makespan` place actions in an order found once per schedule
  shape (`_placement`): checked against a list-scheduling loop written out here;
- the memory model's receive buffers are counted while lowering (`_walked_receives`): checked
  against `live_receives` over the full lowering `_lowered`.
"""

from __future__ import annotations

import random

import pytest
from parc import kernels as kernel_model
from parc import schedule
from parc.memory import schedules

SHAPES = [(s, pp, v) for s in ("gpipe", "1f1b") for pp in (1, 2, 3, 4, 8) for v in (1,)] + \
         [(s, pp, v) for s in ("interleaved-1f1b", "interleaved-zb") for pp in (1, 2, 3, 4, 8) for v in (1, 2, 3)] + \
         [(s, pp, 2) for s in ("zbv", "dualpipe-v") for pp in (1, 2, 3, 4, 8)]
MICRO = (1, 2, 3, 4, 8, 12, 16, 32)


def _reference_simulate(name, pp, v, m, d):
    """List scheduling as the module's docstring says it: every rank runs its actions in order,
    each as soon as the rank is free and its inputs have arrived (one p2p later from another
    rank). Returns the blocks as (rank, kind, chunk, micro, start, end)."""
    per_rank = schedule.rank_orders(name, pp, max(1, v) if pp == 1 else v, m)
    last = pp * (max(1, v) if pp == 1 else v) - 1
    done, clock, cursor, blocks = {}, [0.0] * pp, [0] * pp, []
    while any(cursor[r] < len(per_rank[r]) for r in range(pp)):
        moved = False
        for r in range(pp):
            while cursor[r] < len(per_rank[r]):
                a = per_rank[r][cursor[r]]
                needs = schedule.dependencies(a, last)
                if any(n not in done for n in needs):
                    break
                ready = max([clock[r]] + [done[n][1] + (d.p2p if done[n][0] != r else 0.0) for n in needs])
                end = ready + d.of(r, a.kind)
                blocks.append((r, a.kind, a.chunk, a.micro, ready, end))
                stream = "W" if a.kind == "W" else ("F" if a.kind == "F" else "B")
                done[(stream, a.chunk, a.micro)] = (r, end)
                clock[r], cursor[r], moved = end, cursor[r] + 1, True
        if not moved:
            raise schedule.ScheduleError("deadlock")
    return blocks


@pytest.mark.parametrize("name,pp,v", SHAPES)
def test_simulate_and_makespan_are_the_plain_list_scheduling(name, pp, v):
    rng = random.Random(f"{name}{pp}{v}")
    checked = 0
    for m in MICRO:
        d = schedule.Durations(tuple(rng.random() for _ in range(pp)), tuple(rng.random() for _ in range(pp)),
                               tuple(rng.random() for _ in range(pp)), rng.random() / 10)
        try:
            expected = _reference_simulate(name, pp, v, m, d)
        except (schedule.ScheduleError, ValueError, KeyError, IndexError):
            continue
        timeline = schedule.simulate(name, pp, v, m, d)
        assert [(b.rank, b.action.kind, b.action.chunk, b.action.micro, b.start, b.end)
                for b in timeline.blocks] == expected
        assert timeline.makespan == max(e for *_, e in expected)
        assert schedule.makespan(name, pp, v, m, d) == timeline.makespan
        checked += 1
    assert checked


@pytest.mark.parametrize("name,pp,v", [(s, pp, v) for s, pp, v in SHAPES if pp > 1 and s not in ("gpipe", "1f1b")]
                         + [pytest.param("interleaved-zb", 16, 4, marks=pytest.mark.slow),
                            pytest.param("interleaved-1f1b", 16, 8, marks=pytest.mark.slow)])
def test_receive_buffers_counted_while_lowering_are_those_of_the_full_lowering(name, pp, v):
    checked = 0
    for m in MICRO + (48, 64):
        try:
            lowered = schedules._lowered(name, pp, v, m)
        except ValueError:
            assert schedules._walked_receives(name, pp, v, m) is None
            continue
        assert schedules._walked_receives(name, pp, v, m) == tuple(
            schedules.live_receives(lowered[r]) for r in range(pp))
        checked += 1
    assert checked


PIPE_SPACES = ["tests/golden/search/specs/five-axes.par", "tests/golden/search/specs/moe-fold.par",
               "specs/llama3-70b-search.par"]


def _engine(path: str, **kwargs):
    from parc.pipeline import compile_path
    from parc.search.engine import Engine
    from parc.search.space import build_space

    return Engine(build_space(compile_path(path)), keep=14, **kwargs)


@pytest.mark.parametrize("path", PIPE_SPACES)
def test_sets_of_pipelines_rank_and_count_as_groups_bounded_one_by_one(path):
    """The scan with the pipelines of a layout queued as one set (`pipes_bound`) against the
    scan with every group queued at its own bound: the same top, the same evaluations. When a set
    comes out its groups' family memory floors are tried before they are queued, so a group that
    does not fit is counted so there where one by one it may stay in the queue, counted bounded
    out: only that split differs."""
    one_by_one = _engine(path)
    one_by_one.pipe_sets = False
    plain = one_by_one.run()
    sets = _engine(path)
    assert sets.pipe_sets
    fast = sets.run()
    assert plain.found
    assert [f.rank_key for f in fast.found] == [f.rank_key for f in plain.found]
    a, b = fast.stats, plain.stats
    assert (a.timed, a.time_evaluations, a.merged, a.valid, a.raw) == (b.timed, b.time_evaluations, b.merged, b.valid,
                                                                       b.raw)
    assert a.pruned == b.pruned and a.bounded + a.out_of_memory == b.bounded + b.out_of_memory
    assert a.out_of_memory >= b.out_of_memory
    assert fast.smallest_peak == plain.smallest_peak
    # every group the degrees' memory floor leaves is bounded on its own (`Engine._degrees_floor`)
    assert plain.stats.group_bounds == plain.stats.bound_evaluations <= plain.stats.groups
    if "llama3-70b-search" not in path:  # its schedule is written: one pipeline per pp
        assert fast.stats.pipe_set_bounds and fast.stats.group_bounds < plain.stats.group_bounds


@pytest.mark.parametrize("path", PIPE_SPACES[:2])
def test_a_set_of_pipelines_bound_is_below_each_of_its_groups_bound(path):
    engine = _engine(path)
    groups = []
    engine._scan = lambda found: groups.extend(found)
    engine.run()
    assert groups
    checked = 0
    for group in groups:
        assert engine.pipes_bound(*group) <= engine.bound(*group), group
        checked += 1
    assert checked


@pytest.mark.parametrize("path", PIPE_SPACES[:2])
def test_kept_rank_tails_are_the_time_models_own(path):
    """`Engine._rank_tail` keeps each rank's data-parallel tail and optimizer step on the plain
    numbers that determine them: over every group and sharding of a space, visited in a
    shuffled order (so kept values are reused across groups and pipelines), the kept tail is
    `timing.dp_exposed` + `timing.optimizer_seconds` + `timing.dp_copy_seconds` computed afresh."""
    from parc import timing

    engine = _engine(path)
    groups = []
    engine._scan = lambda found: groups.extend(found)
    engine.run()
    assert groups
    random.Random(18).shuffle(groups)
    sw, checked = engine.software, 0
    for group in groups[:400]:  # a sample: reused values come from many layouts still
        item = group[0]
        _, core, times, _, knobs = engine._parts(group)
        for ks in knobs:
            links = engine._best_links(item, ks.hsdp_shard)
            plain = core + max(timing.dp_exposed(r, ks, links, sw.grad_bytes, sw.dp_runtime, timing.serial_windows(sw, ks.pp), sw.gather_bytes)[0]
                               + timing.optimizer_seconds(r, ks, engine.hw, engine.constants)
                               + timing.dp_copy_seconds(timing.dp_copy_bytes(r, ks, links, sw), engine.hw, engine.constants)
                               for r in times)
            if engine.inside_is_fastest:
                assert engine._tail(item, ks, core, times) == plain
                checked += 1
    assert checked


@pytest.mark.parametrize("name", ["interleaved-1f1b", "interleaved-zb", "zbv", "dualpipe-v"])
def test_compute_turns_are_the_lowerings_turns_with_fsdp_and_weight_actions_emptied(name):
    """`_compute_turns` (what `_walked_receives` walks) against the plain composition it replaces:
    torch's order (`_indexed`), FSDP's rounds written out as operations (`_fsdp_rounds`) and the
    turns over them (`_turns`), with every action but F, B and I emptied."""
    codes = {schedules.F: 0, schedules.B: 1, schedules.I: 1}
    checked = 0
    for pp in (2, 3, 4, 5, 8):
        for v in ((2,) if name in ("zbv", "dualpipe-v") else (1, 2, 3, 4)):
            for m in (1, 2, 3, 4, 5, 8, 12, 16, 32):
                for r in range(pp):
                    try:
                        plain = schedules._turns(name, pp, r, schedules._fsdp_rounds(
                            schedules._indexed(name, pp, v, m, r)))
                    except (ValueError, IndexError, KeyError):
                        continue
                    expected = [tuple((codes[kind], stage, micro) for kind, stage, micro in turn if kind in codes)
                                for turn in plain]
                    assert list(schedules.decoded_turns(pp, v, schedules._compute_turns(name, pp, v, m, r))) == expected, (pp, v, m, r)
                    checked += 1
    assert checked


DEEP_TURN_SHAPES = [("interleaved-1f1b", 16, 8, 16), ("interleaved-zb", 16, 8, 64), ("interleaved-1f1b", 32, 4, 64),
                    ("interleaved-zb", 32, 5, 32), ("zbv", 64, 2, 96), ("dualpipe-v", 64, 2, 128),
                    ("dualpipe-v", 16, 2, 20)]


@pytest.mark.parametrize("name,pp,v,m", DEEP_TURN_SHAPES)
def test_compute_turns_of_deep_pipelines_are_the_lowerings_turns(name, pp, v, m):
    """The same comparison on the deep shapes the Megatron 1T rows lower (more chunks than the
    three stages FSDP holds, so the held set changes inside the steady state; pp 64), every rank."""
    codes = {schedules.F: 0, schedules.B: 1, schedules.I: 1}
    for r in range(pp):
        plain = schedules._turns(name, pp, r, schedules._fsdp_rounds(schedules._indexed(name, pp, v, m, r)))
        expected = [tuple((codes[kind], stage, micro) for kind, stage, micro in turn if kind in codes)
                    for turn in plain]
        assert list(schedules.decoded_turns(pp, v, schedules._compute_turns(name, pp, v, m, r))) == expected, (pp, v, m, r)



def _reference_receive_trace(name, pp, v, m):
    """`_receive_trace` as it was before its lookups per (direction, stage), its stride bound and
    its pass over empty turns: the lockstep pass by pass over every rank, each condition worked
    out at each turn, the flags' stride the walked turns' largest micro-batch index."""
    stages = pp * v
    owner = [0] * stages
    for r in range(pp):
        for c in range(v):
            owner[schedules._stage_of(name, pp, r, c)] = r
    todo = [schedules.decoded_turns(pp, v, schedules._compute_turns(name, pp, v, m, r)) for r in range(pp)]
    m = 1 + max((micro for turns in todo for turn in turns for _, _, micro in turn), default=0)
    arrived = [bytearray(stages * m), bytearray(stages * m)]
    alive, gap = [0] * pp, [0] * pp
    lives, gaps = [[] for _ in range(pp)], [[] for _ in range(pp)]
    heads, blocked, last = [0] * pp, [False] * pp, stages - 1
    unfinished = sum(1 for r in range(pp) if todo[r])
    while unfinished:
        progress = False
        for r in range(pp):
            turns = todo[r]
            if blocked[r] or heads[r] == len(turns):
                continue
            turn = turns[heads[r]]
            if not all(not (stage != 0 if code == 0 else stage != last) or arrived[code][stage * m + micro]
                       for code, stage, micro in turn):
                blocked[r] = True
                continue
            for code, stage, _micro in turn:
                if (stage != 0 and owner[stage - 1] != r) if code == 0 else (stage != last and owner[stage + 1] != r):
                    alive[r] -= 1
            if turn:
                gaps[r].append(gap[r])
                lives[r].append(alive[r])
                gap[r] = alive[r]
            for code, stage, micro in turn:
                if code == 0 and stage != last:
                    to = stage + 1
                elif code == 1 and stage != 0:
                    to = stage - 1
                else:
                    continue
                arrived[code][to * m + micro] = 1
                if owner[to] != r:
                    alive[owner[to]] += 1
                    gap[owner[to]] = max(gap[owner[to]], alive[owner[to]])
                    blocked[owner[to]] = False
            heads[r] += 1
            unfinished -= heads[r] == len(turns)
            progress = True
        if not progress:
            return None
    return tuple((tuple(lives[r]), tuple(gaps[r]) + (gap[r],)) for r in range(pp))


DEEP_TRACE_SHAPES = [("interleaved-1f1b", 32, 4, 64), ("interleaved-1f1b", 64, 2, 128), ("interleaved-zb", 32, 4, 128),
                     ("interleaved-zb", 16, 8, 64), ("interleaved-1f1b", 16, 8, 16), ("zbv", 64, 2, 96),
                     ("dualpipe-v", 64, 2, 128), ("dualpipe-v", 32, 2, 70), ("dualpipe-v", 16, 2, 36)]


@pytest.mark.parametrize("name,pp,v,m", DEEP_TRACE_SHAPES)
def test_receive_trace_of_deep_pipelines_is_the_plain_lockstep(name, pp, v, m):
    """The same comparison on the deep shapes the Megatron 1T rows lower (pp 16 to 64, up to 8
    chunks, dualpipe-v's overlapped pairs), every rank's lives and gaps."""
    expected = _reference_receive_trace(name, pp, v, m)
    assert expected is not None
    assert schedules._receive_trace.__wrapped__(name, pp, v, m) == expected


@pytest.mark.parametrize("name", ["interleaved-1f1b", "interleaved-zb", "zbv", "dualpipe-v"])
def test_receive_trace_is_the_plain_lockstep(name):
    """`_receive_trace` (per-stage lookups, a stride bound instead of the largest micro-batch
    index, empty turns passed without the checks) against the plain lockstep it replaces, on
    every rank's lives and gaps, refused layouts (None) included, up to deep pipelines."""
    checked = refused = 0
    for pp in (2, 3, 4, 5, 8, 16):
        for v in ((2,) if name in ("zbv", "dualpipe-v") else (2, 3, 4)):
            for m in (1, 2, 3, 4, 5, 7, 8, 12, 16, 24, 32, 64):
                expected = _reference_receive_trace(name, pp, v, m)
                assert schedules._receive_trace.__wrapped__(name, pp, v, m) == expected, (pp, v, m)
                checked += 1
                refused += expected is None
    assert checked and refused < checked


def _reference_rank_loads(shape, tp, ep, pp, v, schedule, split, runtime, recompute, recompute_layers):
    """`timing.rank_loads` as it was before its recomputation-free part was shared between the
    modes (`timing._rank_frames`): every rank's chunks walked for each mode."""
    from parc import timing
    from parc.memory.parameters import chunks_of, layer_params, padded_vocab

    chunks = chunks_of(shape.layers, pp, v, schedule, split, shape.tied)
    owner = {ch.index: ch.rank for ch in chunks}
    table = padded_vocab(shape.vocab, tp, runtime) * shape.hidden // tp
    per_layer = {moe: layer_params(shape, tp, ep, moe) for moe in ((False, True) if shape.moe else (False,))}
    loads = []
    for rank in range(pp):
        mine = [ch for ch in chunks if ch.rank == rank]
        kinds, dense, other, expert, root, blocks_dense, blocks_expert = {}, 0, 0, 0, 0, [], []
        for chunk in mine:
            for key, count in timing._chunk_kinds(shape, chunk.first_layer, chunk.layers, recompute,
                                                  recompute_layers):
                if count:
                    kinds[key] = kinds.get(key, 0) + count
            head = shape.norm_params + (table if not shape.tied or chunk.tied_copy else 0)
            other += (table + shape.position_params if chunk.embedding else 0) + (head if chunk.output else 0)
            root += (table + shape.position_params if chunk.embedding else 0) + (head if chunk.output else 0)
            dense_runs, expert_runs = timing._chunk_blocks(shape, chunk, per_layer, table,
                                                            timing.experts_folded(runtime, tp, ep))
            blocks_dense.append(dense_runs)
            blocks_expert.append(expert_runs)
        for (moe, _), count in kinds.items():
            dense, other, expert = (dense + count * per_layer[moe].linear, other + count * per_layer[moe].other,
                                    expert + count * per_layer[moe].expert)
        loads.append(timing.Load(
            pieces=tuple((moe, mode, count) for (moe, mode), count in sorted(kinds.items()) if count),
            embedding=any(ch.embedding for ch in mine), output=any(ch.output for ch in mine), chunks=len(mine),
            sends_f=sum(1 for ch in mine if owner.get(ch.index + 1, rank) != rank),
            sends_b=sum(1 for ch in mine if owner.get(ch.index - 1, rank) != rank),
            params_dense=dense + other, params_expert=expert, blocks_dense=tuple(blocks_dense),
            blocks_expert=tuple(blocks_expert), params_root=root, params_other=other,
            roots=sum(1 for ch in mine if ch.embedding or ch.output) if pp > 1 else 1))
    return tuple(loads)


def random_pipeline(rng: random.Random, layers: int) -> tuple[str, int, int] | None:
    """A random (schedule, pp, virtual stages) of the chunked schedules, or None when `layers`
    cannot fill its chunks (the caller draws again)."""
    schedule = rng.choice(["1f1b", "interleaved-1f1b", "interleaved-zb", "zbv", "dualpipe-v"])
    pp = rng.choice([1, 2, 3, 4, 8])
    v = 2 if schedule in ("zbv", "dualpipe-v") else (1 if schedule == "1f1b" else rng.choice([1, 2, 3]))
    return None if layers < pp * v else (schedule, pp, v)


def random_split(rng: random.Random, layers: int, chunks: int) -> tuple[int, ...] | None:
    """A written split of `layers` over `chunks` chunks three times in ten (at random cuts), else
    None (the schedule's own even chunking)."""
    if chunks > 1 and rng.random() < 0.3:
        cuts = sorted(rng.sample(range(1, layers), chunks - 1))
        return tuple(b - a for a, b in zip([0, *cuts], [*cuts, layers], strict=True))
    return None


@pytest.mark.parametrize("path", ["specs/deepseek-v3-like.par", "specs/llama3-70b-search.par",
                                  "specs/mixtral-8x7b-5d.par", "specs/gpt3-175b.par"])
def test_rank_loads_sharing_their_chunk_walk_are_the_plain_ones(path):
    """`timing.rank_loads` keeps what the recomputation does not change per chunking
    (`_rank_frames`) and derives each mode's layer kinds from it: over random chunkings, modes
    and vocabulary splits, every rank's `Load` equals the plain walk's."""
    from parc import timing
    from parc.memory.inputs import shape_of
    from parc.pipeline import compile_path

    shape = shape_of(compile_path(path, checks=False).plan)
    rng = random.Random(path)
    checked = 0
    for _ in range(60):
        drawn = random_pipeline(rng, shape.layers)
        if drawn is None:
            continue
        schedule, pp, v = drawn
        tp, ep = rng.choice([1, 2, 8]), rng.choice([1, 2, 8]) if shape.moe else 1
        recompute, layers = rng.choice([("none", None), ("selective", None), ("full", None), ("full", 1)])
        args = (shape, tp, ep, pp, v, schedule, None, "torch", recompute, layers)
        chunking = timing.Chunking(tp, ep, pp, v, schedule, None, "torch")
        assert timing.rank_loads(shape, chunking, recompute, layers) == _reference_rank_loads(*args), args
        checked += 1
    assert checked


def test_pieces_shared_between_ep_degrees_are_each_degrees_own():
    """`Engine._pieces` keeps a dense layer's, the embedding's and the output layer's pieces
    without ep (the time model reads ep in MoE layers only): visited in a random order (so most
    come from the shared entry), each equals the pieces computed afresh for that ep alone."""
    from parc.search import engine as search_engine

    engine = _engine("tests/golden/search/specs/moe-fold.par")
    rng = random.Random(7)
    keys = [(tp, sp, cp, micro, ep) for tp in (1, 2, 4) for sp in (False, True) for cp in (1, 2)
            for micro in (1, 2) for ep in (1, 2, 4, 8)]
    rng.shuffle(keys)
    shared = {key: engine._pieces(*key) for key in keys}
    checked = 0
    for key in keys[:24]:
        search_engine.clear_caches()
        fresh = _engine("tests/golden/search/specs/moe-fold.par")._pieces(*key)
        assert shared[key] == fresh, key
        assert any(isinstance(name, tuple) and name[0] for name in fresh)  # MoE layers there
        checked += 1
    assert checked


def _reference_walk_states(schedule, pp, v, m, rank):
    """`schedules.walk_states` as it was before it kept one flat list of counts and collected a
    state only before an action that does not add to it: a (held, pending, unsharded) tuple
    after every action, the one before each non-growing action kept."""
    held, pending, unsharded = [0] * v, [0] * v, [0] * v
    seen, previous = set(), None
    for kind, chunk in schedules.actions(schedule, pp, v, m, rank):
        if kind == schedules.F:
            grows = unsharded[chunk] == 0
            held[chunk] += 1
            unsharded[chunk] = 0
        elif kind == schedules.B:
            grows = False
            held[chunk] -= 1
            unsharded[chunk] = 1
        elif kind == schedules.I:
            grows = True
            pending[chunk] += 1
            unsharded[chunk] = 1
        else:
            grows = False
            held[chunk] -= 1
            pending[chunk] -= 1
        if previous is not None and not grows:
            seen.add(previous)
        previous = (tuple(held), tuple(pending), tuple(unsharded))
    if previous is not None:
        seen.add(previous)
    # undominated, by plain comparison of every count
    states = sorted(seen)
    return tuple(s for s in states if not any(
        o != s and all(a >= b for a, b in zip(o[0] + o[1] + o[2], s[0] + s[1] + s[2], strict=True))
        for o in states))


@pytest.mark.parametrize("name", ["gpipe", "1f1b", "interleaved-1f1b", "interleaved-zb", "zbv", "dualpipe-v"])
def test_walked_states_are_the_undominated_states_of_the_plain_walk(name):
    """`walk_states` (one flat list of counts; packed-integer dominance) against a plain walk
    and a plain dominance filter, over depths, chunks, micro-batch counts and ranks."""
    checked = 0
    for pp in (1, 2, 3, 4, 6):
        for v in ((2,) if name in ("zbv", "dualpipe-v") else (1,) if name in ("gpipe", "1f1b") else (1, 2, 3, 4)):
            for m in (1, 2, 3, 4, 6, 8, 12):
                for rank in range(pp):
                    try:
                        expected = _reference_walk_states(name, pp, v, m, rank)
                    except (ValueError, IndexError, KeyError):
                        continue
                    assert schedules.walk_states(name, pp, v, m, rank) == expected, (pp, v, m, rank)
                    checked += 1
    assert checked


# ---------------------------------------------------------------------------------------------
# The bound is a bound: over random groups of spaces the shipped specs open, never above the
# step of any candidate it stands for (every rank order class, every sharding)

EVERY_HOLE = """order ?
train {{ seq {seq}, global-batch {batch}, micro-batch ?, recompute ? }}
tp {{ sequence-parallel ? }}
pp {{ schedule ?, virtual-stages ? }}
dp {{ sharding ? }}
"""

BOUND_SPACES = {
    # ep folded over dp x cp with tp: the expert set's reduction group is expert_tp in torch's
    # runtime (a bound on the expert group without tp exceeded the step and lost a winner)
    "mixtral-ep-over-dp-cp": "job b\ntp ? x cp ? x pp ? x dp ? on nodes(8 gpus, nvlink)\nep ? over dp x cp\n"
                             "model mixtral-8x7b\nhardware { gpu h100-sxm, nodes 128 }\n"
                             + EVERY_HOLE.format(seq=32768, batch=512),
    # dense, deep pipelines, cp across nodes (tp fills the node): the sends and cp's exchange
    "gpt3-175b": "job b\ntp ? x cp ? x pp ? x dp ? x ep ? on nodes(8 gpus, nvlink)\nmodel gpt3-175b\n"
                 "hardware { gpu a100-80gb, nodes 128 }\n" + EVERY_HOLE.format(seq=2048, batch=1536),
    # ep over dp only, fine-grained experts, a dense first layers' split
    "deepseek-v3-like": "job b\ntp ? x cp ? x pp ? x dp ? on nodes(8 gpus, nvlink)\nep ? over dp\n"
                        "model deepseek-v3-like\nhardware { gpu h800, nodes 64 }\n"
                        + EVERY_HOLE.format(seq=4096, batch=1024),
    # cp's all-to-all flavour: split over NVLink and the network it can beat a group inside
    "llama3-70b-cp-all-to-all": "job b\ntp ? x cp ? x pp ? x dp ? on nodes(8 gpus, nvlink)\nmodel llama3-70b\n"
                                "hardware { gpu h100-sxm, nodes 64 }\ncp { flavour all-to-all }\n"
                                + EVERY_HOLE.format(seq=32768, batch=256),
    # in-network reduction: NVLS and SHARP make some all-reduces cheaper than any ring's bytes
    "llama3-8b-nvls-sharp": "job b\ntp ? x cp ? x pp ? x dp ? on nodes(8 gpus, nvlink)\nmodel llama3-8b\n"
                            "hardware { gpu h100-sxm, nodes 16, network 8 x 100 Gb/s, nvls on, sharp on }\n"
                            + EVERY_HOLE.format(seq=4096, batch=256),
    # NVFP4 under Megatron-LM: the FP4 peak, 4-bit operands and their casts, NVFP4 weights gathered
    "llama3-70b-nvfp4-megatron": "job b\ntp ? x cp ? x dp ? x pp ? on nodes(4 gpus, nvl72)\nmodel llama3-70b\n"
                                 "hardware { gpu gb200-nvl72, nodes 16 }\ntarget megatron\n"
                                 + EVERY_HOLE.format(seq=8192, batch=256).replace("recompute ? }", "recompute ?, precision nvfp4 }"),
}

FLOOR_SPACES = sorted(name for name, text in BOUND_SPACES.items() if "\ntarget " not in text)
"""The spaces of parc's runtime. The search's memory floors (the layers', family, held and quick
floors: `Engine._layers_floor_applies`, `_family_out_of_memory`, `_quick_floor`, `_states_floor`)
count its transient buffers: under another target they are zero and the scan consults none of
them (it takes each candidate's peak), so the floors' tests run over these spaces only."""


def _groups_of(text: str):
    """The engine of a space and every group its enumeration yields (no scan)."""
    from parc.pipeline import compile_text
    from parc.search import engine as search_engine
    from parc.search.space import build_space
    from parc.targets import memory_runtime, software_of

    compilation = compile_text(text, path="bound.par")
    assert compilation.plan is not None, compilation.diagnostics
    engine = search_engine.Engine(build_space(compilation), keep=14, software=software_of(compilation.plan),
                                  runtime=memory_runtime(compilation.plan.target))
    groups: list = []

    def collect(found):
        groups.extend(found)
        return search_engine.Outcome(found=[], stats=engine.stats, smallest_peak=None, usable_bytes=0)

    engine._scan = collect
    engine.run()
    return engine, groups


@pytest.mark.parametrize("name", sorted(BOUND_SPACES))
def test_every_bound_is_at_most_the_step_of_every_candidate_it_stands_for(name):
    """Random groups (the pipelined ones over-sampled: the sends, the bubble and cp's exchange
    live there): `quick_bound` and `pipes_bound` <= `bound` <= each sharding's tightened bound
    (`_tail`) <= each order class's own bound (`_class_bound`) <= the time model's step of that
    sharding under that order. A bound above a step would let
    the scan drop a better layout."""
    from parc import timing

    engine, groups = _groups_of(BOUND_SPACES[name])
    rng = random.Random(name)
    deep = [g for g in groups if g[0].degrees.get("pp", 1) > 1]
    sample = rng.sample(deep, min(len(deep), 60)) + rng.sample(groups, min(len(groups), 20))
    checked = 0
    for group in sample:
        item = group[0]
        coarse = engine.bound(*group)
        assert engine.quick_bound(*group) <= coarse * (1 + 1e-12), group
        if engine.pipe_sets:
            assert engine.pipes_bound(*group) <= coarse * (1 + 1e-12), group
        _, core, times, shardings, knobs = engine._parts(group)
        for (_, shard), ks in zip(shardings, knobs, strict=True):
            tail = engine._tail(item, ks, core, times)
            assert coarse <= tail * (1 + 1e-12), (group, shard)
            for order, geo, _ in engine._classes(item, shard):
                step = timing.step_time(engine.shape, ks, engine.hw, geo, engine.constants, engine.software).step
                own = engine._class_bound(group, geo, ks, times)
                assert tail <= own * (1 + 1e-12), (group, shard, order)
                assert own <= step * (1 + 1e-12), (name, item.degrees, item.ep, group[1:], ks.sharding, shard, order,
                                                    tail, step)
                checked += 1
    assert checked > 100


def test_the_bubble_terms_are_the_stage_bubble_before_its_clip():
    """`timing.bubble_terms` against `timing.stage_bubble` itself on random F, B, W (some where
    the zero-bubble figures go negative): max(0, cf f + cb b + cw w) is the stage bubble."""
    from parc import timing

    rng = random.Random(7)
    checked = 0
    for pipeline in ("gpipe", "1f1b", "interleaved-1f1b", "interleaved-zb", "zbv", "dualpipe-v"):
        cf, cb, cw = timing.bubble_terms(pipeline)
        for _ in range(200):
            f, b, w = rng.uniform(0, 2), rng.uniform(0, 2), rng.uniform(0, 2)
            assert timing.stage_bubble(pipeline, f, b, w) == pytest.approx(max(0.0, cf * f + cb * b + cw * w),
                                                                           rel=1e-12, abs=1e-15), (pipeline, f, b, w)
            checked += 1
    assert checked == 1200


@pytest.mark.parametrize("name", sorted(set(BOUND_SPACES) - {"deepseek-v3-like"}))  # 61 layers: pp 1 only
def test_a_member_bound_lies_between_its_sets_bound_and_its_own_quick_bound(name):
    """A pipeline of an expanded set enters the scan at `member_bound` (MEMBER) and goes back in
    at `quick_bound` when it comes out: the scan hands out the same groups in the same order only
    if `member_bound` <= `quick_bound` (float for float, no slack) on every group; and it must not
    be below the set's own bound. Checked on every pipelined group of the space (up to 4,000 of
    them, sampled), against `quick_bound`'s own rank-by-rank sums and bubble; the bubble floor must
    also be positive on many of them, or the bound would be the set's and save nothing."""
    engine, groups = _groups_of(BOUND_SPACES[name])
    assert engine.pipe_sets
    deep = [g for g in groups if g[0].degrees.get("pp", 1) > 1]
    assert deep
    rng = random.Random(name)
    sample = rng.sample(deep, min(len(deep), 4000))
    tighter = 0
    for group in sample:
        member, quick, pipes = engine.member_bound(*group), engine.quick_bound(*group), engine.pipes_bound(*group)
        assert pipes <= member <= quick, (group[1:], pipes, member, quick)
        tighter += member > pipes
    assert tighter > len(sample) // 4, (tighter, len(sample))


@pytest.mark.parametrize("name", sorted(BOUND_SPACES))
def test_the_least_send_and_the_cp_ep_placements_are_those_of_the_orders_geometries(name):
    """`Engine._pp_send` (the least pipeline send over the orders, from the pp stride alone) and
    `Engine._placements` (the distinct (cp, ep) groups) against every order's own
    `timing.geometry`, as `step_time` places the groups."""
    from parc import timing

    engine, groups = _groups_of(BOUND_SPACES[name])
    checked = 0
    seen = set()
    for item, _, _, micro, _, _, _ in groups:
        if (item.index, micro) in seen:
            continue
        seen.add((item.index, micro))
        d = item.degrees
        tp, pp, cp = d.get("tp", 1), d.get("pp", 1), d.get("cp", 1)
        geos = [timing.geometry(tuple((a, d[a]) for a in order), tuple(sorted(engine.space.ep_fold, key=order.index)),
                                item.ep, 0, engine.hw.level) for order in item.orders]
        assert geos
        boundary = timing.ACT * (engine.seq * micro / cp) * engine.shape.hidden / tp
        sends = [timing.link(g.pp, engine.hw, engine.constants).send(boundary) if pp > 1 else 0.0 for g in geos]
        assert engine._pp_send(item, tp, pp, cp, micro) == min(sends)
        assert set(engine._placements(item)) == {(g.cp, g.ep) for g in geos}
        checked += 1
    assert checked


@pytest.mark.parametrize("path", ["specs/deepseek-v3-like.par", "tests/golden/search/specs/moe-fold.par"])
def test_computation_pieces_shared_between_ep_degrees_are_each_degrees_own(path):
    """`Engine._compute_pieces` keeps the embedding's, the output layer's and a dense layer's
    computation without ep (computed once for every ep), the MoE layer's per ep: visited in a
    random order, each equals the pieces computed afresh for that ep alone, and the MoE layer's
    really differs between some ep degrees (the sharing is not hiding a constant)."""
    from parc.search import engine as search_engine

    engine = _engine(path)
    kinds = {moe for moe, _ in engine._layer_counts}
    assert kinds == ({False, True} if "deepseek" in path else {True})  # dense layers first in DeepSeek-V3
    rng = random.Random(11)
    keys = [(tp, sp, cp, micro, ep) for tp in (1, 2, 4) for sp in (False, True) for cp in (1, 2)
            for micro in (1, 2) for ep in (1, 2, 4, 8)]
    rng.shuffle(keys)
    shared = {key: engine._compute_pieces(*key) for key in keys}
    checked = 0
    for key in keys[:24]:
        search_engine.clear_caches()
        fresh = _engine(path)._compute_pieces(*key)
        assert shared[key] == fresh, key
        checked += 1
    assert checked
    moe_by_ep = {ep: shared[(2, True, 1, 1, ep)][(True, "none")] for ep in (1, 2, 4, 8)}
    assert len(set(moe_by_ep.values())) > 1


def test_lazy_hashes_and_fast_replace_are_the_plain_ones():
    """`timing.Work` hashes its fields when first hashed (`frozen.lazy_hash`), not when built, and
    `timing.slowed` copies it with `frozen.replaced`: over random works, the hash is that of the
    tuple of its fields (what `hash_once` stored at build time before), equal works hash alike,
    and `replaced` builds the same object as `dataclasses.replace`."""
    import dataclasses

    from parc import timing
    from parc.frozen import replaced

    rng = random.Random(3)
    names = [f.name for f in dataclasses.fields(timing.Work) if f.name != "_hash"]
    checked = 0
    for _ in range(200):
        values = dict(gemm=rng.random(), attention_f=rng.random(), memory_b=rng.random() * 1e-3,
                      tp_all_reduce=(rng.randrange(3), rng.randrange(3)), cp_flavour=rng.choice(["ring", "a2a"]),
                      ep_bytes=rng.choice([0.0, rng.random() * 1e9]), moe=rng.random() < 0.5,
                      launches_f=rng.randrange(40))
        work, twin = timing.Work(**values), timing.Work(**values)
        assert hash(work) == hash(tuple(getattr(work, name) for name in names))
        assert hash(work) == hash(twin) and work == twin
        changes = dict(gemm=rng.random(), memory_f=rng.random(), moe_again=rng.random())
        assert replaced(work, **changes) == dataclasses.replace(work, **changes)
        assert hash(replaced(work, **changes)) == hash(dataclasses.replace(work, **changes))
        checked += 1
    assert checked
    with pytest.raises(TypeError):  # an unknown field is refused as `dataclasses.replace` refuses it
        replaced(timing.Work(), no_such_field=1.0)


@pytest.mark.parametrize("name", FLOOR_SPACES)
def test_the_pipelines_floor_is_at_most_the_family_floor_of_every_pipeline(name):
    """`Engine._pipelines_floor` rejects a group of any (schedule, virtual stages) before its
    family's floor is computed: over random groups of four spaces (dense, MoE with ep over dp x
    cp, deepseek's dense first layers), it must be at most `_family_floor` of every valid
    pipeline of the group's degrees, sequence parallelism and recomputation, whose least is
    compared to the memory model's plain sums (each rank's first-backward floor plus its least
    states, from `rank_params`) too: the family floor is kept per pipeline class
    (`Engine._pipeline_class`: equal chunks and backward release), so this also proves that key
    holds all the floor reads of the pipeline (and classes of several pipelines occur)."""
    from parc.memory.model import first_backward_floors, rank_params, rank_signatures

    engine, groups = _groups_of(BOUND_SPACES[name])
    rng = random.Random(name)
    deep = [g for g in groups if g[0].degrees.get("pp", 1) > 1]
    sample = rng.sample(deep, min(len(deep), 40)) + rng.sample(groups, min(len(groups), 20))
    checked = sharp = shared = 0
    for item, _, _, micro, m, sp, recompute in sample:
        floor = engine._pipelines_floor((item, None, None, micro, m, sp, recompute))
        pp = item.degrees.get("pp", 1)
        assert (floor > 0) == (pp > 1)  # without pipelining, the family floor alone
        pipes = engine._pipelines(pp)[0]
        assert pipes
        families = []
        for pipe, v in pipes:
            family = engine._family_floor((item, pipe, v, micro, m, sp, recompute))
            k = engine._knobs(item, pipe, v, engine.space.micro[0], m, sp, recompute)
            held = first_backward_floors(engine.shape, k)
            params = rank_params(engine.shape, k.tp, k.ep, k.pp, k.virtual_stages, k.schedule, k.split, k.runtime)
            plain = max(held[mine] + engine._least_states(item, k, rp.params)
                        for mine, rp in zip(rank_signatures(engine.shape, k.pp, v, pipe, k.split), params,
                                            strict=True))
            assert family == plain, (item.degrees, pipe, v)
            families.append(family)
            checked += 1
        assert floor <= min(families), (name, item.degrees, item.ep, sp, recompute, floor, min(families))
        shared += len(pipes) - len({engine._pipeline_class(pp, schedule, v) for schedule, v in pipes})
        sharp += floor >= 0.5 * min(families)
    pipelined = sum(1 for g in sample if g[0].degrees.get("pp", 1) > 1)
    assert checked > 40 and sharp >= pipelined // 2, (checked, sharp, pipelined)
    assert shared > 0 or not pipelined


@pytest.mark.parametrize("name", FLOOR_SPACES)
def test_the_family_ceiling_is_at_least_every_ranks_first_floor(name):
    """`Engine._family_fits` lets a family through without its floor when a ceiling on it fits:
    over random groups of four spaces (dense, MoE with ep over dp x cp, deepseek's dense first
    layers, cp's all-to-all; every schedule, the V ones' first rank holding the embedding and
    the output layer), each part of the ceiling must be at least its part of every rank's plain
    sums (the rank's layers from `rank_params`, its first-backward floor from
    `first_backward_floors`, its least states over its own parameters), and a family the ceiling
    lets through must fit by its floor (`_family_floor`). The ceiling must also be useful: it
    lets most fitting families through."""
    from parc.memory.model import (
        first_backward_ceiling,
        first_backward_floors,
        most_rank_layers,
        rank_params,
        rank_signatures,
    )

    engine, groups = _groups_of(BOUND_SPACES[name])
    rng = random.Random(name + "ceiling")
    deep = [g for g in groups if g[0].degrees.get("pp", 1) > 1]
    sample = rng.sample(deep, min(len(deep), 40)) + rng.sample(groups, min(len(groups), 20))
    checked = fitting = through = 0
    for item, _, _, micro, m, sp, recompute in sample:
        pp = item.degrees.get("pp", 1)
        pipes = engine._pipelines(pp)[0]
        assert pipes
        for pipe, v in pipes:
            k = engine._knobs(item, pipe, v, engine.space.micro[0], m, sp, recompute)
            params = rank_params(engine.shape, k.tp, k.ep, k.pp, k.virtual_stages, k.schedule, k.split, k.runtime)
            layers = most_rank_layers(engine.shape, pp, v, pipe, k.split)
            assert layers == max(rp.layers for rp in params)
            held = first_backward_floors(engine.shape, k)
            ceiling = first_backward_ceiling(engine.shape, k, layers)
            states = engine._states_ceiling(item, k, layers)
            for mine, rp in zip(rank_signatures(engine.shape, pp, v, pipe, k.split), params, strict=True):
                assert held[mine] <= ceiling, (item.degrees, pipe, v, mine)
                assert engine._least_states(item, k, rp.params) <= states, (item.degrees, pipe, v)
            group = (item, pipe, v, micro, m, sp, recompute)
            family = engine._family_floor(group)
            fits = engine._family_fits(group)
            assert family <= ceiling + states
            assert not fits or family <= engine.usable
            fitting += family <= engine.usable
            through += fits
            checked += 1
    assert checked > 40 and through >= fitting // 2, (checked, fitting, through)


@pytest.mark.parametrize("name", FLOOR_SPACES)
def test_the_scans_quick_floor_decides_as_the_exact_one(name):
    """The scan asks `_quick_floor` with `exact` False: the first step is skipped where its
    ceiling fits (`_first_fits`). Over random groups of four spaces (each asked of a fresh
    engine's kept values, in a shuffled order), a group the ceiling lets through must fit by its
    first floor, and the scan's value must fit exactly where the exact one does, and equal it
    where it does not (the value noted as the smallest peak). Both kinds must occur."""
    engine, groups = _groups_of(BOUND_SPACES[name])
    rng = random.Random(name + "quick")
    deep = [g for g in groups if g[0].degrees.get("pp", 1) > 1]
    sample = rng.sample(deep, min(len(deep), 60)) + rng.sample(groups, min(len(groups), 30))
    rng.shuffle(sample)
    fresh, fresh_groups = _groups_of(BOUND_SPACES[name])
    twins = {(g[0].index,) + g[1:]: g for g in fresh_groups}
    through = out = 0
    for group in sample:
        k = engine._knobs(*group)
        exact = engine._quick_floor(k, group[0])
        twin = twins[(group[0].index,) + group[1:]]
        kt = fresh._knobs(*twin)
        fits = fresh._first_fits(kt, twin[0])
        scan = fresh._quick_floor(kt, twin[0], exact=False)
        assert not fits or engine._first_floor(k, group[0]) <= engine.usable
        assert (scan > fresh.usable) == (exact > engine.usable), group[1:]
        if exact > engine.usable:
            assert scan == exact, group[1:]
            out += 1
        through += fits
    assert through and out, (through, out)


@pytest.mark.parametrize("path", ["specs/deepseek-v3-like.par", "specs/llama3-70b-search.par",
                                  "specs/mixtral-8x7b-5d.par", "specs/gpt3-175b.par"])
def test_rank_params_counted_by_layer_kind_are_the_per_layer_sums(path):
    """`memory.model.rank_params` counts each rank's layers by kind (dense, MoE) and multiplies
    one layer's parameters; over random chunkings (a written split too), every rank's layers'
    parameters and its root (what is not a layer's) equal the per-layer sums, and the largest
    layer is the one the rank's layers give."""
    from parc.memory.inputs import shape_of
    from parc.memory.model import rank_params
    from parc.memory.parameters import Params, layer_params
    from parc.pipeline import compile_path

    shape = shape_of(compile_path(path, checks=False).plan)
    rng = random.Random(path)
    checked = 0
    for _ in range(60):
        drawn = random_pipeline(rng, shape.layers)
        if drawn is None:
            continue
        schedule, pp, v = drawn
        split = random_split(rng, shape.layers, pp * v)
        tp, ep = rng.choice([1, 2, 8]), rng.choice([1, 2, 8]) if shape.moe else 1
        for rp in rank_params(shape, tp, ep, pp, v, schedule, split, "torch"):
            layered = Params()
            for c in rp.chunks:
                for layer in c.layer_range:
                    layered += layer_params(shape, tp, ep, shape.is_moe(layer))
            total = Params()
            for p in rp.per_chunk:
                total += p
            assert rp.params == total
            assert rp.root == Params(total.linear - layered.linear, total.other - layered.other,
                                     total.expert - layered.expert), (schedule, pp, v, split, tp, ep)
            checked += 1
    assert checked > 100


@pytest.mark.parametrize("path", ["specs/deepseek-v3-like.par", "specs/llama3-70b-search.par",
                                  "specs/mixtral-8x7b-5d.par", "specs/gpt3-175b.par"])
def test_rank_params_shared_between_alike_ranks_are_each_ranks_own(path):
    """`memory.model.rank_params` computes one rank's figures per kind of rank (its chunks' layer
    counts, flags and MoE pattern) and gives the other ranks of that kind a copy holding their
    own chunks: over random chunkings (a written split too; deep ones, where most ranks are
    alike), every rank equals, field by field, the figures computed from its own chunks alone,
    and it holds exactly its chunks (`by_rank`)."""
    from parc.memory.inputs import shape_of
    from parc.memory.model import _rank_figures, rank_params
    from parc.memory.parameters import by_rank, chunks_of
    from parc.pipeline import compile_path

    shape = shape_of(compile_path(path, checks=False).plan)
    rng = random.Random(f"alike {path}")
    # one layer per chunk but the last: ranks alike in counts and flags, apart in their layers'
    # kinds where the model mixes dense and MoE layers (DeepSeek's first dense layers)
    single = [("1f1b", 8, 1, (1,) * 7 + (shape.layers - 7,)),
              ("interleaved-1f1b", 4, 2, (1,) * 7 + (shape.layers - 7,))]
    drawn_pipes = [random_pipeline(rng, shape.layers) for _ in range(60)]
    checked = shared = 0
    for case in single + drawn_pipes:
        if case is None:
            continue
        if len(case) == 4:
            schedule, pp, v, split = case
        else:
            schedule, pp, v = case
            split = random_split(rng, shape.layers, pp * v)
        tp, ep = rng.choice([1, 2, 8]), rng.choice([1, 2, 8]) if shape.moe else 1
        ranks = by_rank(chunks_of(shape.layers, pp, v, schedule, split, shape.tied), pp)
        got = rank_params(shape, tp, ep, pp, v, schedule, split, "torch")
        assert len(got) == len(ranks) == pp
        for rp, mine in zip(got, ranks, strict=True):
            assert rp.chunks == mine
            assert rp == _rank_figures(shape, tp, ep, "torch", mine), (schedule, pp, v, split, tp, ep)
            checked += 1
        shared += pp - len({id(rp.per_chunk) for rp in got})
    assert checked > 100 and shared > 0, (checked, shared)


def _plain_fsdp_padding(shape, chunks, tp, ep, dense_group, expert_group, runtime="torch"):
    """`memory.parameters.fsdp_padding` layer by layer, tensor by tensor (the loop it replaced)."""
    from parc.memory.parameters import Params, expert_shard_dim, layer_rows, padded_vocab

    def pad(rows, group):
        return -(-rows // group) * group - rows

    linear = other = expert = 0
    for chunk in chunks:
        for layer in chunk.layer_range:
            for rows, per_row, kind in layer_rows(shape, tp, ep, shape.is_moe(layer)):
                if kind == "expert":
                    extra = 0 if expert_shard_dim((rows, shape.hidden, shape.expert_ffn), expert_group) \
                        else pad(rows, expert_group) * per_row
                else:
                    extra = pad(rows, dense_group) * per_row
                linear += extra if kind == "linear" else 0
                other += extra if kind == "other" else 0
                expert += extra if kind == "expert" else 0
        rows = padded_vocab(shape.vocab, tp, runtime) // tp
        if chunk.embedding:
            other += pad(rows, dense_group) * shape.hidden
            if shape.position_params:
                other += pad(shape.position_params // shape.hidden, dense_group) * shape.hidden
        if chunk.output:
            other += pad(shape.hidden, dense_group) * (2 if shape.layernorm else 1)
            if not shape.tied or chunk.tied_copy:
                other += pad(rows, dense_group) * shape.hidden
    return Params(linear, other, expert)


@pytest.mark.parametrize("path", ["specs/deepseek-v3-like.par", "specs/llama3-70b-search.par",
                                  "specs/mixtral-8x7b-5d.par", "specs/gpt3-175b.par"])
def test_fsdp_padding_counted_per_layer_kind_is_the_per_layer_sum(path):
    """`memory.parameters.fsdp_padding` pads one layer of each kind and multiplies by the rank's
    layers of that kind: over random chunkings (one-layer chunks that set DeepSeek's dense layers
    apart too), tp, ep and shard groups that do and do not divide the rows, every rank's padding
    equals the tensor-by-tensor sum written out here, and some of them are not zero."""
    from parc.memory.inputs import shape_of
    from parc.memory.parameters import by_rank, chunks_of, fsdp_padding
    from parc.pipeline import compile_path

    shape = shape_of(compile_path(path, checks=False).plan)
    rng = random.Random(f"padding {path}")
    cases = [("1f1b", 8, 1, (1,) * 7 + (shape.layers - 7,))] + [
        (*drawn, None) for drawn in (random_pipeline(rng, shape.layers) for _ in range(40)) if drawn is not None]
    checked = padded = 0
    for pipeline, pp, v, split in cases:
        tp, ep = rng.choice([1, 2, 8]), rng.choice([1, 2, 8, 16]) if shape.moe else 1
        dense, experts = rng.choice([1, 3, 7, 64, 96]), rng.choice([1, 3, 5, 32])
        for mine in by_rank(chunks_of(shape.layers, pp, v, pipeline, split, shape.tied), pp):
            got = fsdp_padding(shape, mine, tp, ep, dense, experts)
            assert got == _plain_fsdp_padding(shape, mine, tp, ep, dense, experts), (pipeline, pp, v, split, tp, ep)
            checked += 1
            padded += got.linear + got.expert > 0
    assert checked > 100 and padded > 0, (checked, padded)


def _reference_factorisations(space, allowed: dict | None):
    """Every ordered factorisation of what the fixed degrees leave over the open axes, each
    axis's divisors ascending, depth first (the recursive walk the engine's stack replaces)."""
    rest = space.world
    for d in space.fixed.values():
        assert rest % d == 0
        rest //= d
    opened = space.open_axes

    def walk(i, remaining, chosen):
        ok = allowed.get(opened[i]) if allowed else None
        if i == len(opened) - 1:
            if ok is None or remaining in ok:
                yield {**chosen, opened[i]: remaining}
            return
        for d in range(1, remaining + 1):
            if remaining % d == 0 and (ok is None or d in ok):
                yield from walk(i + 1, remaining // d, {**chosen, opened[i]: d})

    for c in walk(0, rest, {}):
        layout = {**space.fixed, **c}
        yield tuple((a, layout[a]) for a in space.axes)


@pytest.mark.parametrize("name", sorted(BOUND_SPACES))
def test_the_degree_walk_is_every_ordered_factorisation(name):
    """`Engine._factorisations` walks the degree assignments with one stack of divisor iterators:
    the same assignments in the same order (the groups' indices break ties) as the plain
    recursive walk, with and without per-axis degree sets (the outer cluster search's)."""
    from parc.search import engine as search_engine

    engine, _ = _groups_of(BOUND_SPACES[name])
    space = engine.space
    ours = [(tuple(d.items()), ep) for d, ep in engine._factorisations()]
    assert ours and len(set(ours)) == len(ours)
    assert list(dict.fromkeys(d for d, _ in ours)) == list(_reference_factorisations(space, None))
    rng = random.Random(name)
    allowed = {a: frozenset(rng.sample(range(1, 65), 24)) for a in space.open_axes}
    limited = search_engine.Engine(space, keep=1, degree_values=allowed)
    assert list(dict.fromkeys(tuple(d.items()) for d, _ in limited._factorisations())) == \
        list(_reference_factorisations(space, allowed))


def test_walked_peak_is_the_weighted_walks_largest_sum():
    """`schedules.walked_peak` keeps each walk's undominated moments per class of alike chunks and
    weighs them per layout: over random schedules, pipelines, micro-batch counts, ranks and
    chunk weights (few distinct values, so chunks share classes; zeros too), each walk asked
    for four times at other weights of the same classes (the kept moments answer from the
    third), its value is `schedules.weighted_peak`'s, which walks every action."""
    from parc.memory.schedules import walked_peak, weighted_peak

    rng = random.Random(18)
    checked = 0
    for _ in range(400):
        schedule = rng.choice(["gpipe", "1f1b", "interleaved-1f1b", "interleaved-zb", "zbv", "dualpipe-v"])
        pp = rng.choice([1, 2, 3, 4, 6, 8])
        if schedule in ("zbv", "dualpipe-v"):
            v = 2
        elif schedule in ("interleaved-1f1b", "interleaved-zb"):
            v = rng.choice([1, 2, 3, 4])
        else:
            v = 1
        m = rng.choice([pp, pp + 1, 2 * pp, 3 * pp + 1, 8 * pp, 40])
        if schedule in ("interleaved-1f1b", "interleaved-zb") and m % pp:
            continue
        rank = rng.randrange(pp)
        values = [rng.randrange(0, 10**9) for _ in range(3)] + [0]
        saved = tuple(rng.choice(values) for _ in range(v))
        pending = tuple(rng.choice(values) for _ in range(v))
        # the first two requests of a walk are walked, the later ones weigh its kept moments:
        # the same classes at other weights (each value moved alike) reach those
        for shift in (0, 7, 3**20, 11):
            moved = tuple(x + shift for x in saved), tuple(x + 2 * shift for x in pending)
            assert walked_peak(schedule, pp, v, m, rank, *moved) == \
                weighted_peak(schedule, pp, v, m, rank, *moved)[0], (schedule, pp, v, m, rank, moved)
        checked += 1
    assert checked > 200


def _plain_weighted_peak(schedule, pp, v, m, rank, saved, pending):
    """`schedules.weighted_peak` as it was written first: one Python pass over the rank's
    actions, the sum kept up to date action by action, the held micro-batches counted alongside
    and taken where the sum first passes its largest value so far."""
    if schedule == "gpipe" and pp > 1:
        return m * saved[0], m
    if schedule == "1f1b" and pp > 1:
        return min(pp - rank, m) * saved[0], min(pp - rank, m)
    total = best = held_now = best_held = 0
    for kind, chunk in schedules.actions(schedule, pp, v, schedules.walk_microbatches(schedule, pp, m), rank):
        if kind == schedules.F:
            total += saved[chunk]
            held_now += 1
        elif kind == schedules.B:
            total -= saved[chunk]
            held_now -= 1
        elif kind == schedules.I:
            total += pending[chunk]
        else:
            total -= saved[chunk] + pending[chunk]
            held_now -= 1
        if total > best:
            best, best_held = total, held_now
    return best, best_held


def test_weighted_peak_is_the_plain_walks_largest_sum_and_its_held():
    """`schedules.weighted_peak` (the running sum of the actions' amounts in C, the held
    micro-batches counted only up to the first largest sum) against the plain walk, value and
    held micro-batches, over random schedules, pipelines up to 8 chunks per rank (past
    `MAX_STATE_CHUNKS`, where the memory model reads it directly), micro-batch counts, ranks and
    weights: ties between chunks (the first largest moment decides the held count), zeros, and
    negative weights (no moment above the empty state: (0, 0))."""
    rng = random.Random(1817)
    checked = ties = empty = 0
    for _ in range(600):
        schedule = rng.choice(["gpipe", "1f1b", "interleaved-1f1b", "interleaved-zb", "zbv", "dualpipe-v"])
        pp = rng.choice([1, 2, 3, 4, 6, 8, 16])
        if schedule in ("zbv", "dualpipe-v"):
            v = 2
        elif schedule in ("interleaved-1f1b", "interleaved-zb"):
            v = rng.choice([1, 2, 3, 4, 5, 8])
        else:
            v = 1
        m = rng.choice([pp, pp + 1, 2 * pp, 3 * pp + 1, 8 * pp, 40])
        if schedule in ("interleaved-1f1b", "interleaved-zb") and not schedules.interleaved_accepts(pp, m):
            continue
        if schedule == "dualpipe-v" and m < 2 * pp:
            continue
        rank = rng.randrange(pp)
        values = [rng.randrange(-10**6, 10**9) for _ in range(2)] + [rng.randrange(0, 10**9), 0, 5]
        saved = tuple(rng.choice(values) for _ in range(v))
        pending = tuple(rng.choice(values) for _ in range(v))
        expected = _plain_weighted_peak(schedule, pp, v, m, rank, saved, pending)
        assert schedules.weighted_peak(schedule, pp, v, m, rank, saved, pending) == expected, \
            (schedule, pp, v, m, rank, saved, pending)
        checked += 1
        ties += len(set(saved)) < v
        empty += expected == (0, 0)
    assert checked > 300 and ties > 20 and empty > 5


def test_reduced_states_packed_are_the_count_by_count_walks():
    """`schedules._reduced_states` (the moments as a running sum of packed counts, made in C)
    against the walk count by count (`_plain_reduced_states`), as sets of undominated moments,
    over random schedules, pipelines, chunks, micro-batch counts, ranks and chunk classes; with
    layouts torch refuses among them (interleaved rounds with a remainder: counts go negative,
    where the packed fields would borrow and the plain walk must answer)."""
    rng = random.Random(1718)
    checked = borrowed = 0
    for _ in range(500):
        schedule = rng.choice(["interleaved-1f1b", "interleaved-zb", "zbv", "dualpipe-v"])
        pp = rng.choice([1, 2, 3, 4, 8, 16])
        v = 2 if schedule in ("zbv", "dualpipe-v") else rng.choice([1, 2, 3, 4, 8])
        m = rng.choice([1, 2, 3, 5, pp, 2 * pp, 3 * pp + 1, 4 * pp, 40])
        if schedule == "dualpipe-v" and m < 2 * pp:
            continue
        rank = rng.randrange(pp)
        classes: dict[int, int] = {}
        labels = tuple(classes.setdefault(rng.randrange(v), len(classes)) for _ in range(v))
        key = (schedule, pp, v, schedules.walk_microbatches(schedule, pp, m), rank, labels)
        expected = schedules._plain_reduced_states(key, len(classes))
        assert set(schedules._reduced_states(key, len(classes))) == set(expected), key
        checked += 1
        held = [0] * v  # whether some held count goes negative along the walk
        for kind, chunk in schedules.actions(schedule, pp, v, key[3], rank):
            held[chunk] += 1 if kind == schedules.F else -(kind in (schedules.B, schedules.W))
            if held[chunk] < 0:
                borrowed += 1
                break
    assert checked > 300 and borrowed > 5


def _all_groups_of(text: str):
    """`_groups_of`, with the groups of the degrees the degrees' memory floor set aside too:
    (engine, scanned groups, set-aside groups)."""
    from parc.search.engine import Stats

    engine, groups = _groups_of(text)
    aside = [g for item, pipes, canonical, splits in engine._skipped
             for g in engine._list_groups(item, pipes, canonical, splits, 0, 1, 1, Stats())]
    return engine, groups, aside


@pytest.mark.parametrize("name", FLOOR_SPACES)
def test_the_degrees_floor_is_at_most_the_family_floor_of_every_group_of_its_degrees(name):
    """`Engine._degrees_floor` sets a pipelined degree assignment's groups aside, unbounded, when
    the least of its pipelines' floors over sequence parallelism and recomputation exceeds the
    usable memory: over random degree assignments of four spaces, that least must be at most
    the family floor (`_first_floor` at the smallest micro-batch, checked against the memory
    model's plain sums) of every group of every valid pipeline, sequence parallelism and
    recomputation of those degrees; the degrees' floor is that least where it sets them aside,
    one that fits where it does not (it stops at the first), 0 without pipelining. Both kinds
    of degrees must occur (some set aside, some not) in the spaces that have them, and every
    group set aside must be out of memory by its own first floor."""
    from parc.memory.model import first_backward_floors, rank_params, rank_signatures

    engine, groups, aside = _all_groups_of(BOUND_SPACES[name])
    by_item: dict[int, list] = {}
    for g in groups + aside:
        by_item.setdefault(g[0].index, []).append(g)
    rng = random.Random(name)
    deep = [i for i in sorted(by_item) if by_item[i][0][0].degrees.get("pp", 1) > 1]
    flat = [i for i in sorted(by_item) if by_item[i][0][0].degrees.get("pp", 1) == 1]
    sample = rng.sample(deep, min(len(deep), 20)) + rng.sample(flat, min(len(flat), 10))
    checked = pipelined = 0
    for index in sample:
        item = by_item[index][0][0]
        aside_here = "degrees floor" in item.opt_cache and item.opt_cache["degrees floor"] > engine.usable
        sps = sorted({g[5] for g in by_item[index]}, reverse=True)
        floor = engine._degrees_floor(item, sps)  # again: the same value
        families = []
        pairs = set()
        for _, name_, v, _, m, sp, recompute in by_item[index]:
            pairs.add((sp, recompute))
            k = engine._knobs(item, name_, v, engine.space.micro[0], m, sp, recompute)
            held = first_backward_floors(engine.shape, k)
            params = rank_params(engine.shape, k.tp, k.ep, k.pp, k.virtual_stages, k.schedule, k.split, k.runtime)
            plain = max(held[mine] + engine._least_states(item, k, rp.params)
                        for mine, rp in zip(rank_signatures(engine.shape, k.pp, v, name_, k.split), params,
                                            strict=True))
            assert engine._family_floor((item, name_, v, None, m, sp, recompute)) == plain
            families.append(plain)
            checked += 1
        assert (floor > engine.usable) == aside_here
        if item.degrees.get("pp", 1) > 1:
            pipelined += 1
            least = min(engine._pipelines_floor((item, None, None, None, None, sp, recompute))
                        for sp, recompute in pairs)
            assert least <= min(families), (name, item.degrees, item.ep, least, min(families))
            # set aside: the least of them; else one that fits, found first
            assert floor == least if aside_here else least <= floor <= engine.usable
        else:
            assert floor == 0
    assert checked > 30 and (pipelined or not deep)
    for g in rng.sample(aside, min(len(aside), 40)):
        assert engine._first_floor(engine._knobs(*g), g[0]) > engine.usable
    if name in ("gpt3-175b", "mixtral-ep-over-dp-cp"):
        assert aside and groups


@pytest.mark.parametrize("name", sorted(BOUND_SPACES))
def test_the_least_states_over_fewer_shardings_are_the_least_over_every_sharding(name):
    """`least_state_shardings` leaves hsdp out where zero3 is there: the least
    `memory.model.state_bytes` over what is left must equal the least over every sharding of the
    group (`_group_shardings`), for the parameters of every rank of random pipelines of random
    degree assignments (dp with many divisors, pp 1 and deeper, MoE with an expert grid)."""
    from parc.memory.model import rank_params, state_bytes
    from parc.targets import runtime as target_runtime

    engine, groups, aside = _all_groups_of(BOUND_SPACES[name])
    rng = random.Random(name)
    checked = with_hsdp = 0
    for g in rng.sample(groups + aside, min(len(groups + aside), 80)):
        item = g[0]
        k = engine._knobs(*g)
        shardings = engine._group_shardings(item, k)
        with_hsdp += any(s == "hsdp" for s, _ in shardings)
        for rp in rank_params(engine.shape, k.tp, k.ep, k.pp, k.virtual_stages, k.schedule, k.split, k.runtime):
            plain = min(state_bytes(rp.params, ks, (ks.dense_shard_group, ks.expert_shard_group)
                                    if ks.sharding != "none" else (1, 1))
                        for ks in (engine._with_sharding(k, *s) for s in shardings))
            assert engine._least_states(item, k, rp.params) == plain, (item.degrees, g[1:], rp.params)
            checked += 1
    # hsdp where the target runs it (Megatron-LM does not: `targets.Runtime.shardings`)
    assert checked >= 80 and (with_hsdp or "hsdp" not in target_runtime(engine.plan.target).shardings)


def _plain_list_groups(engine, item, pipes, canonical_pipe, splits, e0304, orders_raw, shard_raw, stats):
    """The engine's group listing as it was written before `_list_groups` (one loop per
    pipeline, micro-batch and sequence parallelism, each rule checked in it)."""
    from parc.search.space import SEQUENCE_PARALLEL

    space = engine.space
    n_sp, n_rec = len(space.sequence_parallel), len(space.recompute)
    pp, tp = item.degrees.get("pp", 1), item.degrees.get("tp", 1)
    below_order = n_rec * shard_raw
    n_orders_valid = len(item.orders) * item.order_weight
    valid_here = n_orders_valid * len(item.shardings)
    folded_shardings = n_orders_valid * (len(item.shardings) - 1) if item.single_rank and space.sharding_open else 0
    out = []
    for kind, v in pipes:
        merged_pipe = pp == 1 and (kind, v) != canonical_pipe
        for micro in space.micro:
            m, problem = engine._micro_problem(item.batch_degree, pp, kind, micro)
            if problem:
                stats.pruned[problem] += n_sp * orders_raw * below_order
                continue
            for sp in space.sequence_parallel:
                if not splits[sp]:
                    stats.pruned["E0331"] += orders_raw * below_order
                    continue
                stats.pruned["E0304"] += e0304 * below_order
                merged_sp = tp == 1 and len(space.sequence_parallel) > 1 and sp != SEQUENCE_PARALLEL[0]
                if merged_pipe or merged_sp:
                    stats.merged += valid_here * n_rec
                    continue
                for recompute in space.recompute:
                    stats.merged += folded_shardings
                    out.append((item, kind, v, micro, m, sp, recompute))
    return out


@pytest.mark.parametrize("name", sorted(BOUND_SPACES))
def test_the_group_listing_is_the_plain_loops(name):
    """`Engine._list_groups` computes the micro-batch rules once per schedule and counts what
    the rules reject or fold per pipeline: the same groups in the same order (the index breaks
    ties between equal bounds) and the same statistics as the plain loop it replaces, run as
    the engine's listing on the same space."""
    from parc.search import engine as search_engine

    engine, groups, aside = _all_groups_of(BOUND_SPACES[name])

    class Plain(search_engine.Engine):
        def _list_groups(self, *args, count_only=False):
            listed = _plain_list_groups(self, *args)
            return len(listed) if count_only else listed

    original = search_engine.Engine
    try:
        search_engine.Engine = Plain
        plain, plain_groups, plain_aside = _all_groups_of(BOUND_SPACES[name])
    finally:
        search_engine.Engine = original
    assert groups
    key = [(g[0].index,) + g[1:] for g in groups]
    assert key == [(g[0].index,) + g[1:] for g in plain_groups]
    assert [(g[0].index,) + g[1:] for g in aside] == [(g[0].index,) + g[1:] for g in plain_aside]
    assert engine.stats == plain.stats and engine.stats.as_json() == plain.stats.as_json()  # zero counts too
    # the count of the degrees set aside (listed only if nothing fits) is their listing's length
    from parc.search.engine import Stats

    for item, pipes, canonical, splits in engine._skipped:
        counts, lists = Stats(), Stats()
        assert engine._list_groups(item, pipes, canonical, splits, 2, 3, 5, counts, count_only=True) == \
            len(engine._list_groups(item, pipes, canonical, splits, 2, 3, 5, lists))
        assert counts.as_json() == lists.as_json()


WALK_SPACES = {
    **{name: BOUND_SPACES[name] for name in ("gpt3-175b", "llama3-70b-cp-all-to-all")},
    # tp after pp in the walk, pp above the layers, dp's shardings and pp's pipelines weighing
    "pp-first": "job b\npp ? x tp ? x dp ? x cp ? on nodes(8 gpus, nvlink)\nmodel llama3-70b\n"
                "hardware { gpu h100-sxm, nodes 1536 }\n" + EVERY_HOLE.format(seq=8192, batch=1536),
    # tp written, pp and dp open, no cp axis
    "tp-written": "job b\ntp 4 x pp ? x dp ? on nodes(8 gpus, nvlink)\nmodel gpt3-175b\n"
                  "hardware { gpu a100-80gb, nodes 96 }\n" + EVERY_HOLE.format(seq=2048, batch=1536),
}


@pytest.mark.parametrize("name", sorted(WALK_SPACES))
@pytest.mark.parametrize("limited", [False, True])
def test_the_walk_counts_a_pruned_prefix_as_each_of_its_assignments(name, limited):
    """`Engine._factorisations` with `run`'s pruning: a prefix whose first failing rule its
    degrees decide (tp's own rules, pp above the layers) is counted at once over every
    factorisation below it (`_subtree`). Against the walk of every tuple: the same groups with
    the same indices, the same statistics (every rule's count, the raw space) and the same
    degrees set aside, with and without the outer search's per-axis degree sets; and prefixes
    are pruned."""
    from parc.pipeline import compile_text
    from parc.search import engine as search_engine
    from parc.search.space import build_space

    compilation = compile_text(WALK_SPACES[name], path="walk.par")
    assert compilation.plan is not None, compilation.diagnostics
    space = build_space(compilation)
    rng = random.Random(name)
    allowed = ({a: frozenset(d for d in range(1, 4097) if rng.random() < 0.5) | {1, 2, 4, 8}
                for a in space.open_axes} if limited else None)
    runs = []
    for prune in (True, False):
        engine = search_engine.Engine(space, keep=14, degree_values=allowed)
        groups: list = []

        def collect(found, engine=engine, groups=groups):
            groups.extend(found)
            return search_engine.Outcome(found=[], stats=engine.stats, smallest_peak=None, usable_bytes=0)

        engine._scan = collect
        assert engine._prunable()
        pruned = []
        if not prune:
            engine._prunable = lambda: False
        else:
            real = engine._prefix_problem
            engine._prefix_problem = lambda chosen, axis, real=real, pruned=pruned: pruned.append(r := real(chosen, axis)) or r
        engine.run()
        runs.append((engine, groups, pruned))
    (fast, fast_groups, pruned), (plain, plain_groups, _) = runs
    assert plain_groups and (any(pruned) or limited)
    assert [(g[0].index,) + g[1:] for g in fast_groups] == [(g[0].index,) + g[1:] for g in plain_groups]
    assert fast.stats.as_json() == plain.stats.as_json() and fast.stats == plain.stats
    assert [s[0].index for s in fast._skipped] == [s[0].index for s in plain._skipped]


def _plain_loads(engine, item, schedule, v, micro, sp, recompute, geo=None, compute_only=False):
    """`Engine._kept_sums` (its sums) written out without its caches: each distinct rank load of
    `timing.rank_loads`, its pieces' sums and its sends, recomputed on every call."""
    from parc import timing

    d = item.degrees
    tp, pp, cp = d.get("tp", 1), d.get("pp", 1), d.get("cp", 1)
    if compute_only:
        pieces = engine._compute_pieces(tp, sp and tp > 1, cp, micro, item.ep)
    else:
        placements = engine._placements(item) if geo is None else ((geo.cp, geo.ep),)
        pieces = engine._pieces(tp, sp and tp > 1, cp, micro, item.ep, placements,
                                (schedule == "dualpipe-v" or engine.software.ep_overlap,))
    loads = dict.fromkeys(timing.rank_loads(engine.shape,
                                            timing.Chunking(tp, item.ep, pp, v, schedule, engine.split, engine.runtime),
                                            recompute, engine.fixed["recompute_layers"]))
    send = 0.0 if compute_only else engine._pp_send(item, tp, pp, cp, micro, geo)
    # a runtime that overlaps an interleaved rank's sends charges them after its computation
    # (`timing.pp_sends_exposed`, at an NCCL send's SM share)
    overlap = engine.software.pp_overlap if send else "none"
    share = kernel_model.sm_share(kernel_model.NCCL_SMS, engine.hw.sms)
    out = []
    for load in loads:
        later = timing.sends_overlapped(load, overlap)
        sums = [0.0, 0.0, 0.0, 0.0, *((0.0, 0.0) if later else (load.sends_f * send, load.sends_b * send))]
        names = [((is_moe, mode), count) for is_moe, mode, count in load.pieces]
        names += [(name, 1) for present, name in ((load.embedding, "embedding"), (load.output, "output")) if present]
        for name, count in names:
            p = pieces[name]
            sums = [s + count * p[j] for j, s in enumerate(sums)]
        if later:
            sent = timing.pp_sends_exposed(load, send, share, overlap, sums[0], sums[1] + sums[2] + sums[3])
            sums[4], sums[5] = sums[4] + sent[0], sums[5] + sent[1]
        out.append((*sums, load))
    return tuple(out)


@pytest.mark.parametrize("name", sorted(BOUND_SPACES))
def test_the_rank_sums_kept_per_pieces_loads_and_send_are_the_plain_sums(name):
    """`Engine._kept_sums` keeps its rank sums per (pieces, loads, send), and one tuple of loads
    for the schedules that chunk alike: over random groups, every pipeline of each (the
    schedules sharing loads asked in turn), with and without communication and at each order's
    own placement, asked in a shuffled order and twice, they equal the sums recomputed from
    the time model's loads on every call (loads compared field by field)."""
    engine, groups = _groups_of(BOUND_SPACES[name])
    rng = random.Random(name)
    deep = [g for g in groups if g[0].degrees.get("pp", 1) > 1]
    sample = rng.sample(deep, min(len(deep), 40)) + rng.sample(groups, min(len(groups), 30))
    siblings: dict[tuple, list] = {}
    for g in groups:
        siblings.setdefault((g[0].index, g[3], g[5], g[6]), []).append(g)
    asks = [(g[0], g[1], g[2], g[3], g[5], g[6]) for s in sample for g in siblings[(s[0].index, s[3], s[5], s[6])]]
    asks = asks * 2
    rng.shuffle(asks)
    checked = 0
    for ask in asks:
        item = ask[0]
        for kwargs in ({}, {"compute_only": True}):
            got = engine._kept_sums(*ask, **kwargs).sums
            assert got == _plain_loads(engine, *ask, **kwargs), (ask, kwargs)
            checked += 1
        shard = rng.choice(item.shardings)[1] if item.shardings else 1
        _, geo, _ = rng.choice(engine._classes(item, shard))
        assert engine._kept_sums(*ask, geo).sums == _plain_loads(engine, *ask, geo), ask
    assert checked > 100
    loads = [v for k, v in engine._load_cache.items() if isinstance(k, tuple) and len(k) == 6]
    if deep:  # some schedules chunk alike, and share one tuple
        assert len({id(v) for v in loads}) < len(loads)


def _plain_core(schedule_name, pp, m, loads):
    """The bound's core as `step_time` adds it up, written out rank by rank: m x the busiest
    rank's sum + the least of every rank's own `timing.bubble_seconds`."""
    from parc import timing

    busiest, bubble = 0.0, float("inf")
    for f, bi, bw, rec, xf, xb, load in loads:
        busiest = max(busiest, f + bi + bw + rec + xf + xb)
        v = load.chunks
        bubble = min(bubble, timing.bubble_seconds(schedule_name, pp, (f + xf) / v, (bi + rec + xb) / v, bw / v))
    return m * busiest + bubble


@pytest.mark.parametrize("name", sorted(BOUND_SPACES))
def test_the_bound_core_kept_with_the_sums_is_the_rank_by_rank_core(name):
    """`Engine._bound_core` reads the busiest rank's total taken while the sums were made and
    the least per-stage bubble kept per schedule with them: over random groups of four spaces,
    every pipeline of each (every schedule, so the schedules sharing sums ask in turn), with
    and without communication and at an order's own placement, asked in a shuffled order and
    twice, it is the core computed rank by rank from the plain sums, to the last bit."""
    from parc.memory.parameters import chunks_of

    engine, groups = _groups_of(BOUND_SPACES[name])
    rng = random.Random(name + " core")
    deep = [g for g in groups if g[0].degrees.get("pp", 1) > 1]
    sample = rng.sample(deep, min(len(deep), 40)) + rng.sample(groups, min(len(groups), 20))
    siblings: dict[tuple, list] = {}
    for g in groups:
        siblings.setdefault((g[0].index, g[3], g[5], g[6]), []).append(g)
    asks = [g for s in sample for g in siblings[(s[0].index, s[3], s[5], s[6])]] * 2
    rng.shuffle(asks)
    checked = shared = 0
    for item, schedule_name, v, micro, m, sp, recompute in asks:
        pp = item.degrees.get("pp", 1)
        shard = rng.choice(item.shardings)[1] if item.shardings else 1
        _, geo, _ = rng.choice(engine._classes(item, shard))
        for geo_arg, kwargs in ((None, {}), (None, {"compute_only": True}), (geo, {})):
            ask = (item, schedule_name, v, micro, sp, recompute, geo_arg)
            kept = engine._kept_sums(*ask, **kwargs)
            plain = _plain_loads(engine, *ask, **kwargs)
            assert kept.sums == plain, ask
            assert engine._bound_core(kept, schedule_name, pp, m) == _plain_core(schedule_name, pp, m, plain), ask
            shared += len(kept.bubbles) > 1
            checked += 1
    assert checked > 100
    # sums shared by several schedules keep each one's bubble, where two of the space's schedules
    # chunk alike (not under Megatron-LM's 1F1B and interleaved 1F1B at two or more chunks)
    alike: dict[tuple, set] = {}
    for g in deep:
        pp = g[0].degrees["pp"]
        chunks = chunks_of(engine.shape.layers, pp, g[2], g[1], engine.split, engine.shape.tied, engine.shape.mtp)
        alike.setdefault((pp, chunks), set()).add(g[1])
    if any(len(schedules_) > 1 for schedules_ in alike.values()):
        assert shared
    # and the bounds made of it: each group's `bound` and `quick_bound` are the plain core plus
    # the cheapest optimizer step of its degrees
    for group in asks[:60]:
        item, schedule_name, v, micro, m, sp, recompute = group
        pp = item.degrees.get("pp", 1)
        for bound, kwargs in ((engine.bound, {}), (engine.quick_bound, {"compute_only": True})):
            got = bound(*group)
            plain = _plain_loads(engine, item, schedule_name, v, micro, sp, recompute, **kwargs)
            assert got == _plain_core(schedule_name, pp, m, plain) + item.opt_cache[(schedule_name, v)], group


def test_the_collector_is_paused_for_the_search_and_restored_after():
    """`engine.collector_paused` turns Python's cyclic garbage collector off for its block and
    back to what it was after, an exception included; `Engine.run` runs inside it."""
    import gc

    from parc.search import engine as search_engine

    assert gc.isenabled()
    try:
        with search_engine.collector_paused():
            assert not gc.isenabled()
        assert gc.isenabled()
        with pytest.raises(KeyError), search_engine.collector_paused():
            assert not gc.isenabled()
            raise KeyError("a failing search")
        assert gc.isenabled()
        gc.disable()  # off before: stays off after
        with search_engine.collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
    seen = []
    engine, _ = _groups_of(BOUND_SPACES["gpt3-175b"])
    engine._scan = lambda groups: seen.append(gc.isenabled()) or search_engine.Outcome(
        found=[], stats=engine.stats, smallest_peak=None, usable_bytes=0)
    engine.run()
    assert seen == [False] and gc.isenabled()


@pytest.mark.parametrize("name", sorted(BOUND_SPACES))
def test_kept_knobs_are_the_knobs_built_afresh(name):
    """`Engine._knobs` keeps one `Knobs` per group and sharding with the degrees, and
    `_with_sharding` one per (knobs, sharding): over random groups of four spaces, asked in a
    shuffled order and twice, each is equal (every field, and the hash) to the bundle built
    afresh (`_build_knobs`, `_plain_with_sharding`), and asking again returns the same object."""
    import dataclasses

    engine, groups = _groups_of(BOUND_SPACES[name])
    rng = random.Random(name)
    sample = rng.sample(groups, min(60, len(groups)))
    asks = [(g, s) for g in sample for s in [("none", 0)] + list(g[0].shardings)]
    rng.shuffle(asks)
    checked = 0
    for group, (sharding, shard) in asks + asks[: len(asks) // 2]:
        plain = engine._build_knobs(*group, sharding, shard)
        kept = engine._knobs(*group, sharding, shard)
        assert kept == plain and hash(kept) == hash(plain)
        assert dataclasses.astuple(kept) == dataclasses.astuple(plain)
        assert engine._knobs(*group, sharding, shard) is kept
        k = engine._knobs(*group)
        moved = engine._with_sharding(k, sharding, shard)
        assert moved == engine._plain_with_sharding(k, sharding, shard) == plain
        assert engine._with_sharding(k, sharding, shard) is moved
        checked += 1
    assert checked


def test_the_knobs_builder_builds_the_plain_knobs():
    """`engine.knobs_builder` sets every field through its slot: over random group values and
    fixed settings (a written split, recomputed layers, fp32, another runtime and model code),
    each bundle equals `Knobs(**group, **fixed)` field by field, in its hash and its repr, and
    reads every field (an unset slot raises)."""
    import dataclasses

    from parc.memory.inputs import Knobs
    from parc.search.engine import _GROUP_KNOBS, knobs_builder

    rng = random.Random("knobs builder")
    fixeds = [{}, dict(precision="fp32", optimizer="adamw", recompute_layers=3, cp_flavour="all-to-all", seq=4096,
                       split=(3, 5), ep_over_tp=True, runtime="megatron", pp_receives="kept",
                       model_code="torchtitan")]
    checked = 0
    for fixed in fixeds:
        build = knobs_builder(fixed)
        for _ in range(50):
            group = dict(tp=rng.choice([1, 2, 8]), pp=rng.choice([1, 2, 16]), dp=rng.choice([1, 64]),
                         cp=rng.choice([1, 4]), ep=rng.choice([1, 8]), ep_axis=rng.random() < 0.5,
                         virtual_stages=rng.choice([1, 2]), schedule=rng.choice(["1f1b", "interleaved-zb"]),
                         sequence_parallel=rng.random() < 0.5, sharding=rng.choice(["none", "zero3", "hsdp"]),
                         hsdp_shard=rng.choice([0, 8]), micro_batch=rng.choice([1, 2]),
                         microbatches=rng.choice([1, 64]), recompute=rng.choice(["none", "full"]))
            assert tuple(group) == _GROUP_KNOBS
            fast, plain = build(*group.values()), Knobs(**group, **fixed)
            assert fast == plain and hash(fast) == hash(plain) and repr(fast) == repr(plain)
            assert dataclasses.astuple(fast) == dataclasses.astuple(plain)
            assert [getattr(fast, f.name) for f in dataclasses.fields(Knobs)] == \
                [getattr(plain, f.name) for f in dataclasses.fields(Knobs)]
            checked += 1
    assert checked == 100


def test_knobs_with_another_sharding_copied_by_replaced_are_the_plain_ones():
    """`frozen.replaced`, which the engine's `_with_sharding` calls, copies every field of a
    `Knobs` through its slot: over random knobs (every
    field the search's builder sets, and the ones it does not: a zero1 bucket, a device, a split,
    recomputed layers, another runtime), the copy with another sharding equals
    `dataclasses.replace` (every field, its hash and its repr; the source's kept hash is not
    carried over), and for the search's own knobs it equals `Engine._plain_with_sharding`."""
    import dataclasses

    from parc.frozen import replaced
    from parc.memory.inputs import Knobs

    def copy(k: Knobs, sharding: str, shard: int) -> Knobs:
        return replaced(k, sharding=sharding, hsdp_shard=shard)

    rng = random.Random("sharded copier")
    checked = 0
    for _ in range(60):
        k = Knobs(tp=rng.choice([1, 8]), pp=rng.choice([1, 16]), dp=rng.choice([1, 64]), cp=rng.choice([1, 4]),
                  ep=rng.choice([1, 8]), ep_axis=rng.random() < 0.5, virtual_stages=rng.choice([1, 2]),
                  schedule=rng.choice(["1f1b", "interleaved-zb"]), sequence_parallel=rng.random() < 0.5,
                  sharding=rng.choice(["none", "zero1"]), bucket=rng.choice([0, 1 << 20]),
                  device=rng.choice(["cuda", "fake"]), split=rng.choice([None, (3, 5)]),
                  recompute_layers=rng.choice([None, 3]), runtime=rng.choice(["torch", "megatron"]),
                  micro_batch=rng.choice([1, 2]), microbatches=rng.choice([1, 64]))
        hash(k)  # a kept hash on the source: the copy must hash its own fields
        sharding, shard = rng.choice([("zero3", 0), ("hsdp", 8), ("none", 0)])
        fast, plain = copy(k, sharding, shard), dataclasses.replace(k, sharding=sharding, hsdp_shard=shard)
        assert fast == plain and hash(fast) == hash(plain) and repr(fast) == repr(plain)
        assert dataclasses.astuple(fast) == dataclasses.astuple(plain)
        assert (fast.sharding, fast.hsdp_shard) == (sharding, shard)
        checked += 1
    engine, groups = _groups_of(BOUND_SPACES["gpt3-175b"])
    for group in random.Random("sharded copier groups").sample(groups, 20):
        k = engine._knobs(*group)
        for sharding, shard in group[0].shardings:
            fast = copy(k, sharding, shard)
            assert dataclasses.astuple(fast) == dataclasses.astuple(engine._plain_with_sharding(k, sharding, shard))
            checked += 1
    assert checked > 60


@pytest.mark.parametrize("name", ["gpt3-175b", "llama3-70b-cp-all-to-all"])
def test_rank_tails_sharing_windows_across_micro_batch_counts_are_the_time_models(name):
    """`_rank_tail_of` keeps a tail's data-parallel windows without the micro-batch count m
    (`Engine._windows_key`): the groups of one degree assignment that differ in their micro-batch
    (so in m) share one ledger and one `dp_windows`. Over such groups asked in a shuffled order
    in one engine, each rank's tail equals the time model's own `timing.dp_exposed` (its ledger
    and windows built for the group's m, no kept value of the engine) plus the optimizer step,
    and the windows were shared (fewer kept than the micro-batch counts asked), also between
    pipelines that differ only in their virtual stages (every sharding but zero1, whose buckets
    are per chunk: fewer kept than the virtual-stage counts asked)."""
    from parc import timing

    engine, groups = _groups_of(BOUND_SPACES[name])
    if not engine.inside_is_fastest:
        pytest.skip("the tail is the optimizer step alone")
    by_item: dict = {}
    for group in groups:
        by_item.setdefault(group[0].index, []).append(group)
    rng = random.Random(name)
    # degree assignments whose groups span several micro-batch counts
    items = [gs for gs in by_item.values() if len({g[4] for g in gs}) > 2]
    assert items
    asks = [(g, sharding) for gs in rng.sample(items, min(6, len(items)))
            for g in rng.sample(gs, min(12, len(gs))) for sharding in g[0].shardings]
    rng.shuffle(asks)
    checked, with_m, with_v = 0, set(), set()  # what the windows would be kept per with m, with v in their key
    sw = engine.software
    for group, (sharding, shard) in asks:
        item = group[0]
        k, _, times, _ = engine._lazy_parts(group)
        ks = engine._plain_with_sharding(k, sharding, shard)
        links = engine._best_links(item, shard)
        for r in times:
            exposed, _ = timing.dp_exposed(r, ks, links, sw.grad_bytes, sw.dp_runtime, timing.serial_windows(sw, ks.pp), sw.gather_bytes)
            optimizer = timing.optimizer_seconds(r, ks, engine.hw, engine.constants)
            copies = timing.dp_copy_seconds(timing.dp_copy_bytes(r, ks, links, sw), engine.hw, engine.constants)
            assert engine._rank_tail_of(item, r, k, sharding, shard) == exposed + optimizer + copies
            with_m.add((item.index, r.params_dense, r.params_expert, r.layers, r.moe_layers, k.microbatches,
                        sharding, k.pp, k.virtual_stages, shard, k.optimizer))
            with_v.add((item.index, r.params_dense, r.params_expert, r.layers, r.moe_layers,
                        sharding, k.pp, k.virtual_stages, shard, k.optimizer))
            checked += 1
    assert checked
    windows = sum(1 for gs in by_item.values() for key in gs[0][0].opt_cache if key[0] == "windows")
    assert 0 < windows < len(with_v) < len(with_m)


def test_kept_activation_knobs_and_first_backward_floors_are_the_plain_ones():
    """`memory.model.activation_knobs` is kept (one object per value) and `_first_backward_floors`
    looks each chunk signature up once: over random knobs and pipelines of four models, the
    knobs equal a `Knobs` built from the same fields, and the floors equal the plain sums over
    each distinct rank's chunks (`_chunk_activations` per chunk, no sharing), written out here."""
    from parc.memory import model as memory_model
    from parc.memory.inputs import Knobs, shape_of
    from parc.pipeline import compile_path

    rng = random.Random(7)
    checked = 0
    for path in ("specs/llama3-405b.par", "specs/deepseek-v3-like.par", "specs/mixtral-8x7b-5d.par",
                 "specs/gpt3-175b.par"):
        shape = shape_of(compile_path(path, checks=False).plan)
        for _ in range(25):
            tp, cp, micro = rng.choice([1, 2, 4, 8]), rng.choice([1, 2, 4]), rng.choice([1, 2, 3])
            sp, ep = rng.random() < 0.5, rng.choice([1, 2, 8]) if shape.moe else 1
            recompute = rng.choice(["none", "selective", "full"])
            ak = memory_model.activation_knobs(tp, sp, cp, "ring", 4096, micro, "torch", ep, "bf16")
            assert ak == Knobs(tp=tp, pp=1, dp=1, cp=cp, ep=ep, sequence_parallel=sp, cp_flavour="ring", seq=4096,
                               micro_batch=micro, runtime="torch", precision="bf16")
            assert memory_model.activation_knobs(tp, sp, cp, "ring", 4096, micro, "torch", ep, "bf16") is ak
            pipe = random_pipeline(rng, shape.layers)
            if pipe is None:
                continue
            schedule, pp, v = pipe
            released = memory_model.released_backward(schedule, pp)
            floors = memory_model._first_backward_floors(shape, ak, pp, v, schedule, None, recompute, None)
            for mine in memory_model.distinct_rank_signatures(shape, pp, v, schedule, None):
                pieces = [memory_model._chunk_activations(shape, ak, sig, recompute, None, pp > 1, released)
                          for sig in mine]
                plain = max(sum(p.activations.saved for p in pieces) + pieces[-1].working,
                            max(p.activations.saved + p.working for p in pieces))
                assert floors[mine] == plain
                checked += 1
    assert checked


def test_hash_once_is_the_hash_of_the_fields_tuple():
    """`frozen.hash_once` fetches the fields with one `attrgetter`: the hash it stores is that of
    the tuple of the fields in order (what it stored before), for classes of many fields and of
    one (where `attrgetter` returns the value itself, not a tuple)."""
    from dataclasses import dataclass, field, fields

    from parc.frozen import hash_once
    from parc.memory.inputs import Shape

    @dataclass(frozen=True)
    class One:
        x: tuple
        _hash: int = field(default=0, init=False, repr=False, compare=False)

        def __post_init__(self):
            hash_once(self)

    rng = random.Random(11)
    checked = 0
    for _ in range(100):
        value = tuple(rng.randrange(9) for _ in range(rng.randrange(4)))
        one = One(value)
        assert one._hash == hash((value,))
        checked += 1
    from parc.memory.inputs import shape_of
    from parc.pipeline import compile_path

    for path in ("specs/llama3-405b.par", "specs/deepseek-v3-like.par", "specs/mixtral-8x7b-5d.par"):
        shape = shape_of(compile_path(path, checks=False).plan)
        names = [f.name for f in fields(Shape) if f.name != "_hash"]
        assert hash(shape) == hash(tuple(getattr(shape, name) for name in names))
        checked += 1
    assert checked


KNOWN_OUT_SPACES = {
    "gpt3-175b": BOUND_SPACES["gpt3-175b"],
    # the benchmark's 983,040-GPU space on 4,096 GPUs: 128K tokens, 120 layers, every hole
    "llama3-405b-120-layers": "job b\ntp ? x pp ? x dp ? x cp ? x ep ? on nodes(8 gpus, nvlink)\norder ?\n"
                              "model llama3-405b { layers 120 }\nhardware { gpu h100-sxm, nodes 512 }\n"
                              "train { seq 131072, global-batch 65_536, micro-batch ?, recompute ? }\n"
                              "tp { sequence-parallel ? }\npp { schedule ?, virtual-stages ? }\ndp { sharding ? }\n",
}


@pytest.mark.parametrize("name", sorted(KNOWN_OUT_SPACES))
def test_groups_known_out_of_memory_are_out_by_their_own_first_floor(name):
    """The scan counts a group out of memory without its bound or floors when a smaller
    micro-batch of its first floor's family already failed (`Engine._known_out_of_memory`):
    against the scan that computes every such group's floor, the same top, the same
    evaluations and the same smallest floor noted; only the split between "bounded out" and
    "does not fit" moves (a group counted out where the plain scan left it queued) and there are
    fewer memory predictions. Every group so counted is out by its own first floor."""
    from parc.pipeline import compile_text
    from parc.search.engine import Engine
    from parc.search.space import build_space
    from parc.targets import memory_runtime, software_of

    runs = []
    for known in (False, True):
        compilation = compile_text(KNOWN_OUT_SPACES[name], path="known.par")
        engine = Engine(build_space(compilation), keep=14, software=software_of(compilation.plan),
                        runtime=memory_runtime(compilation.plan.target))
        engine.known_out = known
        engine.held_floors = False  # (which would reject most of these groups first: `_held_out`)
        counted: list = []
        if known:
            real = engine._known_out_of_memory
            engine._known_out_of_memory = lambda group, real=real, counted=counted: (
                real(group) and (counted.append(group) or True))
        runs.append((engine, engine.run(), counted))
    (_, plain, _), (engine, fast, counted) = runs
    assert plain.found and counted
    assert [f.rank_key for f in fast.found] == [f.rank_key for f in plain.found]
    assert [(f.step, f.peak_bytes) for f in fast.found] == [(f.step, f.peak_bytes) for f in plain.found]
    a, b = fast.stats, plain.stats
    assert (a.timed, a.time_evaluations, a.merged, a.valid, a.raw, a.pruned) == (
        b.timed, b.time_evaluations, b.merged, b.valid, b.raw, b.pruned)
    assert a.bounded + a.out_of_memory == b.bounded + b.out_of_memory and a.out_of_memory >= b.out_of_memory
    assert a.memory_evaluations < b.memory_evaluations
    assert fast.smallest_peak == plain.smallest_peak
    for group in counted:
        assert engine._first_floor(engine._knobs(*group), group[0]) > engine.usable


@pytest.mark.parametrize("name", ["gpt3-175b", "mixtral-ep-over-dp-cp"])
def test_tails_and_optimizer_steps_with_lazy_knobs_are_those_of_each_shardings_knobs(name):
    """`refine` and `_evaluate` ask for a sharding's optimizer step and data-parallel tail with
    the group's knobs and the sharding (`_optimizer_of`, `_tail_of`, `_rank_tail_of`), its
    knobs built only on a miss, and keep each group's parts (`_lazy_parts`): over random groups,
    asked in a shuffled order, each equals the plain value computed by a second engine, which
    is handed each sharding's own knobs (`_plain_with_sharding`) and keeps nothing between groups."""
    lazy, groups = _groups_of(BOUND_SPACES[name])
    plain, plain_groups = _groups_of(BOUND_SPACES[name])
    rng = random.Random(name)
    picks = rng.sample(range(len(groups)), min(40, len(groups)))
    checked = 0
    for index in picks:
        group, twin = groups[index], plain_groups[index]
        k, core, times, shardings = lazy._lazy_parts(group)
        assert lazy._lazy_parts(group)[2] is times
        twin[0].opt_cache.clear()
        k_plain, core_plain, times_plain, shardings_plain, knobs = plain._parts(twin)
        assert (k, core, times, shardings) == (k_plain, core_plain, times_plain, shardings_plain)
        order = list(range(len(shardings)))
        rng.shuffle(order)
        for j in order:
            sharding, shard = shardings[j]
            ks = plain._plain_with_sharding(k_plain, sharding, shard)
            assert knobs[j] == ks
            for r, rp in zip(times, times_plain, strict=True):
                assert lazy._optimizer_of(group[0], r, k, sharding, shard) == plain._optimizer(twin[0], rp, ks)
                if lazy.inside_is_fastest:
                    assert lazy._rank_tail_of(group[0], r, k, sharding, shard) == plain._rank_tail(twin[0], rp, ks)
            assert lazy._tail_of(group[0], k, sharding, shard, core, times) == plain._tail(twin[0], ks, core_plain,
                                                                                          times_plain)
            checked += 1
    assert checked


def test_knobs_keep_the_hash_of_their_fields():
    """`Knobs` keeps its hash (`frozen.lazy_hash`, on the first `__hash__`): over random knobs,
    the hash is that of the tuple of its fields (what the dataclass's own `__hash__` computed on
    every lookup before), equal knobs hash alike and compare equal whether or not one was
    hashed first, knobs that differ in one field compare unequal, and a `dataclasses.replace`
    copy hashes afresh (a kept hash is never carried over to other fields)."""
    import dataclasses

    from parc.memory.inputs import Knobs

    rng = random.Random(18)
    names = [f.name for f in dataclasses.fields(Knobs) if f.name != "_hash"]
    assert "tp" in names and "model_code" in names and len(names) > 20
    choices = {
        "tp": (1, 2, 4, 8), "pp": (1, 2, 8, 16), "dp": (1, 4, 64), "cp": (1, 2, 4), "ep": (1, 8),
        "ep_axis": (False, True), "virtual_stages": (1, 2, 4), "schedule": ("1f1b", "gpipe", "zbv"),
        "split": (None, (3, 5)), "sequence_parallel": (False, True), "sharding": ("none", "zero1", "zero3", "hsdp"),
        "hsdp_shard": (0, 8), "seq": (2048, 8192), "micro_batch": (1, 2, 4), "microbatches": (1, 8, 32),
        "precision": ("bf16", "fp8", "nvfp4"), "recompute": ("none", "selective", "full"),
        "recompute_layers": (None, 2), "runtime": ("torch", "megatron"),
        "model_code": ("parc", "torchtitan", "torchtitan-compiled"),
    }
    checked = 0
    for _ in range(400):
        given = {name: rng.choice(values) for name, values in choices.items()}
        knobs, twin = Knobs(**given), Knobs(**given)
        if rng.random() < 0.5:
            hash(twin)  # one of the pair hashed (and kept) before the other is compared
        assert knobs == twin
        plain = hash(tuple(getattr(knobs, name) for name in names))
        assert hash(knobs) == plain and hash(knobs) == plain and hash(twin) == plain
        name = rng.choice(sorted(choices))
        other = next(v for v in choices[name] if v != given[name])
        changed = dataclasses.replace(knobs, **{name: other})
        assert changed != knobs
        assert hash(changed) == hash(tuple(getattr(changed, n) for n in names))
        assert {knobs: 1}[twin] == 1
        checked += 1
    assert checked


def test_undominated_packed_a_byte_each_is_the_plain_domination():
    """`schedules.undominated` packs counts under 128 a byte each (`int.from_bytes`) and larger
    ones at their own width: both give the vectors no earlier kept vector dominates, compared
    here field by field."""
    rng = random.Random(18)
    cases = 0
    for top in (1, 3, 127, 128, 300):
        for fields in (1, 3, 9, 17):
            vectors = [tuple(rng.randint(0, top) for _ in range(fields)) for _ in range(rng.randint(0, 60))]
            vectors += rng.sample(vectors, len(vectors) // 3)  # ties
            ordered = sorted(vectors, key=lambda c: (-sum(c), c))
            plain = plain_undominated(ordered)
            assert schedules.undominated(ordered) == plain
            cases += bool(ordered)
    assert cases > 10


def plain_undominated(ordered: list[tuple[int, ...]]) -> list[int]:
    """The indices of the vectors no earlier kept vector dominates, compared pairwise field by
    field: the reference `schedules.undominated` is held to."""
    kept: list[tuple[int, ...]] = []
    plain = []
    for index, counts in enumerate(ordered):
        if not any(all(o >= c for o, c in zip(other, counts, strict=True)) for other in kept):
            kept.append(counts)
            plain.append(index)
    return plain


def test_undominated_with_hundreds_kept_is_the_plain_domination():
    """Past `MANY_KEPT` kept vectors `schedules.undominated` tests each vector against all kept
    at once (`_dominated_by_any`, one integer of blocks side by side): against the plain
    pairwise comparison on sets that keep hundreds (vectors of one total never dominate each
    other, mixed with random ones and ties), counts a byte each and wider, up to 17 fields; the
    kept count passes the threshold in every case."""
    rng = random.Random(1817)
    cases = 0
    for top in (3, 127, 128, 1000):
        for fields in (2, 5, 9, 17):
            total = top * fields // 2
            vectors = []
            for _ in range(rng.randint(150, 400)):  # an antichain: all of one total
                counts = [0] * fields
                for _ in range(total):
                    open_fields = [f for f in range(fields) if counts[f] < top]
                    counts[rng.choice(open_fields)] += 1
                vectors.append(tuple(counts))
            vectors += [tuple(rng.randint(0, top) for _ in range(fields)) for _ in range(300)]
            vectors += rng.sample(vectors, len(vectors) // 4)  # ties
            ordered = sorted(vectors, key=lambda c: (-sum(c), c))
            plain = plain_undominated(ordered)
            assert schedules.undominated(ordered) == plain, (top, fields)
            cases += len(plain) > 2 * schedules.MANY_KEPT
    assert cases >= 6


def _plain_receive_moments(name, pp, v, m, rank):
    """`schedules.receive_moments` as it was written first: every moment of the walk as (tag,
    held + pending + receive buffers alive) in one set, and per tag the moments no other moment
    of the tag dominates, found by comparing every pair field by field."""
    walked = schedules.walk_microbatches(name, pp, m)
    trace = schedules._receive_trace(name, pp, v, walked)
    if trace is None:
        return None
    lives, gaps = trace[rank]
    sizes = [len(turn) for turn in schedules.decoded_turns(pp, v, schedules._compute_turns(name, pp, v, walked, rank)) if turn]
    held, pending = [0] * v, [0] * v
    seen = {(3 * v, (0,) * (2 * v) + (gaps[0],))}
    turn = used = 0
    for kind, chunk in schedules.actions(name, pp, v, walked, rank):
        if kind == schedules.W:
            seen.add((3 * chunk + 2, tuple(held) + tuple(pending) + (gaps[turn],)))
            held[chunk] -= 1
            pending[chunk] -= 1
            continue
        if kind == schedules.F:
            held[chunk] += 1
        seen.add((3 * chunk + (kind == schedules.I), tuple(held) + tuple(pending) + (lives[turn],)))
        if kind == schedules.I:
            pending[chunk] += 1
        elif kind == schedules.B:
            held[chunk] -= 1
        used += 1
        if used == sizes[turn]:
            turn, used = turn + 1, 0
            seen.add((3 * v, tuple(held) + tuple(pending) + (gaps[turn],)))
    out = []
    for tag in range(3 * v + 1):
        mine = {counts for t, counts in seen if t == tag}
        for c in mine:
            if not any(o != c and all(a >= b for a, b in zip(o, c, strict=True)) for o in mine):
                out.append((c[:v], c[v:2 * v], min(tag // 3, v - 1), 3 if tag == 3 * v else tag % 3, c[-1]))
    return tuple(sorted(out, key=lambda s: (s[2], s[3], s[0], s[1], s[4])))


@pytest.mark.parametrize("name", ["interleaved-1f1b", "interleaved-zb", "zbv", "dualpipe-v"])
def test_receive_moments_are_the_plain_walks_undominated_moments(name):
    """`schedules.receive_moments` (a set per tag, one tuple per moment, `undominated` trying the
    last dominating vector first) against the plain walk and pairwise domination, every rank,
    pp 2 to 16, 1 to 64 micro-batches (dualpipe-v's refused layouts, None, included)."""
    checked = 0
    for pp in (2, 3, 4, 8, 16):
        for v in ((2,) if name in ("zbv", "dualpipe-v") else (2, 3, 4)):
            for m in (1, 2, 3, 5, 8, 16, 24, 64):
                if pp == 16 and m < 16 or pp < 16 and m == 64:
                    continue
                if name.startswith("interleaved") and not schedules.interleaved_accepts(pp, m):
                    continue  # torch refuses it (E0318); its walk's counts go negative, outside `undominated`'s domain
                for rank in range(pp):
                    expected = _plain_receive_moments(name, pp, v, m, rank)
                    assert schedules.receive_moments.__wrapped__(name, pp, v, m, rank) == expected, (pp, v, m, rank)
                    checked += expected is not None
    assert checked


def _deep_layouts(count: int, seed: int):
    """Random layouts of the deep-pipeline specs (megatron-1t, gpt3-175b): every schedule, up to
    4 chunks per rank, 4-32 pipeline ranks, the step's micro-batches from pp to 4 pp, every
    sharding, recomputation and micro-batch size; (shape, knobs) each."""
    from dataclasses import replace

    from parc import memory
    from parc.pipeline import compile_path

    rng = random.Random(seed)
    bases = []
    for path in ("specs/megatron-1t.par", "specs/gpt3-175b.par"):
        plan = compile_path(path, checks=False).plan
        bases.append((memory.shape_of(plan), memory.knobs_of(plan)))
    out = []
    while len(out) < count:
        shape, base = rng.choice(bases)
        schedule = rng.choice(["gpipe", "1f1b", "interleaved-1f1b", "interleaved-zb", "zbv", "dualpipe-v"])
        pp = rng.choice([4, 8, 16, 32])
        v = 2 if schedule in ("zbv", "dualpipe-v") else rng.choice([1, 2, 4]) if schedule.startswith("inter") else 1
        if shape.layers % (pp * v):
            continue
        m = rng.choice([pp, 2 * pp, 4 * pp])
        k = replace(base, schedule=schedule, split=None, pp=pp, virtual_stages=v, microbatches=m,
                    sharding=rng.choice(["none", "zero1", "zero2", "zero3"]),
                    recompute=rng.choice(["none", "selective", "full"]), micro_batch=rng.choice([1, 2]))
        out.append((shape, k))
    return out


def test_the_activation_floor_with_states_is_the_max_over_every_ranks_floor():
    """`memory.model.activation_floor_with` pairs a rank's moments only where the rank's bound can
    raise the max: its figure is the max over every rank of `activation_floors` plus the given
    states (random ones here, large and small, so that different ranks are the worst)."""
    from parc.memory.model import activation_floor_with, activation_floors

    rng = random.Random(18)
    layouts = _deep_layouts(40, 18)
    assert layouts
    for shape, k in layouts:
        for scale in (0, 10**6, 10**10):
            states = tuple(rng.randrange(0, scale + 1) for _ in range(k.pp))
            plain = max(a + b for a, b in zip(activation_floors(shape, k), states, strict=True))
            assert activation_floor_with(shape, k, states) == plain, (k.schedule, k.pp, k.virtual_stages, states)


def test_activation_peaks_from_the_kept_moments_are_the_undominated_states_largest():
    """`memory.model._activation_peaks` weighs the walk's moments kept per chunk classes
    (`schedules.walked_peak`): per rank, the largest weighted sum over `schedules.peak_states`'
    undominated (held, pending) states, computed here as the plain loop."""
    from parc.memory import model
    from parc.memory.model import _activation_peaks, rank_activations

    layouts = _deep_layouts(40, 19)
    assert layouts
    for shape, k in layouts:
        acts = rank_activations(shape, k)
        for _ in range(3):  # a walk's third request answers from its kept moments
            peaks = _activation_peaks(acts, k.schedule, k.pp, k.virtual_stages, k.microbatches)
            model._PEAKS.clear()
        plain = tuple(max([0] + [sum(h * c.held + p * c.pending for h, p, c in zip(held, pending, acts[r].chunks,
                                                                                   strict=True))
                                 for held, pending, _ in schedules.peak_states(k.schedule, k.pp, k.virtual_stages,
                                                                               k.microbatches, r)])
                      for r in range(k.pp))
        assert peaks == plain, (k.schedule, k.pp, k.virtual_stages, k.microbatches)


def test_the_peak_bounded_per_rank_is_the_breakdowns_worst_rank():
    """`memory.model.peak` skips the ranks whose bound cannot reach the worst rank so far: on deep
    pipelines of every schedule its (bytes, rank) are those of the breakdown (`per_stage`, every
    rank's `stage_memory`), the first rank of the largest total."""
    from parc.memory.model import peak, per_stage

    layouts = _deep_layouts(30, 20)
    assert layouts
    for shape, k in layouts:
        stages = per_stage(shape, k)
        worst = max(stages, key=lambda s: (s.total, -s.stage))
        assert peak(shape, k) == (worst.total, worst.stage), (k.schedule, k.pp, k.virtual_stages)


def test_the_worst_rank_asks_for_the_totals_its_bounds_cannot_rule_out():
    """`memory.model.worst_rank` against hand-worked cases: the largest total and the first rank
    with it, asking only for ranks whose bound can still beat or tie before the worst so far
    (largest bound first; unknown bounds asked for first)."""
    from parc.memory.model import worst_rank

    cases = [
        # bounds, totals, (largest, first rank with it), ranks asked for
        ([10, 12, 9, 11], [10, 5, 9, 11], (11, 3), [1, 3]),  # 12 first (5), then 11 (11): 10 and 9 < 11
        ([5, None, 8], [5, 9, 8], (9, 1), [1]),  # the unknown bound first: 9 rules out both others
        ([4, 4], [4, 4], (4, 0), [0]),  # rank 1 could only tie after rank 0: not asked for
        ([None, None], [3, 3], (3, 0), [0, 1]),
        ([6, 9], [6, 6], (6, 0), [0, 1]),  # rank 1 asked first (bound 9), rank 0 ties before it
    ]
    for bounds, totals, expected, asked in cases:
        seen: list[int] = []
        assert worst_rank(bounds, lambda r, t=totals, s=seen: s.append(r) or t[r]) == expected
        assert sorted(seen) == asked, (bounds, seen)
    seen = []
    assert worst_rank([10, 10, 10], lambda r: seen.append(r) or [7, 7, 6][r]) == (7, 0)
    assert seen == [0, 1, 2]  # each bound 10 can beat 7: every rank is asked for


def test_rank_orders_kept_per_axes_above_one_are_every_permutation():
    """`Space.orders` (kept per the axes above 1) against the permutations written out here: for
    every degree assignment of five axes (1 or 2 each), in a fresh cache and a filled one, the
    written order first, each order once, every axis of degree 1 in its written place."""
    from itertools import permutations, product

    from parc.pipeline import compile_path
    from parc.search import engine
    from parc.search import space as space_module
    from parc.search.space import build_space

    space = build_space(compile_path("tests/golden/search/specs/five-axes.par"))
    axes = space.axes
    assert len(axes) == 5 and space.order_open
    engine.clear_caches()
    assert not space_module._ORDERS
    checked = 0
    for _ in range(2):  # the first pass fills the cache, the second reads it
        for values in product((1, 2), repeat=len(axes)):
            degrees = dict(zip(axes, values, strict=True))
            got = space.orders(degrees)
            fixed = {i: a for i, a in enumerate(axes) if degrees[a] == 1}
            expected = {o for o in permutations(axes) if all(o[i] == a for i, a in fixed.items())}
            assert got[0] == axes and len(got) == len(set(got)) and set(got) == expected, degrees
            got.append(("mutated",))  # a caller's list is its own
            checked += 1
    assert checked == 64 and space_module._ORDERS
    engine.clear_caches()
    assert not space_module._ORDERS


def _engine_of(text: str):
    """A fresh engine of a space written out, with the runtime's software and memory model."""
    from parc.pipeline import compile_text
    from parc.search import engine as search_engine
    from parc.search.space import build_space
    from parc.targets import memory_runtime, software_of

    compilation = compile_text(text, path="alone.par")
    assert compilation.plan is not None, compilation.diagnostics
    return search_engine.Engine(build_space(compilation), keep=14, software=software_of(compilation.plan),
                                runtime=memory_runtime(compilation.plan.target))


@pytest.mark.parametrize("name", ["mixtral-ep-over-dp-cp", "deepseek-v3-like", "gpt3-175b"])
def test_groups_alone_queued_at_their_layouts_bound_come_out_as_at_their_own(name):
    """The scan with each group that is a set of one pipeline, and each set of pipelines, queued
    at `alone_bound` (the MoE layers at their floor), then at `pipes_bound`, then (a group) at its
    own `quick_bound`, each computed when the one before comes out (`Engine.lazy_alone`), against
    the scan with each queued at its own bound at once (the reference): the same top to the last
    bit, the same counts of every kind, the same smallest peak. And the order argument's premise,
    on every group of the space: `alone_bound` <= `pipes_bound` <= `quick_bound`, so no group
    can come out later than at its own bound. Both fail if a bound exceeds the next one."""
    from parc.search import engine as search_engine

    outcomes, computed = [], []
    for lazy in (False, True):
        search_engine.clear_caches()
        engine = _engine_of(BOUND_SPACES[name])
        engine.lazy_alone = lazy
        calls = []
        own = engine.quick_bound
        engine.quick_bound = lambda *group, own=own, calls=calls: calls.append(group) or own(*group)
        outcome = engine.run()
        assert outcome.found
        outcomes.append(([(f.rank_key, f.assignment, f.step, f.peak_bytes, f.key) for f in outcome.found],
                         outcome.stats.as_json(), outcome.stats.group_bounds, outcome.stats.pipe_set_bounds,
                         outcome.smallest_peak, outcome.usable_bytes))
        computed.append(len(calls))
    assert outcomes[1] == outcomes[0]
    assert computed[1] < computed[0]  # the point: groups that never come out are never bounded alone
    engine, groups = _groups_of(BOUND_SPACES[name])
    assert engine.pipe_sets and groups
    checked = 0
    for group in groups:
        assert engine.alone_bound(*group) <= engine.pipes_bound(*group) <= engine.quick_bound(*group), group
        checked += 1
    assert checked == len(groups)


@pytest.mark.parametrize("name", ["mixtral-ep-over-dp-cp", "deepseek-v3-like"])
def test_the_moe_floor_is_at_most_every_eps_own_moe_layer(name):
    """`Engine._moe_floor_pieces` (the MoE layer's GEMMs that no ep reads, its attention from
    the layer at ep 1, nothing else) against `_compute_pieces` of every ep the space's groups
    take at the same (tp, sequence parallelism, cp, micro-batch), under every recomputation
    mode, entry by entry, float for float: never above; the entries that do not read ep equal.
    Then `timing.moe_gemm_floor` against `layer_work`'s own GEMM sum under every kernel choice
    and routing (eager and fused launches, balanced and random routing, fp8 and bf16): never
    above, and not 0 (it fails as a floor if it takes a routed expert's GEMM, and is useless at
    0)."""
    from parc import timing
    from parc.search.engine import RECOMPUTE

    engine, groups = _groups_of(BOUND_SPACES[name])
    eps: dict[tuple, set[int]] = {}
    for item, _, _, micro, _, sp, _ in groups:
        tp = item.degrees.get("tp", 1)
        eps.setdefault((tp, sp and tp > 1, item.degrees.get("cp", 1), micro), set()).add(item.ep)
    assert any(len(values) > 1 for values in eps.values())
    checked, best_share = 0, 0.0
    for (tp, sp, cp, micro), values in sorted(eps.items()):
        floor = engine._moe_floor_pieces(tp, sp, cp, micro)
        for ep in sorted(values):
            own = engine._compute_pieces(tp, sp, cp, micro, ep)
            assert floor.keys() == own.keys()
            for entry, pieces in own.items():
                if entry[0] is True:
                    assert all(f <= p for f, p in zip(floor[entry], pieces, strict=True)), (tp, sp, cp, micro, ep, entry)
                    assert sum(floor[entry]) > 0, (tp, sp, cp, micro, ep, entry)
                    best_share = max(best_share, sum(floor[entry]) / sum(pieces))
                else:
                    assert floor[entry] == pieces
                checked += 1
    assert best_share > 0.3  # where the routed experts are a small part, the floor is most of the layer
    assert checked > 100 and {mode for mode in RECOMPUTE} <= {e[1] for e in floor if e[0] is True}
    shape, hw, c = engine.shape, engine.hw, engine.constants
    layers = 0
    for precision in ("bf16", "fp8"):  # what `_work_of` passes: the precision the GEMMs run in
        for kernels in ("eager", "fused"):
            for balanced in (False, True):
                for tp, cp, micro, ep in ((1, 1, 1, 1), (2, 1, 1, 8), (4, 2, 2, 4), (8, 1, 1, 64), (1, 4, 3, 2)):
                    if ep > shape.experts:
                        continue
                    seq = 4096
                    work = timing.layer_work(shape, timing.LayerCase(moe=True, tp=tp, sp=tp > 1, cp=cp,
                                                                     flavour="ring", seq=seq, micro=micro, ep=ep,
                                                                     precision=precision, attention="flash",
                                                                     kernels=kernels, balanced=balanced), hw, c)
                    gemm = timing.moe_gemm_floor(shape, tp, cp, seq, micro, precision, hw, c)
                    assert 0 < gemm <= work.gemm, (precision, kernels, balanced, tp, cp, micro, ep)
                    layers += 1
    assert layers


def test_replaced_copies_slot_by_slot_what_dataclasses_replace_builds():
    """`frozen.replaced` of a slotted dataclass with a bare `__init__` (`timing.Work`, copied slot
    by slot) against `dataclasses.replace`: every field, a random subset of every init field
    changed, the copy's hash reset from a hashed original; a class with `__post_init__` or without
    slots still goes through its `__init__` (its check runs); an unknown or init=False field is
    refused."""
    import dataclasses

    from parc import timing
    from parc.frozen import replaced

    @dataclasses.dataclass(frozen=True, slots=True)
    class Checked:
        x: float = 0.0

        def __post_init__(self):
            if self.x < 0:
                raise ValueError("negative")

    @dataclasses.dataclass(frozen=True)
    class Plain:
        x: float = 0.0
        y: tuple = ()

    rng = random.Random(5)
    init = [f for f in dataclasses.fields(timing.Work) if f.init]
    assert len(init) > 20
    checked = 0
    for _ in range(300):
        base = timing.Work(**{f.name: (rng.random() if isinstance(f.default, float) else f.default) for f in init})
        hash(base)  # the original's kept hash must not travel to the copy
        changes = {f.name: (rng.random() * 1e3 if isinstance(f.default, float)
                            else rng.randrange(50) if isinstance(f.default, int) and not isinstance(f.default, bool)
                            else f.default) for f in rng.sample(init, rng.randrange(len(init) + 1))}
        got, want = replaced(base, **dict(changes)), dataclasses.replace(base, **changes)
        assert type(got) is timing.Work
        assert all(getattr(got, f.name) == getattr(want, f.name) for f in dataclasses.fields(timing.Work))
        assert got == want and hash(got) == hash(want) == hash(tuple(getattr(want, f.name) for f in init))
        checked += 1
    assert checked
    assert replaced(Plain(1.0, (2,)), x=3.0) == Plain(3.0, (2,))
    assert replaced(Checked(1.0), x=2.0) == Checked(2.0)
    with pytest.raises(ValueError):
        replaced(Checked(1.0), x=-1.0)
    with pytest.raises(TypeError):
        replaced(timing.Work(), no_such_field=1.0)
    with pytest.raises(TypeError):
        replaced(timing.Work(), _hash=1)


@pytest.mark.parametrize("name", FLOOR_SPACES)
def test_the_held_floor_is_at_most_every_shardings_peak_and_the_walked_floor(name):
    """`Engine._held_floor` rejects a group before its bounds (`_held_out`): each chunk at its
    layers times the least layer's saved activations, the walk's largest sum taken once per
    pipeline and micro-batch count with the layer counts as weights (`_held_counts`). Over random
    groups of four spaces (dense, MoE with ep over dp x cp, deepseek's dense first layers, cp's
    all-to-all) it must be at most the memory model's own peak (`memory.model.peak`) under every
    sharding of the group, and at most the walked step of `_quick_floor` written out here from
    the memory model's ranks (`rank_activations`: every rank's chunks, their saved and pending
    bytes, `schedules.weighted_peak`'s plain walk) plus the rank's least states; and it must
    reject groups the first floor (a micro-batch on each chunk) lets through, or it is useless."""
    from parc.memory.model import peak, rank_activations
    from parc.memory.schedules import weighted_peak

    engine, groups = _groups_of(BOUND_SPACES[name])
    rng = random.Random(f"held {name}")
    deep = [g for g in groups if g[0].degrees.get("pp", 1) > 1]
    sample = rng.sample(deep, min(len(deep), 50)) + rng.sample(groups, min(len(groups), 10))
    checked = sharper = 0
    for group in sample:
        item = group[0]
        k = engine._knobs(*group)
        held = engine._held_floor(group)
        assert held > 0
        states = engine._states_floor(item, k)
        ranks = rank_activations(engine.shape, k)
        walked = max(weighted_peak(k.schedule, k.pp, k.virtual_stages, k.microbatches, rank,
                                   tuple(c.saved for c in ranks[rank].chunks),
                                   tuple(c.pending for c in ranks[rank].chunks))[0] + states[rank]
                     for rank in {0, k.pp - 1})
        assert held <= walked, (name, item.degrees, group[1:], held, walked)
        for sharding, shard in engine._group_shardings(item, k):
            assert held <= peak(engine.shape, engine._with_sharding(k, sharding, shard))[0], (group[1:], sharding)
            checked += 1
        sharper += held > engine._first_floor(k, item)
    # without pipelining a rank holds one micro-batch: the first floor (with the working set) is sharper
    pipelined = sum(1 for g in sample if g[0].degrees.get("pp", 1) > 1)
    assert checked >= len(sample) and sharper >= pipelined // 4, (checked, sharper, pipelined)


@pytest.mark.parametrize("name", FLOOR_SPACES)
def test_the_held_floors_cheap_decision_is_the_floors_own(name):
    """`Engine._held_exceeds` decides `_held_floor(group) > usable` without the ranks' least
    model states where the activations alone exceed the memory, or fit with `_states_ceiling`,
    or exceed it with `_states_low`. Over random groups of four spaces, each asked of a fresh
    engine (its states not kept) at memories right at the floor (one byte under it, at it),
    at its activations' part alone and at steps under and over the floor (of it and of the
    largest end rank's least states), the decision must be the comparison with the floor computed by a
    separate engine; and each of the four ways (three shortcuts and the floor itself) must
    decide some of them."""
    engine, groups = _groups_of(BOUND_SPACES[name])
    rng = random.Random(f"held exceeds {name}")
    deep = [g for g in groups if g[0].degrees.get("pp", 1) > 1] or groups
    sample = rng.sample(deep, min(len(deep), 60)) + rng.sample(groups, min(len(groups), 20))
    rng.shuffle(sample)
    fresh, fresh_groups = _groups_of(BOUND_SPACES[name])
    twins = {(g[0].index,) + g[1:]: g for g in fresh_groups}
    exact_calls: list = []
    real = fresh._held_floor
    fresh._held_floor = lambda group, real=real: exact_calls.append(group) or real(group)
    ways = {"ceiling": 0, "low": 0}  # which of the states' shortcuts were asked
    for way, method in (("ceiling", "_states_ceiling"), ("low", "_states_low")):
        plain = getattr(fresh, method)

        def counted(item, k, layers, plain=plain, way=way):
            ways[way] += 1
            return plain(item, k, layers)
        setattr(fresh, method, counted)
    asked = 0
    for group in sample:
        floor = engine._held_floor(group)
        assert floor > 0
        twin = twins[(group[0].index,) + group[1:]]
        item, schedule, v, micro, m, sp, recompute = group
        d = item.degrees
        least = engine._least_layer_saved(d.get("tp", 1), sp, d.get("cp", 1), item.ep, recompute, micro)
        acts = max(least * count for _, count in engine._held_counts(d.get("pp", 1), v, schedule, m))
        states = max(engine._states_floor(item, engine._knobs(*group)))
        steps = [floor - floor // 2 ** j for j in range(1, 8)] + [floor + states // 2 ** j for j in range(0, 14)] + \
                [floor - states // 2 ** j for j in range(0, 6)]
        for usable in [floor - 1, floor, acts - 1, acts] + steps:
            fresh.usable = usable
            for key in [key for key in twin[0].opt_cache if isinstance(key, tuple) and key[0] == "states"]:
                del twin[0].opt_cache[key]  # as when first asked: the floor's states not kept
            assert fresh._held_exceeds(twin) == (floor > usable), (name, group[1:], usable, floor)
            asked += 1
    assert asked == 31 * len(sample) > 0 and exact_calls and asked - len(exact_calls) >= len(sample), (
        asked, len(exact_calls), ways)
    assert all(ways.values()), ways


@pytest.mark.parametrize("name", FLOOR_SPACES + ["nothing fits"])
def test_groups_out_by_their_held_floor_change_no_answer(name):
    """The scan that tries each group's held floor before its bounds (`Engine.held_floors`)
    against the scan without it: the same top to the last bit, the same evaluations of the time
    model and, where nothing fits, the same smallest peak (E0502 reports it; the held floor's
    groups are noted at their own `_quick_floor`, as a family's are; where something fits they
    are never noted, so the held scan's smallest peak is of fewer groups: no smaller); only the
    split between "bounded out"
    and "does not fit" moves (a group counted out where the plain scan left it queued), and
    fewer groups are bounded. Every group the held floor counts out is out by it."""
    from parc.pipeline import compile_text
    from parc.search.engine import Engine
    from parc.search.space import build_space
    from parc.targets import memory_runtime, software_of

    runs = []
    for held in (False, True):
        compilation = compile_text(BOUND_SPACES["gpt3-175b" if name == "nothing fits" else name], path="held.par")
        engine = Engine(build_space(compilation), keep=14, software=software_of(compilation.plan),
                        runtime=memory_runtime(compilation.plan.target))
        if name == "nothing fits":  # a twentieth of the memory: valid layouts, none fits, some held out
            engine.usable //= 20
        engine.held_floors = held
        counted: list = []
        bounds: list = []
        real, bound = engine._held_out, engine.bound
        engine._held_out = lambda group, unnoted, real=real, counted=counted: (
            real(group, unnoted) and (counted.append(group) or True))
        engine.bound = lambda *group, bound=bound, bounds=bounds: bounds.append(group) or bound(*group)
        runs.append((engine, engine.run(), counted, len(bounds)))
    (_, plain, _, plain_bounds), (engine, fast, counted, fast_bounds) = runs
    assert [(f.rank_key, f.step, f.peak_bytes) for f in fast.found] == [
        (f.rank_key, f.step, f.peak_bytes) for f in plain.found]
    a, b = fast.stats, plain.stats
    assert (a.timed, a.time_evaluations, a.merged, a.valid, a.raw, a.pruned) == (
        b.timed, b.time_evaluations, b.merged, b.valid, b.raw, b.pruned)
    assert a.bounded + a.out_of_memory == b.bounded + b.out_of_memory and a.out_of_memory >= b.out_of_memory
    if fast.found:
        assert fast.smallest_peak is None or fast.smallest_peak >= plain.smallest_peak
    else:
        assert fast.smallest_peak == plain.smallest_peak
    assert bool(fast.found) == (name != "nothing fits")
    if name != "deepseek-v3-like":  # (all pp 1: a rank holds one micro-batch, the first floor is sharper)
        assert counted and fast_bounds < plain_bounds, (len(counted), fast_bounds, plain_bounds)
    for group in counted:
        assert engine._quick_floor(engine._knobs(*group), group[0]) > engine.usable
