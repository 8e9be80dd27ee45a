"""A probe of stop 62's new reading rules, written by a helper who rewrote repository rows the ways a
transcriber might, both where a rule should fire and where it must not (398 probes over twelve
rules: the vocabulary from a model's name, gpt-oss's published architecture, NeMo 25.02/25.04's bf16
reduction, sharding on NeMo rows, switches in a network note, a superchip's memory bandwidth,
placeholders, torchtitan's TPS, recomputation before May 2022, Mamba hybrids, fp8 recipes of other
releases or figures, denials in asides). `tests/test_reader_rules_probe.py` runs them.
"""
# ruff: noqa
import copy, glob, re
from pathlib import Path

import yaml

from .reader_paraphrase import published as P

from .conftest import load_yaml

DATA = Path(__file__).resolve().parent.parent / "benchmarks" / "data"

ROWS, FILES = {}, {}
for f in sorted(glob.glob(str(DATA / '*.yaml'))):
    d = load_yaml(open(f))
    if isinstance(d, list):
        FILES[f] = d
        for e in d:
            ROWS[e['id']] = (f, e)

def row(i):
    f, e = ROWS[i]
    return copy.deepcopy(e), FILES[f]

def facts(r):
    if isinstance(r, P.Skipped):
        return {'skipped': True, 'reason': r.reason[:140]}
    s = r.spec; sw = r.software
    g = lambda pat, d=None: (m.group(1) if (m := re.search(pat, s)) else d)
    return {
        'skipped': False, 'vocab': g(r'vocab (\d+)'), 'window': g(r'window (\d+)'), 'fae': g(r'full-attention-every (\d+)'),
        'expert_bias': sw.expert_bias, 'expert_clamp': sw.expert_clamp, 'rope_unfused': sw.rope_unfused,
        'grad_bytes': sw.grad_bytes, 'sharding': g(r'dp \{ sharding (\w+) \}'), 'network': g(r'network ([^,}]+?)\s*[,}]'),
        'hbm': g(r'hbm-bandwidth ([\d.]+)'), 'tflops': round(r.reported_tflops, 2), 'from': r.reported_from,
        'whole_layers': r.whole_layers_only, 'fp8_scaling': sw.fp8_scaling, 'attention_fp8': sw.attention_fp8,
        'ep_dispatcher': sw.ep_dispatcher, 'tp_overlap': sw.tp_overlap, 'ep_overlap': sw.ep_overlap,
        'vpp': g(r'virtual-stages (\d+)', '1'), 'schedule': g(r'schedule ([\w-]+)'), 'layout': s.split('\n')[2],
        'recompute': g(r'recompute ([^\n]+)'), 'recompute_stated': r.recompute_stated, 'sp': g(r'sequence-parallel (\w+)'),
        'kv': g(r'kv-heads (\d+)'), 'micro': g(r'micro-batch (\d+)'), 'batch': g(r'global-batch (\d+)'),
        'clamp_note': next((a for a in r.assumptions if 'clamped at' in a), None),
        'yarn_note': next((re.search(r'YaRN concentration ([\d.]+)', a).group(1) for a in r.assumptions if 'YaRN concentration' in a), None),
        'assumptions': r.assumptions, 'spec': s,
    }

def read(e, others):
    return facts(P.row_spec(e, others))

RESULTS = []

def probe(rule, rid, desc, mutate, expect, note=''):
    """expect: dict key->value, or callable(facts)->bool; values compared as strings where not bool/None."""
    e, others = row(rid)
    try:
        mutate(e)
        f = read(e, others)
    except Exception as ex:
        f = {'skipped': True, 'reason': f'EXC {type(ex).__name__}: {ex}'}
    bad = {}
    if callable(expect):
        ok = expect(f)
        if not ok: bad = {'got': {k: f.get(k) for k in ('skipped','reason','hbm','clamp_note','yarn_note') if f.get(k) is not None}}
    else:
        for k, v in expect.items():
            got = f.get(k)
            if isinstance(v, (bool, type(None))) or isinstance(got, bool):
                same = got == v
            elif isinstance(v, (set, tuple)):
                same = str(got) in {str(x) for x in v}
            else:
                same = str(got) == str(v)
            if not same:
                bad[k] = got
        ok = not bad
        if 'skipped' in bad and not f.get('skipped'):
            bad.update({k: f.get(k) for k in ('vocab', 'window', 'layout') if f.get(k)})
        if f.get('skipped') and 'skipped' not in expect:
            ok, bad = False, {'skipped': f.get('reason')}
    RESULTS.append((rule, rid, desc, ok, expect if not callable(expect) else '(fn)', bad, note))
    return f

def report():
    fails = [r for r in RESULTS if not r[3]]
    for rule, rid, desc, ok, exp, bad, note in fails:
        print(f'[{rule}] {rid}: {desc}\n     expected {exp}\n     read     {bad}' + (f'\n     note: {note}' if note else ''))
    print(f'\n{len(RESULTS)} probes, {len(RESULTS) - len(fails)} passed, {len(fails)} read wrongly')



def setm(**kw):
    def f(e):
        for k, v in kw.items():
            if v is DEL: e['model'].pop(k, None)
            else: e['model'][k] = v
    return f
DEL = object()
def seq(*fs):
    def f(e):
        for g in fs: g(e)
    return f
def setl(**kw):
    def f(e):
        for k, v in kw.items(): e['layout'][k] = v
    return f
