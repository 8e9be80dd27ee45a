"""`target megatron { attention-backend ... }`: which attention Transformer Engine runs.

NVIDIA's own recipes do not always run cuDNN's fused attention: dgxc-benchmarking's GPT-3 175B and
Nemotron-4 340B launch scripts export `NVTE_FUSED_ATTN=0`, so Transformer Engine runs flash-attn's
FlashAttention-2 (Megatron-Core's `--attention-backend flash` sets the same variables). The time
model charges that kernel FlashAttention-2's curve; the check against it is Transformer Engine's own
attention guide, which timed both kernels on one case (benchmarks/data/attention_kernels.yaml,
`te_guide`), a measurement no curve was fitted on.
"""

from __future__ import annotations

import sys

import pytest
from parc import targets, timing
from parc.memory.inputs import shape_of
from parc.pipeline import compile_text
from parc.targets import software_of

from .conftest import ROOT, load_yaml

SPEC = """
job attention
tp 4 x dp 2 on nodes(8 gpus, nvlink)
model llama3-8b
hardware {{ gpu h100-sxm }}
target megatron{options}
train {{ seq 8192, global-batch 64, micro-batch 1 }}
"""


def _compiled(options: str):
    return compile_text(SPEC.format(options=options), path="attention.par")


def _te_guide():
    data = load_yaml((ROOT / "benchmarks" / "data" / "attention_kernels.yaml").read_text())
    return data["te_guide"]


def test_the_backends_kernels_take_what_the_guide_measured():
    """Transformer Engine's attention guide (batch 2, 32 query heads, 4 KV groups, head dim 128,
    8,192 tokens, causal; H100 SXM, TE 1.10, cuDNN 9.3, flash-attn 2.4.2): cuDNN's fused attention
    7.49 ms forward and backward, flash-attn's 11.89 ms. The model, at the kernels' own speed
    (`sustained` 1), charges each within 5 %, and their ratio within 5 %."""
    guide = _te_guide()
    run = next(r for r in guide["runs"] if r["gpu"] == "H100 SXM")
    text = "\n".join(["dp 2 on nodes(8 gpus, nvlink)", "model {",
                      f"  layers 2, hidden {guide['heads'] * guide['head_dim']}, ffn 4096, heads {guide['heads']}, "
                      f"kv-heads {guide['kv_heads']}, vocab 32000",
                      f"  head-dim {guide['head_dim']}, activation swiglu, norm rmsnorm, position rope, "
                      "tied-embeddings off", "}", "hardware { gpu h100-sxm }", "target megatron",
                      f"train {{ seq {guide['seq']}, global-batch 2, micro-batch 1 }}"])
    plan = compile_text(text, path="guide.par").plan
    hw, shape = timing.hardware_of(plan), shape_of(plan)
    tokens = guide["batch"] * guide["seq"]
    charged = {}
    for attention in ("flash-te", "flash-te-fa2"):
        forward, backward, _ = timing.flash_attention_seconds(shape, 1, 1, "ring", guide["seq"], tokens,
                                                              attention, hw, 1.0)
        charged[attention] = 1e3 * (forward + backward)
    assert charged["flash-te"] == pytest.approx(run["cudnn_ms"], rel=0.05)
    assert charged["flash-te-fa2"] == pytest.approx(run["flash_attn_ms"], rel=0.05)
    assert charged["flash-te-fa2"] / charged["flash-te"] == pytest.approx(run["flash_attn_ms"] / run["cudnn_ms"],
                                                                          rel=0.05)


@pytest.mark.parametrize("options, backend, attention", [
    ("", "auto", "flash-te"),
    (" { attention-backend auto }", "auto", "flash-te"),
    (" { attention-backend fused }", "fused", "flash-te"),
    (" { attention-backend flash }", "flash", "flash-te-fa2"),
    (" { attention-backend unfused }", "unfused", "unfused"),
    (" { flash-attention off }", "unfused", "unfused"),
    (" { flash-attention off, attention-backend unfused }", "unfused", "unfused"),
])
def test_each_backend_is_the_attention_parc_times_and_megatron_runs(options, backend, attention):
    """The spec's backend is the one the generated job asks Megatron-LM for and the time model
    charges: flash-attn's FlashAttention-2 slower than cuDNN's kernel at 8K tokens, unfused
    slower still."""
    from parc.backends import megatron as backend_module

    result = _compiled(options)
    errors = [d.message for d in result.diagnostics if d.is_error and d.code != "E0401"]  # fitting is not the point
    assert result.plan is not None and not errors, errors
    plan = result.plan
    assert targets.attention_backend(plan.target) == backend
    assert software_of(plan).attention == attention
    assert dict(backend_module.arguments(plan))["--attention-backend"] == backend


def test_flash_attn_costs_what_its_kernel_does_more():
    """Same layout, the backend alone changed: flash-attn's kernel makes the step longer by its
    attention, and unfused attention longer still."""
    from parc.explain import time_section

    steps = {options: time_section(_compiled(options))["step_seconds"]
             for options in ("", " { attention-backend flash }", " { attention-backend unfused }")}
    assert steps[""] < steps[" { attention-backend flash }"] < steps[" { attention-backend unfused }"]


