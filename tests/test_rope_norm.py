"""`rope-theta` and `norm-eps`: the model's RoPE base and its norms' epsilon, from the spec (or
the preset, whose values are the published configs', tests/test_import.py) to every backend."""

from __future__ import annotations

import pytest
from parc.backends import job_files
from parc.pipeline import compile_text

BASE = """\
tp 2 x dp 4 on nodes(8 gpus, nvlink)
model {model}
hardware {{ gpu h100-sxm }}
{target}
train {{ seq 4096, global-batch 16, micro-batch 1 }}
"""


def compiled(model: str, target: str = "", checks: bool = True):
    return compile_text(BASE.format(model=model, target=target), path="r.par", checks=checks)


def model_of(model: str):
    result = compiled(model)
    assert result.plan is not None, [d.message for d in result.diagnostics]
    return result.plan.model


def test_presets_and_defaults():
    assert (model_of("llama3-8b").rope_theta, model_of("llama3-8b").norm_eps) == (500000.0, 1e-5)
    assert model_of("mixtral-8x7b").rope_theta == 1000000.0
    assert model_of("deepseek-v3-like").norm_eps == 1e-6
    custom = model_of("{ layers 2, hidden 256, ffn 512, heads 4, vocab 1000 }")
    assert (custom.rope_theta, custom.norm_eps) == (10000.0, 1e-5)  # Su et al.'s base
    written = model_of("llama3-8b { rope-theta 5e5, norm-eps 1e-6 }")
    assert (written.rope_theta, written.norm_eps) == (500000.0, 1e-6)
    # a preset's own theta stays when the block turns RoPE off (nothing written to object to)
    assert model_of("llama3-8b { position learned }").rope_theta == 500000.0


@pytest.mark.parametrize(("model", "code", "text"), [
    ("llama3-8b { rope-theta 0 }", "E0207", "0"),
    ("llama3-8b { norm-eps 2 }", "E0207", "2"),
    ("llama3-8b { rope-theta fast }", "E0203", "fast"),
    ("llama3-8b { position learned, rope-theta 500000 }", "E0212", "500000"),
])
def test_bad_values_are_errors_at_their_text(model, code, text):
    result = compiled(model)
    found = [d for d in result.diagnostics if d.code == code]
    assert not result.ok and found, [(d.code, d.message) for d in result.diagnostics]
    source = BASE.format(model=model, target="")
    assert source[found[0].span.start:found[0].span.end] == text and found[0].help


def test_every_backend_computes_with_the_models_values():
    """parc's job, torchtitan's flavour module and Megatron-LM's arguments carry the plan's base
    and epsilon (Megatron-LM's --rotary-base is an integer)."""
    model = "llama3-8b { layers 4, rope-theta 250000, norm-eps 1e-6 }"
    parc = job_files(compiled(model).plan)["model.py"]
    assert "ROPE_THETA = 250000.0\n" in parc and "NORM_EPS = 1e-06\n" in parc
    titan = job_files(compiled(model.replace("llama3-8b {", "llama3-8b { heads 16, kv-heads 4,"),
                               "target torchtitan", checks=False).plan)
    module = titan["parc_torchtitan.py"]
    assert "ROPE_THETA = 250000.0\n" in module and "NORM_EPS = 1e-06\n" in module
    megatron = "\n".join(job_files(compiled(model, "target megatron", checks=False).plan).values())
    assert "--rotary-base 250000" in megatron and "--norm-epsilon 1e-06" in megatron