def seth(**kw):
    def f(e):
        for k, v in kw.items(): e['hardware'][k] = v
    return f
def notes(*ns, replace=True):
    def f(e):
        e['notes'] = list(ns) if replace else (list(e.get('notes') or []) if isinstance(e.get('notes'), list) else [e['notes']] if e.get('notes') else []) + list(ns)
    return f
def title(t):
    def f(e): e['source']['title'] = t
    return f

# ---------------- Rule 1: vocab from the model's name ----------------
R = 'R1 vocab'
NEUTRAL = 'dense decoder: GQA, SwiGLU, RMSNorm, RoPE'
base = 'dgxc2504_h100_llama31_70b_bf16_64'
should = [("Llama 3.1 70B", 128256), ("Llama-3-70B", 128256), ("Meta-Llama-3.1-70B", 128256), ("Llama 2 70B", 32000),
          ("LLaMA-65B", 32000), ("Mixtral 8x22B", 32768), ("Mixtral-8x7B", 32000), ("Qwen2-72B", 151936),
          ("Qwen3-32B", 151936), ("DeepSeek-V3", 129280), ("DeepSeek-V2", 102400), ("Nemotron-4 340B", 256000),
          ("GPT-3 175B", 50257), ("OPT-175B", 50272), ("MPT-30B", 50432), ("BLOOM-176B", 250880), ("Falcon-40B", 65024),
          ("gpt-oss-120b", 201088), ("Llama 3.2 3B", 128256)]
for name, v in should:
    probe(R, base, f"model.name={name!r}, vocab unstated, neutral arch", setm(name=name, vocab=None, arch=NEUTRAL), {'vocab': v})
shouldnot = ["Llama-style 7B", "a GPT-like 1.3B", "Qwen1.5-72B", "DeepSeek-LLM 67B", "OPT-like 1.3B", "Bloomberg GPT 50B",
             "BloombergGPT", "Mistral-style 7B", "Llama-like 70B", "LLaMA-architecture 13B (InternLM)", "custom 7B (not Llama)",
             "TinyLlama-1.1B", "Qwen-72B", "Llama 4 Scout", "Mistral-NeMo 12B", "Kimi K2", "GPT-3-like 1.3B", "OPT-style 6.7B"]
for name in shouldnot:
    probe(R, base, f"model.name={name!r}, vocab unstated, neutral arch", setm(name=name, vocab=None, arch=NEUTRAL),
          {'skipped': True}, note='no tokenizer known: the row should be left out (vocab not published), not read with another tokenizer')
# arch naming another model
for name, arch in [("InternLM-7B", "Llama-style decoder: RMSNorm, SwiGLU, RoPE"),
                   ("Kimi K2", "DeepSeek-V3 architecture (MLA, 384 experts)"),
                   ("Moonlight-16B-A3B", "DeepSeek-V3-style MoE"),
                   ("Baichuan2-13B", "LLaMA-like, ALiBi"),
                   ("Yi-34B", "same architecture as Llama 2 (GQA)"),
                   ("Custom 13B", "GPT-3 style dense decoder, learned positions")]:
    probe(R, base, f"model.name={name!r}, arch={arch!r}, vocab unstated", setm(name=name, vocab=None, arch=arch),
          {'skipped': True}, note='another model named in arch is not this model\'s tokenizer')
# stated vocab kept
for v in (100000, "32K (32,000)", "152064"):
    probe(R, base, f"model.name='Qwen2-72B', vocab={v!r}", setm(name='Qwen2-72B', vocab=v), {'vocab': {100000: 100000, "32K (32,000)": 32000, "152064": 152064}[v]})
# placeholders in vocab
for v in ("null (not verified)", "? (not stated)", "not stated", "n/a"):
    probe('R7 placeholder', base, f"model.vocab={v!r} (name Llama 3.1 70B)", setm(vocab=v), {'vocab': 128256},
          note='a placeholder vocab should read as unstated, then filled from the name')

# ---------------- Rule 2: gpt-oss facts ----------------
R = 'R2 gpt-oss'
go = 'bridge2602_b200_gpt_oss_120b_bf16'
strip = setm(window=DEL, full_attention_every=DEL, expert_bias=DEL, activation_clamp=DEL, yarn_factor=DEL,
             arch='MoE, SwiGLU, RoPE, GQA')