@pytest.mark.parametrize("options", [" { flash-attention off, attention-backend flash }",
                                     " { flash-attention off, attention-backend auto }",
                                     " { flash-attention on, attention-backend unfused }"])
def test_a_backend_against_flash_attention_is_refused(options):
    result = _compiled(options)
    codes = [d.code for d in result.diagnostics if d.is_error and d.code != "E0401"]
    assert codes == ["E0374"]
    from parc.diagnostics import Style, render_text

    text = render_text([d for d in result.diagnostics if d.code == "E0374"], {"attention.par": result.source},
                       Style(False))
    assert "attention.par:" in text and "^^^" in text and "help:" in text


def test_the_importer_keeps_the_backend():
    """`parc import` of a Megatron-LM command line keeps `--attention-backend flash` and `fused`,
    and reads `local` (Megatron-Core's own attention, the scores materialised) as unfused."""
    from parc.importer import import_source
    from parc.source import SourceFile

    for backend in ("flash", "fused", "local"):
        script = SourceFile(f"{backend}.sh", "torchrun pretrain_gpt.py --tensor-model-parallel-size 4 --num-layers 32 --hidden-size 4096 "
                          "--ffn-hidden-size 14336 --num-attention-heads 32 --seq-length 8192 --micro-batch-size 1 "
                          f"--global-batch-size 64 --bf16 --vocab-size 128256 --attention-backend {backend}\n")
        imported = import_source(script)
        expected = "unfused" if backend == "local" else backend  # Megatron-Core's own attention: the scores
        assert ("flash-attention off" if backend == "local" else f"attention-backend {backend}") in imported.text
        assert targets.attention_backend(compile_text(imported.text, path="imported.par").plan.target) == expected


@pytest.mark.parametrize("exports, backend", [
    ("export NVTE_FUSED_ATTN=0", "flash"),  # NVIDIA's GPT-3 and Nemotron-4 340B recipes
    ("export NVTE_FUSED_ATTN=0\nexport NVTE_FLASH_ATTN=0", "unfused"),
    ("export NVTE_FLASH_ATTN=0\nexport NVTE_FUSED_ATTN=1", "auto"),  # the Llama 3.1 recipes: cuDNN's
    ("", "auto"),
    ('export NVTE_FUSED_ATTN="0"', "flash"),  # quoted
    ("export NVTE_FUSED_ATTN=0\nexport NVTE_FUSED_ATTN=1", "auto"),  # the later assignment wins
])
def test_the_importer_reads_transformer_engines_variables(exports, backend):
    """A launch script from before `--attention-backend` picks the kernel with Transformer
    Engine's variables; the imported spec says the same attention."""
    from parc.importer import import_source
    from parc.source import SourceFile

    script = SourceFile("launch.sh", f"{exports}\ntorchrun pretrain_gpt.py --tensor-model-parallel-size 4 "
                        "--num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 "
                        "--seq-length 8192 --micro-batch-size 1 --global-batch-size 64 --bf16 --vocab-size 128256\n")
    imported = import_source(script)
    assert targets.attention_backend(compile_text(imported.text, path="imported.par").plan.target) == backend


def test_the_reader_gives_nvidias_flash_attn_recipes_their_kernel():
    """dgxc-benchmarking's GPT-3 175B and Nemotron-4 340B rows state `NVTE_FUSED_ATTN=0`; its
    Nemotron-4 15B rows `NVTE_FUSED_ATTN=1`, and the Llama 3.1 rows state neither: only the first
    two run flash-attn's kernel."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import fidelity

    rows, _ = fidelity.load_rows(ROOT / "benchmarks" / "data" / "dgxc_benchmarking_h100.yaml")
    checked = {True: 0, False: 0}
    for row in rows:
        flash = "_gpt3_" in row.id or "_340b_" in row.id
        assert (row.software.attention == "flash-te-fa2") == flash, row.id
        assert ("attention-backend flash" in row.spec) == flash, row.id
        checked[flash] += 1
    assert checked[True] == 20 and checked[False] > 20


@pytest.mark.parametrize("model, refused", [
    ("{ layers 2, hidden 3200, ffn 8192, heads 32, head-dim 100, vocab 32000 }", True),  # not a multiple of 8
    ("{ layers 2, hidden 4096, ffn 8192, heads 16, head-dim 256, vocab 32000 }", False),  # flash-attn's largest
    ("{ layers 2, hidden 4096, ffn 8192, heads 8, head-dim 512, vocab 32000 }", True),
])
def test_flash_is_refused_where_flash_attn_has_no_kernel(model, refused):
    """flash-attn's FlashAttention-2 runs head dims up to 256 in multiples of 8 (E0375 beyond)."""
    text = SPEC.format(options=" { attention-backend flash }").replace("model llama3-8b", f"model {model}")
    codes = [d.code for d in compile_text(text, path="attention.par").diagnostics if d.is_error]
    assert ("E0375" in codes) == refused, codes