FILLED = {'window': 128, 'fae': 2, 'expert_bias': True, 'expert_clamp': True, 'rope_unfused': True}
probe(R, go, "gpt-oss facts removed (window, fae, bias, clamp, yarn)", strip, FILLED)
probe(R, go, "name 'GPT-OSS 120B', facts removed", seq(strip, setm(name='GPT-OSS 120B')), FILLED)
probe(R, go, "name 'OpenAI gpt oss 20b', facts removed", seq(strip, setm(name='OpenAI gpt oss 20b')), FILLED)
probe(R, go, "window: 256 stated", seq(strip, setm(window=256)), {'window': 256, 'fae': 2})
probe(R, go, "full_attention_every: 4 stated", seq(strip, setm(full_attention_every=4)), {'window': 128, 'fae': 4})
probe(R, go, "extra 'sliding_window: 256'", seq(strip, setm(extra='sliding_window: 256')), {'window': 256})
probe(R, go, "arch '... sliding-window attention (512) on alternate layers'", seq(strip, setm(arch='MoE, SwiGLU, RoPE, GQA; sliding-window attention (512) on alternate layers')), {'window': 512, 'fae': 2})
probe(R, go, "expert_bias: false stated", seq(strip, setm(expert_bias=False)), {'expert_bias': False, 'expert_clamp': True})
probe(R, go, "extra 'add_bias_linear: false'", seq(strip, setm(extra='add_bias_linear: false')), {'expert_bias': False})
probe(R, go, "extra {add_bias_linear: False} (mapping)", seq(strip, setm(extra={'add_bias_linear': False})), {'expert_bias': False})
probe(R, go, "activation_clamp: 10 stated", seq(strip, setm(activation_clamp=10.0)), lambda f: not f['skipped'] and f['clamp_note'] and 'at 10' in f['clamp_note'])
probe(R, go, "extra 'swiglu_limit: 10'", seq(strip, setm(extra='swiglu_limit: 10')), lambda f: not f['skipped'] and f['clamp_note'] and 'at 10' in f['clamp_note'])
probe(R, go, "yarn_factor: 16 stated", seq(strip, setm(yarn_factor=16)), {'yarn_note': '1.277'})
probe(R, go, "extra {rope_scaling: {rope_type: yarn, factor: 16}}", seq(strip, setm(extra={'rope_scaling': {'rope_type': 'yarn', 'factor': 16}})), {'yarn_note': '1.277'})
probe(R, go, "arch 'YaRN (factor 8)'", seq(strip, setm(arch='MoE, SwiGLU, RoPE, GQA; YaRN (factor 8)')), {'yarn_note': '1.208'})
probe(R, go, "window 'null (not verified)'", seq(strip, setm(window='null (not verified)')), {'window': 128})
probe(R, go, "arch '... full attention on every layer (no sliding window)'", seq(strip, setm(arch='MoE, SwiGLU, RoPE, GQA; full attention in every layer (no sliding window)')), {'window': None},
      note='the row states it has no window')
probe(R, go, "window: 'none' (no sliding window)", seq(strip, setm(window='none')), {'window': None})
probe(R, go, "arch '... experts without biases'", seq(strip, setm(arch='MoE, SwiGLU, RoPE, GQA; experts without biases')), {'expert_bias': False})
probe(R, go, "extra 'swiglu_limit: none (no clamp)'", seq(strip, setm(extra='swiglu_limit: none (no clamp)')), {'expert_clamp': False})
probe(R, go, "arch 'RoPE (no YaRN scaling)'", seq(strip, setm(arch='MoE, SwiGLU, RoPE (no YaRN scaling), GQA')), {'rope_unfused': False})
# should not fire: a non-gpt-oss row that mentions gpt-oss
q = 'bridge2509_h100_qwen3_235b_a22b_fp8cs'
probe(R, q, "Qwen3 row, arch mentions 'unlike gpt-oss, no sliding window'", setm(arch='MoE, SwiGLU, RoPE, GQA, RMSNorm; unlike gpt-oss, no sliding window'), {'window': None, 'expert_bias': False})
probe(R, go, "name 'Custom MoE 120B', arch 'MoE, SwiGLU, RoPE, GQA (compared with gpt-oss-120b)'", seq(strip, setm(name='Custom MoE 120B', vocab=201088, arch='MoE, SwiGLU, RoPE, GQA (compared with gpt-oss-120b)')),
      {'window': None, 'expert_bias': False, 'expert_clamp': False, 'rope_unfused': False})
probe(R, go, "name 'MoE 120B', arch 'MoE like gpt-oss but without its sliding window, biases or YaRN'", seq(strip, setm(name='MoE 120B', vocab=201088, arch='MoE like gpt-oss but without its sliding window, biases or YaRN')),
      {'window': None, 'expert_bias': False, 'rope_unfused': False})

# ---------------- Rule 3: NeMo 25.02/25.04 bf16 reduction ----------------
R = 'R3 bf16-reduce'
d = 'dgxc2504_h100_llama31_70b_bf16_64'   # 25.02 container (notes), DGX Cloud Benchmarking
def container(c):
    def f(e):
        e['notes'] = [n.replace('nvcr.io/nvidia/nemo:25.02.01', f'nvcr.io/nvidia/nemo:{c}') for n in e['notes']]
    return f
probe(R, d, "as published (25.02.01 container, DGXC benchmarking)", lambda e: None, {'grad_bytes': 2})
# 24.09: the same run as DGX Cloud 24.11.1's Llama 3.1 70B on 64 H100 (NeMo 24.09, the same layout and
# batches), whose recipe the repository holds: bf16 reduction (`published.with_published_recipe`, stop 63)
for c, gb in (("25.04", 2), ("25.04.01", 2), ("25.02", 2), ("25.07", 4), ("24.12", 4), ("25.09", 4), ("24.09", 2)):
    probe(R, d, f"container nvcr.io/nvidia/nemo:{c}", container(c), {'grad_bytes': gb})
for n, gb in [("grad_reduce_in_fp32: True", 4), ("grad_reduce_in_fp32 = True", 4), ("gradients reduced in FP32", 4),
              ("FP32 gradient reduction (grad_reduce_in_fp32 left at its default)", 4), ("gradients all-reduced in fp32", 4),
              ("grad_sync_dtype: fp32", 4), ("gradient reduce dtype float32", 4), ("main grads and their reduction in fp32", 4),
              ("reduce-scatter of gradients in FP32", 4),
              ("the 25.04 rows reduce gradients in bf16", 2), ("grad_reduce_in_fp32: False", 2),
              ("later releases (25.07) went back to FP32 gradient reduction", 2),
              ("unlike 25.07, which reduces gradients in fp32, this container's recipes reduce in bf16", 2),
              ("fp32 master weights and optimizer states", 2),
              ("loss computed in fp32", 2)]:
    probe(R, d, f"note added: {n!r}", notes(n, replace=False), {'grad_bytes': gb})
probe(R, d, "recipe field {grad_reduce_in_fp32: true}", lambda e: e.__setitem__('recipe', {'grad_reduce_in_fp32': True}), {'grad_bytes': 4})
probe(R, d, "recipe field {grad_reduce_in_fp32: false}", lambda e: e.__setitem__('recipe', {'grad_reduce_in_fp32': False}), {'grad_bytes': 2})
# 25.07 row with a note about 25.02
n7 = 'nemo2507_gb200_llama3_8b_8gpu'
probe(R, n7, "25.07 row as published", lambda e: None, {'grad_bytes': 4})
probe(R, n7, "25.07 row, note 'NeMo 25.02 and 25.04 performance recipes reduced in bf16; 25.07 does not'", notes("NeMo 25.02 and 25.04 performance recipes reduced gradients in bf16; 25.07 does not", replace=False), {'grad_bytes': 4})
# a 25.04 row that is not from the performance scripts
ls = 'nemo2504_b200_llama3_8b_fp8_16k'
f0 = probe(R, ls, "25.04 long-sequence row as published", lambda e: None, lambda f: True)
# fp16 unaffected; a non-NeMo 25.02 mention
probe(R, 'megatron_readme2024_16B', "Megatron-LM README row + note 'compare NeMo 25.02 performance summary'", notes("compare the NeMo 25.02 performance summary figures", replace=False), {'grad_bytes': 4})

# ---------------- Rule 4: zero_or_fsdp denials ----------------
R = 'R4 sharding'
nm = 'nemo2502_h100_gpt3_175b_512gpu'
for z in ["none (FSDP 0)", "DDP (FSDP col 0)", "no FSDP", "FSDP column: 0", "FSDP: 0", "FSDP=0", "FSDP off", "FSDP: no",
          "FSDP not used", "without FSDP", "FSDP: False", "FSDP disabled", "none (table FSDP=0: DDP)", "DDP (no FSDP)",
          "FSDP 0 (DDP)", "Megatron FSDP: off", "FSDP col. 0", "FSDP: none", "FSDP ✗", "FSDP: n/a", "FSDP: -", "DDP; FSDP 0",
          "no (FSDP column 0)", "FSDP was not used", "not FSDP", "FSDP = No", "NA in table", "FSDP (0)", "DDP, FSDP not used"]:
    probe(R, nm, f"NeMo row zero_or_fsdp={z!r}", setl(zero_or_fsdp=z), {'sharding': 'zero1'})
for z in ["none (FSDP 0; no distributed optimizer)", "DDP, FSDP 0, distributed optimizer off", "FSDP 0, use_distributed_optimizer False",
          "DDP; FSDP 0; distributed optimizer not used", "no FSDP, no distributed optimizer", "FSDP not used; distributed optimizer not used",
          "none (no FSDP, optimizer states not sharded)", "plain DDP (FSDP 0, dist-opt off)", "DDP (FSDP col 0), without the distributed optimizer",
          "none (FSDP 0, distributed optimizer disabled)", "FSDP: no; distributed optimizer: no", "ZeRO-0 (FSDP 0)"]:
    probe(R, nm, f"NeMo row zero_or_fsdp={z!r}", setl(zero_or_fsdp=z), {'sharding': 'none'})
for z, exp in [("FSDP", "zero3"), ("FSDP 1", "zero3"), ("distributed optimizer (FSDP 0)", "zero1"), ("null (not verified)", "zero1")]:
    probe(R, nm, f"NeMo row zero_or_fsdp={z!r}", setl(zero_or_fsdp=z), {'sharding': exp})
mp = 'mpt_h100_7b_s2048_g8_mb8' if 'mpt_h100_7b_s2048_g8_mb8' in ROWS else 'mpt_h100_7b_s1024_g8_mb64'
for z in ["none", "none (DDP)", "no FSDP", "DDP (FSDP 0)", "none (FSDP 0)", "NO_SHARD"]:
    probe(R, mp, f"llm-foundry row zero_or_fsdp={z!r}", setl(zero_or_fsdp=z), {'sharding': 'none'})
tt = 'torchtitan_405b_512gpu_4d_cp1_32k'
for z in ["none", "none (FSDP 0)", "DDP (no FSDP)"]:
    probe(R, tt, f"torchtitan row zero_or_fsdp={z!r}", setl(zero_or_fsdp=z), {'sharding': 'none'})
mr = 'megatron_gpt3_175b_1024gpu'
for z in ["none (FSDP 0)", "DDP (FSDP col 0)"]:
    probe(R, mr, f"Megatron-LM (no NeMo) row zero_or_fsdp={z!r}", setl(zero_or_fsdp=z), {'sharding': 'none'})
probe('R3 bf16-reduce', n7, "25.07 row, note 'the 25.02 and 25.04 recipes reduced gradients in bf16'", notes("the 25.02 and 25.04 recipes reduced gradients in bf16", replace=False), {'grad_bytes': 4})
probe('R3 bf16-reduce', n7, "25.07 row, note 'NeMo 25.02 reduced gradients in bf16'", notes("NeMo 25.02 reduced gradients in bf16", replace=False), {'grad_bytes': 4})
probe('R3 bf16-reduce', 'megatron_readme2024_16B', "Megatron-LM README row + note 'compared with the NeMo 25.02 Performance Summary'", notes("compared with the NeMo 25.02 Performance Summary", replace=False), {'grad_bytes': 4})

# ---------------- Rule 5: switch ports are not NICs ----------------
R = 'R5 network'
h = 'dgxc2504_h100_llama31_70b_bf16_64'   # H100: catalogue node 8 x 400
for note, exp in [("8x400G NICs to NDR switches", "8 x 400 Gb/s"), ("4x200G NICs to HDR switches", "4 x 200 Gb/s"),
                  ("Tomahawk 4 switches (25.6Tbps, 64x400G); 4x 200G NICs per node", "4 x 200 Gb/s"),
                  ("4x 200G NICs per node; Tomahawk 4 switches (25.6Tbps, 64x400G)", "4 x 200 Gb/s"),
                  ("4 x 200 Gb/s RoCE NICs per node, ToR 400G split to 2x200G", "4 x 200 Gb/s"),
                  ("64x400G leaf switches; 4x200G NICs per node", "4 x 200 Gb/s"),
                  ("leaf switches with 64x400G ports, 4 x 200 Gb/s NICs per node", "4 x 200 Gb/s"),
                  ("4x200G HDR per node to a leaf/spine fabric", "4 x 200 Gb/s"),
                  ("HDR switches connecting 4x 200G HCAs per node", "4 x 200 Gb/s"),
                  ("spine 32x800G, 4x200G NICs per node", "4 x 200 Gb/s"),
                  ("25.6T (64x400G) switches, 4 x 200G NICs per node", "4 x 200 Gb/s"),
                  ("three-tier Clos, 4x 200 Gb/s NICs per node", "4 x 200 Gb/s"),
                  ("fat tree (leaf, spine) with 4x 200 Gb/s HDR NICs per node", "4 x 200 Gb/s"),
                  ("Tomahawk 4 switches (25.6Tbps, 64x400G)", "8 x 400 Gb/s"),
                  ("64x400GbE switches (Tomahawk 4)", "8 x 400 Gb/s"),
                  ("Broadcom Tomahawk 4 based 64x400G switches", "8 x 400 Gb/s"),
                  ("8 x ConnectX-7 400G to Quantum-2 leaf switches", "8 x 400 Gb/s"),
                  ("Quantum-2 QM9700 switches (64x400G ports); 4x ConnectX-7 200G per node", "4 x 200 Gb/s"),
                  ("rail-optimized ToR (64x400G), 4 x 200 Gb/s NICs", "4 x 200 Gb/s"),
                  ("each node: 4x 200G to the ToR", "4 x 200 Gb/s"),
                  ("4 x 200 Gb/s per node; leaf 51.2 Tb/s", "4 x 200 Gb/s"),
                  ("ToR switches 32x400G; 400 Gb/s per GPU", "8 x 400 Gb/s"),
                  ("network: 4 HDR (200 Gb/s) HCAs per node, two-level fat tree of 40-port HDR switches", "4 x 200 Gb/s"),
                  ("8x 400G NICs to a 64-port NDR leaf switch", "8 x 400 Gb/s"),
                  ("4 x 200G RoCE to Tomahawk 3 (12.8 Tbps) ToR", "4 x 200 Gb/s")]:
    probe(R, h, f"hardware.note={note!r}", seth(note=note), {'network': exp})

# ---------------- Rule 6: superchip memory bandwidth ----------------
R = 'R6 superchip'
gb = 'dgxc2505_gb200_nemotron4_340b_bf16_128'
def hbm8(f): return not f['skipped'] and f['hbm'] in (None, '8')
for note in ["GB200 superchip (72 Arm cores, 2x Blackwell GPUs, 16 TB/s memory bandwidth)",
             "GB200 superchip (2x Blackwell GPUs, 16 TB/s)",
             "GB200 superchip (two Blackwell GPUs, 16 TB/s memory bandwidth)",
             "GB200 superchip: 1 Grace CPU + 2 B200 GPUs, HBM3e 16 TB/s",
             "GB200 superchip, 8 TB/s HBM3e per GPU",
             "GB200 superchips, 4 GPUs per tray, 8 TB/s HBM per GPU",
             "2 GB200 superchips per tray (4 GPUs), HBM3e 8 TB/s per GPU",
             "GB200 superchip (2x Blackwell GPUs, 16 TB/s memory bandwidth total)",
             "NVL72 rack: 72 GPUs, 576 TB/s HBM aggregate",
             "GB200 superchip (2 GPUs); memory bandwidth 8 TB/s each",
             "GB200 NVL72: 36 superchips, 72 GPUs, HBM3e 8 TB/s per GPU",
             "GB200 superchip with 2 Blackwell GPUs at 8 TB/s HBM3e each",
             "each GB200 superchip: 2 GPUs, 384 GB HBM3e, 16 TB/s memory bandwidth",
             "compute tray: 2 GB200 superchips = 4 B200 GPUs, 32 TB/s HBM bandwidth per tray",
             "GB200 superchip (Grace + two Blackwell GPUs), HBM3e 16 TB/s"]:
    probe(R, gb, f"hardware.note={note!r}", seth(note=note), hbm8, note='each GPU has 8 TB/s (or the catalogue)')

# ---------------- Rule 7: placeholders ----------------
R = 'R7 placeholder'
pv = 'nemo2502_h100_gpt3_175b_512gpu'
e0, o0 = row(pv); e0['layout']['vpp'] = None; base_vpp = read(e0, o0)
for v in ["? (V not stated)", "null (not verified)", "?", "? (interleaved, V not stated)", "null (unverified)", "unknown (see notes)",
          "not stated", "— (not in table)", "? V not stated", "TBD", "null (to be verified)", "n/s"]:
    probe(R, pv, f"layout.vpp={v!r} (vs null)", setl(vpp=v), {'vpp': base_vpp['vpp'], 'schedule': base_vpp['schedule']})
for v in ["NA in table", "N/A in the table", "NA (in table)", "n/a per source", "NA in table (read as no interleaving)"]:
    probe(R, pv, f"layout.vpp={v!r} (no interleaving)", setl(vpp=v), {'vpp': '1'})
for fld in ("recompute", "micro_batch", "sequence_parallel", "zero_or_fsdp", "cp", "ep", "kv_heads", "head_dim", "pipeline_schedule"):
    tgt = 'model' if fld in ('kv_heads', 'head_dim') else 'layout'
    e0, o0 = row(pv); e0[tgt][fld] = None; b = read(e0, o0)
    for v in ["null (not verified)", "? (not stated)", "? (V not stated)"]:
        def m(e, fld=fld, v=v, tgt=tgt): e[tgt][fld] = v
        probe(R, pv, f"{tgt}.{fld}={v!r} (vs null)", m, {k: b[k] for k in ('recompute', 'recompute_stated', 'micro', 'sp', 'sharding', 'layout', 'kv', 'vpp', 'schedule')})
for fld in ("cp", "ep", "expert_tp"):
    probe(R, pv, f"layout.{fld}='NA in table'", setl(**{fld: "NA in table"}), {'layout': base_vpp['layout']})
probe(R, pv, "hardware.num_gpus='null (not verified)'", seth(num_gpus="null (not verified)"), {'layout': base_vpp['layout']})
probe(R, pv, "hardware.gpus_per_node='? (not stated)'", seth(gpus_per_node="? (not stated)"), {'network': '8 x 400 Gb/s'})
probe(R, pv, "hardware.peak='null (not verified)'", seth(peak_tflops_dense_at_precision="null (not verified)"), lambda f: not f['skipped'])

# ---------------- Rule 8: torchtitan TPS ----------------
R = 'R8 tps'
tt = 'torchtitan_405b_512gpu_4d_cp1_32k'
e0, o0 = row(tt); base_tt = read(e0, o0)['tflops']
def outk(k, v):
    def f(e): e['outcomes']['reported'] = {k: v}
    return f
for k, v in [("TPS", 76), ("tps", 76), ("tps_gpu", 76), ("TPS/GPU", 76), ("TPS per GPU", 76), ("tps (per GPU)", 76),
             ("throughput (TPS)", 76), ("TPS", "76 tokens/s/GPU"), ("tps_per_gpu", 76), ("avg TPS", 76), ("TPS (avg over steps 10-100)", 76),
             ("throughput", "76 TPS"), ("throughput", "76 tps/gpu")]:
    probe(R, tt, f"outcomes.reported={{{k!r}: {v!r}}}", outk(k, v), {'tflops': base_tt}, note='torchtitan logs tps per GPU')
probe(R, tt, "outcomes.reported={'TPS (job total)': 76*512}", outk('TPS (job total)', 76 * 512), {'tflops': base_tt})
probe(R, tt, "outcomes.reported={'tokens_per_s': 38912} (a job total)", outk('tokens_per_s', 76 * 512), {'tflops': base_tt})

# ---------------- Rule 9: Megatron before May 2022: whole layers ----------------
R = 'R9 whole-layers'
nr = 'narayanan21_t1_18B'
unst = setl(recompute=None)
T = ('Narayanan et al. 2021, Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM (SC21), arXiv:2104.04473')
for t, exp in [(T, True), ("Narayanan et al., Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM, https://arxiv.org/abs/2104.04473", True),
               ("Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM (arXiv preprint 2104.04473)", True),
               ("Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM, arXiv 2104.04473v5", True),
               ("Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM (SC '21)", True),
               ("Smith et al., Using DeepSpeed and Megatron to Train Megatron-Turing NLG 530B, arXiv:2201.11990", True),
               ("Megatron-LM, arXiv:2204.01234", True),
               ("Korthikanti et al. 2022, Reducing Activation Recomputation in Large Transformer Models, arXiv:2205.05198", False),
               ("Megatron-Core README (2023)", False),
               ("Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM (arXiv:2104.04473; SC 2021), re-run with Megatron-Core 0.9 in 2024", False),
               ("Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM (SC21), arxiv.org/abs/2104.04473v1", True)]:
    probe(R, nr, f"recompute unstated, title={t!r}", seq(unst, title(t)), {'whole_layers': exp})
probe(R, nr, "recompute unstated, title without arXiv/year, locator 'arXiv:2104.04473, Table 1'",
      seq(unst, title("Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM"), lambda e: e['source'].__setitem__('locator', 'arXiv:2104.04473, Table 1')), {'whole_layers': True})
probe(R, nr, "recompute unstated, title '... Megatron-LM (April 2022 README)'", seq(unst, title("Megatron-LM README table (April 2022)")), {'whole_layers': True}, note='month stated in words')
# non-megatron family: the rule should not fire
op = 'opt_175b_992gpu_fsdp_tp8'
f_op = probe(R, 'deepseek_v3_pretraining_2048xH800', "non-Megatron row titled arXiv:2104.04473", title("Some 2021 FSDP run, arXiv:2104.04473"), {'whole_layers': False})

# ---------------- Rule 10: state-space hybrids ----------------
R = 'R10 mamba'
dn = 'nemo2407_h100_llama2_13b_16gpu'
skip = {'skipped': True}
for name, arch in [("Nemotron-H 8B", "hybrid"), ("NemotronH-8B", "hybrid decoder"), ("Hybrid 8B", "hybrid: Mamba-2 + attention layers"),
                   ("Hybrid 8B", "hybrid of SSMs and attention"), ("Jamba-style 12B", "Jamba"), ("Zamba2-7B", "Zamba2 hybrid"),
                   ("Hybrid 8B", "SSM-attention hybrid"), ("Hybrid 8B", "state-space / attention hybrid"),
                   ("Mamba2-Hybrid 8B", "24 Mamba2 layers, 4 self-attention layers"), ("Samba 3.8B", "Samba: SSM + sliding-window attention"),
                   ("Falcon-H1 34B", "hybrid: parallel attention and SSM heads"), ("Hymba 1.5B", "hybrid-head (attention + SSM heads)"),
                   ("Nemotron-Nano-9B-v2", "hybrid Mamba-Transformer"), ("Hybrid 8B", "selective state space layers (S6) and attention"),
                   ("Hybrid 8B", "structured state-space (SSD) layers interleaved with attention")]:
    probe(R, dn, f"name={name!r}, arch={arch!r}", setm(name=name, arch=arch), skip)
for name, arch in [("Llama 2 13B", "transformer (no Mamba layers)"), ("Llama 2 13B", "pure transformer, unlike Nemotron-H"),
                   ("Transformer 8B", "Transformer baseline of the Mamba-2 study (Waleffe et al. 2024)"),
                   ("Transformer++ 2.7B", "Transformer++ (the Mamba paper's baseline recipe): SwiGLU, RoPE, RMSNorm"),
                   ("Llama 2 13B", "dense transformer; compared with Mamba-2 hybrids"),
                   ("Llama 2 13B", "transformer, not a state-space model"), ("Llama 2 13B", "attention only (vs. Jamba)"),
                   ("8B Transformer (Mamba study baseline)", "dense transformer: SwiGLU, RoPE, GQA"),
                   ("Llama 2 13B", "Llama 2: SwiGLU, RoPE; the paper also trains an SSM variant (a separate row)"),
                   ("Llama 2 13B", "Llama 2 (the transformer half of a Mamba comparison)"),
                   ("Llama 2 13B", "transformer; without SSM layers"),
                   ("Llama 2 13B", "SwiGLU, RoPE (faster than Mamba at this size)")]:
    probe(R, dn, f"name={name!r}, arch={arch!r}", setm(name=name, arch=arch), {'skipped': False})

# ---------------- Rule 11: fp8 recipe ----------------
R = 'R11 fp8-recipe'
fp = 'nemo2502_h100_gpt3_175b_512gpu'
for n, exp in [("MXFP8 figures in parens", "delayed"), ("FP8-MX results in parens", "delayed"), ("(MXFP8 in parens)", "delayed"),
               ("figures in parens: MXFP8", "delayed"), ("the figures in parentheses are MXFP8", "delayed"),
               ("the 25.04 release switched to FP8-CS", "delayed"), ("NeMo 25.04's recipe uses per-tensor current scaling", "delayed"),
               ("compared with MXFP8 on B200", "delayed"), ("later releases use per-tensor current scaling", "delayed"),
               ("the B200 rows use MXFP8", "delayed"), ("unlike the B200 rows (MXFP8)", "delayed"),
               ("recipe as in the 25.07 rows: MXFP8", "delayed"), ("Megatron-Bridge 25.09 moved this model to FP8-CS", "delayed"),
               ("current scaling from 25.04 on", "delayed"), ("MXFP8 on Blackwell only", "delayed"),
               ("per-tensor current scaling", "current"), ("fp8_recipe: tensorwise", "current"), ("--fp8-recipe blockwise", "blockwise"),
               ("this run uses MXFP8", "mxfp8"), ("FP8 with delayed scaling (amax history 1024)", "delayed"),
               ("current scaling (FP8-CS) here; MXFP8 in the B200 table", "current")]:
    probe(R, fp, f"precision 'FP8', note {n!r}", notes(n), {'fp8_scaling': exp})
for p, exp in [("FP8 (MXFP8 in parens)", "delayed"), ("FP8-CS (FP8-MX in parens)", "current"), ("FP8 (current scaling; MXFP8 in the companion row)", "current"),
               ("FP8 (delayed scaling, vs MXFP8)", "delayed"), ("FP8 (current scaling in parens)", "delayed"), ("FP8 (FP8-CS figures in parentheses)", "delayed"),
               ("FP8 (MX figures in parens)", "delayed"), ("FP8-MX", "mxfp8"), ("FP8 (MXFP8)", "mxfp8"), ("FP8 (parenthesised: MXFP8)", "delayed"),
               ("FP8; MXFP8 in brackets", "delayed"), ("FP8 (25.04 recipe: current scaling)", "delayed")]:
    probe(R, fp, f"precision {p!r}", setl(precision=p), {'fp8_scaling': exp})

# ---------------- Rule 12: denials ----------------
R = 'R12 denial'
fa = 'nemo2502_h100_gpt3_175b_512gpu'
for n, exp in [("FP8 attention (fp8_dot_product_attention) is not set", False),
               ("FP8 attention (fp8_dot_product_attention / fp8_multi_head_attention) is not set", False),
               ("fp8_dot_product_attention is not set", False), ("fp8_dot_product_attention: False", False),
               ("fp8_dot_product_attention=False", False), ("FP8 DPA off", False),
               ("fp8_dot_product_attention was set to False", False),
               ("the recipe lists fp8_dot_product_attention but sets it to False", False),
               ("fp8_dot_product_attention set to False in the perf script", False),
               ("FP8 attention (fp8_dot_product_attention), which is not set", False),
               ("FP8 attention (fp8_dot_product_attention) was not used", False),
               ("FP8 attention is not set (fp8_dot_product_attention)", False),
               ("the config stores fp8_dot_product_attention=True, but that has no effect without TE 2.x", False),
               ("FP8 attention (fp8_dot_product_attention) is ignored", False),
               ("FP8 attention (fp8_dot_product_attention) is on", True), ("fp8_dot_product_attention: True", True),
               ("FP8 attention (fp8_dot_product_attention) enabled", True), ("fp8_dot_product_attention set to True", True),
               ("FP8 DPA (fp8_dot_product_attention) on; FP8 MHA is not set", True),
               ("FP8 attention (fp8_dot_product_attention, not fp8_multi_head_attention)", True)]:
    probe(R, fa, f"note {n!r}", notes(n, replace=False), {'attention_fp8': exp})
tpr = 'dgxc2504_h100_llama31_70b_bf16_64'
e0, o0 = row(tpr)
for n, exp in [("tp_comm_overlap set to False", "backward"), ("tp_comm_overlap: False", "backward"),
               ("TP comm overlap (tp_comm_overlap) is disabled", "backward"), ("TP communication overlap (ub_tp_comm_overlap) is not set", "backward"),
               ("the recipe sets tp_comm_overlap, but it has no effect without userbuffers", "backward"),
               ("tp_comm_overlap and overlap_p2p_comm both set to False", "backward"),
               ("TP overlap (userbuffers) was turned off", "backward"),
               ("tensor-parallel communication overlap (tp_comm_overlap) is not enabled", "backward"),
               ("TP comm overlap is defined in the recipe and later set to False", "backward"),
               ("tp_comm_overlap True", "all"), ("TP comm overlap on", "all"), ("tp_comm_overlap: True (userbuffers)", "all")]:
    probe(R, tpr, f"note {n!r}", notes(n, replace=False), {'tp_overlap': exp})
mx = 'mcore_moe_readme_v09_mixtral_8x7b_h100'
e0, o0 = row(mx)
for n, exp in [("the library also stores moe_flex_dispatcher_backend='deepep', but that has no effect unless the dispatcher is 'flex'", "all-to-all"),
               ("DeepEP (moe_enable_deepep) is not set", "all-to-all"), ("moe_enable_deepep set to False", "all-to-all"),
               ("moe_enable_deepep: false", "all-to-all"), ("DeepEP was not used", "all-to-all"),
               ("DeepEP, but that has no effect on H100 at this EP", "all-to-all"),
               ("DeepEP is used", "deepep"), ("--moe-enable-deepep", "deepep"), ("moe_token_dispatcher_type: flex with DeepEP", "deepep")]:
    probe(R, mx, f"note {n!r}", notes(n, replace=False), {'ep_dispatcher': exp})
for n, exp in [("moe_a2a_overlap set to False", False), ("EP A2A overlap (overlap_moe_expert_parallel_comm) is not set", False),
               ("overlap_moe_expert_parallel_comm is disabled", False), ("1F1B A2A overlap: off", False),
               ("EP overlap (moe_a2a_overlap) was set to False", False), ("EP all-to-all overlap, but that has no effect with pp 1", False),
               ("moe_a2a_overlap: True", True), ("EP A2A overlap (overlap_moe_expert_parallel_comm) is on", True)]:
    probe(R, mx, f"note {n!r}", notes(n, replace=False), {'ep_overlap': exp})
# rule 9 again with a group name that carries no year (the year then comes from the title / arXiv id only)
def nogroup(e): e['group'] = 'narayanan_table1'
for t, exp in [("Narayanan et al., Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM, https://arxiv.org/abs/2104.04473", True),
               ("Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM (arXiv preprint 2104.04473)", True),
               ("Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM, arXiv 2104.04473v5", True),
               ("Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM (arXiv: 2104.04473)", True),
               ("Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM (SC '21)", True),
               ("Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM, arXiv:2104.04473", True),
               ("Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM, arXiv.2104.04473 (doi 10.48550/arXiv.2104.04473)", True)]:
    probe('R9 whole-layers', nr, f"group without year, recompute unstated, title={t!r}", seq(unst, nogroup, title(t)), {'whole_layers': exp})
probe('R9 whole-layers', nr, "group without year, recompute unstated, title without id, locator 'arXiv:2104.04473, Table 1'",
      seq(unst, nogroup, title("Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM"), lambda e: e['source'].__setitem__('locator', 'arXiv:2104.04473, Table 1')), {'whole_layers': True})
