"""`parc import FILE`: an existing job's configuration as a `.par` spec.

Three inputs, recognised by their content:
- a torchtitan 0.3 command line (`torchtitan.args` as `parc compile` writes it, or any file of
  its `--section.key value` options): the whole spec, `target torchtitan`. A registered config
  (`--config llama3_8b`) gives the model preset; the flavour module parc generates for any other
  shape (`--module parc_torchtitan --config parc_job`) is read from the command line's folder,
  statically (parsed with `ast`, never imported or run: it imports torch and torchtitan);
- a Megatron-LM launch script or argument file (pretrain_gpt.py's `--option value`, shell line
  continuations and comments allowed): the whole spec, `target megatron`;
- a Hugging Face `config.json`: the model block.

Each option is read back exactly as the backends write it (backends/torchtitan.py,
backends/megatron.py), so importing a generated job and compiling the spec gives the same
settings (tests/test_import.py). An option parc has no setting for is reported as W0701 at its
file:line, never dropped silently; what the file does not say (the GPU, the node shape) comes
from `--gpu` and `--gpus-per-node` and is written as a comment in the spec.
"""

from __future__ import annotations

import ast
import json
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from .catalog import models as model_catalog
from .diagnostics import Diagnostic, error, warning
from .plan import NORM_EPS, ROPE_THETA
from .source import SourceFile, Span

MODEL_FIELDS = ("layers", "hidden", "ffn", "heads", "kv_heads", "head_dim", "vocab", "tied_embeddings",
                "activation", "norm", "position", "experts", "top_k", "expert_ffn", "shared_experts", "moe_layers")


@dataclass
class Option:
    value: str | None
    span: Span


@dataclass
class Imported:
    """The spec text, or None when the file could not be read as any of the three kinds."""

    kind: str
    text: str | None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    sources: list[SourceFile] = field(default_factory=list)
    """Other files read besides the one imported (a torchtitan flavour module): diagnostics may
    point into them, so the renderer needs their text."""


Reader = Callable[[str], "str | None"]
"""The text of a file named by a path (relative paths as the imported file's own), None when absent."""


def read_file(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError):
        return None


@dataclass
class Defaults:
    """What none of the imported files says: the cluster."""

    gpu: str = "h100-sxm"
    gpus_per_node: int = 8
    dp: int = 1
    """Megatron-LM derives dp from the world size, which its arguments do not hold."""


# ---------------------------------------------------------------------------------------------
# Reading options with their place in the file


_TOKEN = re.compile(r"""'[^']*'|"[^"]*"|[^\s'"]+""")


LIST_OPTIONS = frozenset({"--recompute-modules"})
"""Megatron-LM options that take a list (argparse `nargs='*'`): their value is every word up to
the next option, space-separated."""


def read_options(source: SourceFile) -> tuple[dict[str, Option], list[tuple[str, Span]]]:
    """`--name [value]` pairs in the order written (a later one wins), and the other words
    (a torchtitan subcommand, the program's name) with their spans. `#` starts a comment; a
    trailing backslash continues the line."""
    words: list[tuple[str, Span]] = []
    offset = 0
    for line in source.text.splitlines(keepends=True):
        body = line.split("#", 1)[0] if not line.lstrip().startswith("#") else ""
        for m in _TOKEN.finditer(body):
            word = m.group(0)
            if word == "\\":
                continue
            words.append((word.strip("'\""), source.span(offset + m.start(), offset + m.end())))
        offset += len(line)
    options: dict[str, Option] = {}
    others: list[tuple[str, Span]] = []
    i = 0
    while i < len(words):
        word, span = words[i]
        if word.startswith("--"):
            name, _, inline = word.partition("=")
            value = inline or None
            if value is None and i + 1 < len(words) and not words[i + 1][0].startswith("--") and \
                    not words[i + 1][0].startswith("activation-checkpoint:"):
                value = words[i + 1][0]
                i += 1
                while name in LIST_OPTIONS and i + 1 < len(words) and not words[i + 1][0].startswith("--"):
                    value += " " + words[i + 1][0]  # an option that takes a list: every word up to the next
                    i += 1
            options[name] = Option(value, span)
        else:
            others.append((word, span))
        i += 1
    return options, others


def _is_zero(value) -> bool:
    """An option's value that reads as the number 0 (`0`, `0.0`)."""
    try:
        return float(value) == 0.0
    except (TypeError, ValueError):
        return False


def _megatron_optimizer(options: dict[str, Option], used: set[str]) -> str:
    """parc's optimizer for Megatron-LM's: its `adam` is AdamW, parc's `adamw` at weight decay 0.1
    and `adam` at 0 (the two are one optimizer without decay); Megatron-LM's default decay is 0.01,
    which parc has not, so it is reported and read as `adamw`."""
    name = options.get("--optimizer")
    used.add("--optimizer")
    if name is not None and name.value == "sgd":
        if "--weight-decay" in options and _is_zero(options["--weight-decay"].value):
            used.add("--weight-decay")
        return "sgd"
    decay = options.get("--weight-decay")
    if decay is not None and (_is_zero(decay.value) or decay.value == "0.1"):
        used.add("--weight-decay")
        return "adam" if _is_zero(decay.value) else "adamw"
    return "adamw"


def _torchtitan_optimizer(options: dict[str, Option], used: set[str]) -> tuple[str, str | None]:
    """(parc's optimizer, its clipping) for torchtitan's options as parc's torchtitan job writes
    them: AdamW at weight decay 0.1 (`adamw`) or Adam at 0 (`adam`), a constant 3e-4 without
    warm-up; `--training.max-norm`, torchtitan's 1.0 when not given, `inf` for none. Another
    learning rate, schedule or decay is reported (W0701): parc has no setting for it."""
    group = "--optimizer.param-groups.0."
    name, decay = options.get(group + "optimizer-name"), options.get(group + "optimizer-kwargs.weight-decay")
    optimizer = "adam" if name is not None and name.value == "Adam" else "adamw"
    if name is None or name.value in ("Adam", "AdamW"):
        used.add(group + "optimizer-name")
    if decay is not None and decay.value == ("0" if optimizer == "adam" else "0.1"):
        used.add(group + "optimizer-kwargs.weight-decay")
    for option, values in ((group + "optimizer-kwargs.lr", ("3e-4", "0.0003")), ("--lr-scheduler.warmup-steps", ("0",)),
                           ("--lr-scheduler.min-lr-factor", ("1.0", "1")), ("--profiler.no-enable-profiling", (None,))):
        if option in options and options[option].value in values:
            used.add(option)
    used.add("--training.max-norm")
    norm = options.get("--training.max-norm")
    value = "1.0" if norm is None or norm.value is None else norm.value
    return optimizer, None if value == "inf" or _is_zero(value) else value


def _te_attention_of(others: list[tuple[str, Span]]) -> str:
    """The attention a launch script picks through Transformer Engine's variables, as Megatron-LM
    did before `--attention-backend` (and NVIDIA's NeMo 1 recipes still do: `export
    NVTE_FUSED_ATTN=0`): "flash" with the fused backend off, "unfused" with flash-attn's off too,
    else "auto" (every backend on, Transformer Engine's default)."""
    value = {}
    for i, (word, span) in enumerate(others):  # in the order written: a later assignment wins
        found = re.fullmatch(r"(NVTE_(?:FUSED|FLASH)_ATTN)=(\w*)", word)
        if not found:
            continue
        text = found.group(2)
        if not text and i + 1 < len(others) and others[i + 1][1].start == span.end:
            text = others[i + 1][0]  # `NAME="0"`: the quoted value is the next word, unquoted, adjacent
        if text in ("0", "1"):
            value[found.group(1)] = text
    if value.get("NVTE_FUSED_ATTN") != "0":
        return "auto"
    return "unfused" if value.get("NVTE_FLASH_ATTN") == "0" else "flash"


def _megatron_clip(options: dict[str, Option], used: set[str]) -> str | None:
    """The gradient clipping Megatron-LM runs: `--clip-grad`, 1.0 when not given, 0 for none."""
    used.add("--clip-grad")
    clip = options.get("--clip-grad")
    value = "1.0" if clip is None or clip.value is None else clip.value
    return None if _is_zero(value) else value


def _unused(options: dict[str, Option], used: set[str], what: str) -> list[Diagnostic]:
    return [warning("W0701", f"`{name}` is not imported: parc has no setting for it", o.span,
                    label=f"not a {what} option parc reads",
                    help="check the spec against the job; docs/targets.md lists the options parc maps")
            for name, o in options.items() if name not in used]


# ---------------------------------------------------------------------------------------------
# The model block


def model_text(fields: dict) -> str:
    """`model PRESET` when the shape is a preset's, else a full `model { ... }` block."""
    for name, preset in model_catalog.MODELS.items():
        full = {"head_dim": preset["hidden"] // preset["heads"], "experts": 0, "top_k": 0, "expert_ffn": 0,
                "shared_experts": 0, "kv_heads": preset.get("kv_heads", preset["heads"])} | preset
        if all(fields.get(k) == full.get(k) for k in ("layers", "hidden", "ffn", "heads", "kv_heads", "vocab",
                                                      "tied_embeddings", "activation", "norm", "position")) \
                and all(fields.get(k, 0) == full.get(k, 0) for k in ("experts", "top_k", "expert_ffn", "kv_lora_rank",
                                                                     "q_lora_rank", "rope_head_dim", "v_head_dim",
                                                                     "mtp_layers")) \
                and fields.get("head_dim") in (None, full["head_dim"]):
            extra = _rope_and_norm_text(fields, preset) + _routing_text(fields)
            return f"model {name}" + (f" {{ {', '.join(extra)} }}" if extra else "")
    parts = [f"layers {fields['layers']}", f"hidden {fields['hidden']}", f"ffn {fields['ffn']}",
             f"heads {fields['heads']}"]
    if not fields.get("kv_lora_rank"):  # multi-head latent attention gives every head its own key and value
        parts.append(f"kv-heads {fields.get('kv_heads', fields['heads'])}")
    if fields.get("head_dim") and fields["head_dim"] * fields["heads"] != fields["hidden"]:
        parts.append(f"head-dim {fields['head_dim']}")
    if fields.get("kv_lora_rank"):
        parts.append(f"kv-lora-rank {fields['kv_lora_rank']}")
        if fields.get("q_lora_rank"):
            parts.append(f"q-lora-rank {fields['q_lora_rank']}")
        parts += [f"rope-head-dim {fields['rope_head_dim']}", f"v-head-dim {fields['v_head_dim']}"]
    if fields.get("mtp_layers"):
        parts.append(f"mtp {fields['mtp_layers']}")
    parts += [f"vocab {fields['vocab']}", f"tied-embeddings {'on' if fields['tied_embeddings'] else 'off'}",
              f"activation {fields['activation']}", f"norm {fields['norm']}", f"position {fields['position']}"]
    parts += _rope_and_norm_text(fields, {})
    if fields.get("experts"):
        parts += [f"experts {fields['experts']}", f"top-k {fields['top_k']}", f"expert-ffn {fields['expert_ffn']}"]
        if fields.get("shared_experts"):
            parts.append(f"shared-experts {fields['shared_experts']}")
        if fields.get("moe_from"):
            parts.append(f"moe-layers from {fields['moe_from']}")
        elif fields.get("moe_rule"):
            parts.append(f"moe-layers {fields['moe_rule']}")
        parts += _routing_text(fields)
    return "model {\n" + "".join(f"  {p}\n" for p in parts) + "}"


def _positive_number(value) -> float | None:
    """A config's real value that is a positive, finite number (not a bool), else None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
        return float(value)
    return None


def _rope_and_norm_text(fields: dict, preset: dict) -> list[str]:
    """`rope-theta` and `norm-eps` where the source's differ from what `preset` (or, without one,
    the spec's default) gives; theta only for a RoPE model."""
    parts = []
    theta = fields.get("rope_theta")
    if theta is not None and fields.get("position") == "rope" and theta != preset.get("rope_theta", ROPE_THETA):
        parts.append(f"rope-theta {spec_number(theta)}")
    eps = fields.get("norm_eps")
    if eps is not None and eps != preset.get("norm_eps", NORM_EPS):
        parts.append(f"norm-eps {spec_number(eps)}")
    return parts


def spec_number(value: float) -> str:
    """A real number as the spec's lexer reads it back: whole ones without a point, others as
    Python writes them (`1e-06`)."""
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else repr(float(value))


def _routing_text(fields: dict) -> list[str]:
    """The router's settings beyond the shape: balancing and an expert capacity."""
    out = [f"moe-balance {fields['moe_balance']}"] if fields.get("moe_balance") else []
    return out + ([f"capacity-factor {fields['capacity_factor']}"] if fields.get("capacity_factor") else [])


SPEC_KEYS = (("layers", "layers"), ("hidden", "hidden"), ("ffn", "ffn"), ("heads", "heads"), ("kv_heads", "kv-heads"),
             ("head_dim", "head-dim"), ("vocab", "vocab"), ("tied_embeddings", "tied-embeddings"),
             ("experts", "experts"), ("top_k", "top-k"), ("expert_ffn", "expert-ffn"),
             ("shared_experts", "shared-experts"))


def preset_model_text(name: str, fields: dict) -> str:
    """`model NAME`, or `model NAME { ... }` with each field whose value differs from what the
    preset's catalogue entry gives (its own value, else the spec's default: kv-heads = heads,
    head-dim = hidden / heads, expert-ffn = ffn). `fields` hold resolved values, with the MoE
    layers and balancing as spec text (`moe_rule`, `moe_balance`)."""
    preset = model_catalog.MODELS[name]
    defaults = {"kv_heads": fields["heads"], "head_dim": fields["hidden"] // fields["heads"], "tied_embeddings": False,
                "activation": "swiglu", "norm": "rmsnorm", "position": "rope", "experts": 0, "top_k": 0,
                "expert_ffn": fields["ffn"], "shared_experts": 0}
    moe = bool(fields.get("experts"))
    parts = [f"{key} {_spec_value(fields[f])}" for f, key in SPEC_KEYS + tuple((k, k) for k in ("activation", "norm", "position"))
             if (moe or f not in ("top_k", "expert_ffn", "shared_experts")) and preset.get(f, defaults.get(f)) != fields[f]]
    if moe and moe_rule_text(preset.get("moe_layers", "all")) != fields["moe_rule"]:
        parts.append(f"moe-layers {fields['moe_rule']}")
    if moe and fields.get("moe_balance"):
        parts.append(f"moe-balance {fields['moe_balance']}")
    parts += _rope_and_norm_text(fields, preset)
    return f"model {name}" + (" {\n" + "".join(f"  {p}\n" for p in parts) + "}" if parts else "")


def _spec_value(value) -> str:
    return ("on" if value else "off") if isinstance(value, bool) else str(value)


def moe_rule_text(rule) -> str | None:
    """A catalogue entry's `moe_layers` (`"all"`, `("from", 3)`) as spec text."""
    if isinstance(rule, tuple):
        return f"{rule[0]} {rule[1]}"
    return rule


def moe_rule(layers: int, indices: tuple[int, ...]) -> str | None:
    """The spec's `moe-layers` rule (all, none, from K, every K) that selects exactly these
    0-based layer indices, None when no rule does. The rules are resolve.py's `moe_layers`;
    tests/test_import.py round-trips every form through it."""
    chosen = tuple(sorted(indices))
    if chosen == tuple(range(layers)):
        return "all"
    if not chosen:
        return "none"
    if chosen == tuple(range(chosen[0], layers)):
        return f"from {chosen[0]}"
    every = chosen[0] + 1
    if chosen == tuple(i for i in range(layers) if (i + 1) % every == 0):
        return f"every {every}"
    return None


HF_USED = {"num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads",
           "head_dim", "vocab_size", "tie_word_embeddings", "hidden_act", "rms_norm_eps", "layer_norm_eps",
           "layer_norm_epsilon", "rope_theta", "num_local_experts", "num_experts_per_tok", "moe_intermediate_size",
           "n_routed_experts", "n_shared_experts", "first_k_dense_replace", "num_experts",
           "kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
           "num_nextn_predict_layers"}
HF_METADATA = {"architectures", "model_type", "torch_dtype", "dtype", "transformers_version", "bos_token_id",
               "eos_token_id", "pad_token_id", "initializer_range", "use_cache", "max_position_embeddings",
               "attention_dropout", "hidden_dropout", "output_router_logits", "router_aux_loss_coef",
               "router_jitter_noise", "_name_or_path", "pretraining_tp", "mlp_bias", "attention_bias"}
"""Keys that describe no shape parc models (ids, dtypes, initialisation, training-time knobs);
`attention_bias`/`mlp_bias` false is parc's own (no linear biases), true is reported."""


def import_hf(source: SourceFile) -> Imported:
    try:
        config = json.loads(source.text)
    except json.JSONDecodeError as exc:
        return Imported("hf", None, [error("E0702", f"not JSON: {exc.msg}", source.span(exc.pos, exc.pos + 1),
                                           label="here", help="pass a Hugging Face config.json")])
    if not isinstance(config, dict):
        return Imported("hf", None, [error("E0702", "config.json is not an object", source.span(0, 1),
                                           label="expected `{`", help="pass a Hugging Face config.json")])

    def span(key: str) -> Span:
        at = source.text.find(f'"{key}"')
        return source.span(at, at + len(key) + 2) if at >= 0 else source.span(0, 0)

    diags = []
    missing = [k for k in ("num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads",
                           "vocab_size") if not isinstance(config.get(k), int)]
    if missing:
        return Imported("hf", None, [error("E0702", f"config.json has no {', '.join(missing)}", source.span(0, 1),
                                           label="not a decoder's config", help="pass a decoder model's config.json")])
    act = str(config.get("hidden_act", "silu"))
    heads = config["num_attention_heads"]
    fields = {
        "layers": config["num_hidden_layers"], "hidden": config["hidden_size"], "ffn": config["intermediate_size"],
        "heads": heads, "kv_heads": config.get("num_key_value_heads") or heads,
        "head_dim": config.get("head_dim") or config["hidden_size"] // heads, "vocab": config["vocab_size"],
        "tied_embeddings": bool(config.get("tie_word_embeddings", False)),
        "activation": "swiglu" if act in ("silu", "swish") else "gelu",
        "norm": "rmsnorm" if "rms_norm_eps" in config else "layernorm",
        "position": "rope" if "rope_theta" in config or config.get("model_type") in ("llama", "mistral", "mixtral",
                                                                                    "qwen2", "qwen3") else "learned",
    }
    for key, field_ in (("rope_theta", "rope_theta"), ("rms_norm_eps", "norm_eps"), ("layer_norm_eps", "norm_eps"),
                        ("layer_norm_epsilon", "norm_eps")):
        value = _positive_number(config.get(key))
        if value is not None:
            fields[field_] = value
        elif key in config:
            diags.append(warning("W0701", f"`{key}` is not a positive number: not imported", span(key),
                                 label="not imported", help="check the config's value"))
    if isinstance(config.get("kv_lora_rank"), int) and config["kv_lora_rank"] > 0:
        # multi-head latent attention (DeepSeek-V2/V3's config): head_dim is the part without RoPE
        fields.update(kv_heads=heads, kv_lora_rank=config["kv_lora_rank"], q_lora_rank=config.get("q_lora_rank") or 0,
                      head_dim=config.get("qk_nope_head_dim") or fields["head_dim"],
                      rope_head_dim=config.get("qk_rope_head_dim") or 64,
                      v_head_dim=config.get("v_head_dim") or config.get("qk_nope_head_dim") or fields["head_dim"])
    if isinstance(config.get("num_nextn_predict_layers"), int) and config["num_nextn_predict_layers"] > 0:
        fields["mtp_layers"] = config["num_nextn_predict_layers"]  # DeepSeek-V3's multi-token prediction
    experts = config.get("num_local_experts") or config.get("n_routed_experts") or config.get("num_experts") or 0
    if experts:
        fields.update(experts=experts, top_k=config.get("num_experts_per_tok", 1),
                      expert_ffn=config.get("moe_intermediate_size") or config["intermediate_size"],
                      shared_experts=config.get("n_shared_experts") or 0,
                      moe_from=config.get("first_k_dense_replace") or 0)
    if act not in ("silu", "swish", "gelu", "gelu_new", "gelu_pytorch_tanh"):
        diags.append(warning("W0701", f"activation `{act}` is imported as gelu", span("hidden_act"),
                             label="not silu or gelu", help="check the model block's `activation`"))
    for key in config:
        if key in HF_USED or (key in HF_METADATA and config[key] in (False, None) or key in HF_METADATA
                              and key not in ("attention_bias", "mlp_bias")):
            continue
        diags.append(warning("W0701", f"`{key}` is not imported: parc's model has no such field", span(key),
                             label="not imported", help="check that the model parc describes is the one meant"))
    return Imported("hf", model_text(fields) + "\n", diags)


# ---------------------------------------------------------------------------------------------
# torchtitan


FLAVOUR_SHAPE = {"LAYERS": "layers", "DIM": "hidden", "FFN": "ffn", "HEADS": "heads", "KV_HEADS": "kv_heads",
                 "HEAD_DIM": "head_dim", "VOCAB": "vocab", "EXPERTS": "experts", "TOP_K": "top_k",
                 "EXPERT_FFN": "expert_ffn", "SHARED_FFN": "shared_ffn"}
"""The flavour module's constants (backends/torchtitan.py, FLAVOUR) that are whole numbers, with
the model field each one is; TIED, MOE_LAYERS and BALANCE_RATE are read on their own."""

_FLAVOUR_NAME = re.compile(r"model `([^`]+)` as torchtitan's")
"""The preset the generated module's docstring names (`custom` for a `model { ... }` block)."""


@dataclass
class Flavour:
    """What a flavour module says about the model: resolved fields for `model_text`, the
    preset it names, and the sequence its RoPE table is built for."""

    fields: dict
    preset: str | None
    max_seq: int | None
    max_seq_span: Span | None


def _constants(tree: ast.Module, module: SourceFile) -> dict[str, tuple[object, Span]]:
    """Top-level `NAME = literal` assignments with their spans; a value that is not a literal
    (a call, a name) is kept as the `_NOT_LITERAL` marker so that it is reported, not executed."""
    out: dict[str, tuple[object, Span]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                value = _NOT_LITERAL
            out[node.targets[0].id] = (value, _node_span(module, node))
    return out


_NOT_LITERAL = object()


def _node_span(module: SourceFile, node: ast.stmt) -> Span:
    """The span of a statement (ast's columns count UTF-8 bytes; spans count characters)."""
    def offset(line: int, col: int) -> int:
        return module.line_starts[line - 1] + len(module.line_text(line).encode()[:col].decode(errors="ignore"))

    return module.span(offset(node.lineno, node.col_offset), offset(node.end_lineno or node.lineno,
                                                                     node.end_col_offset or node.col_offset))


def read_flavour(module: SourceFile, config: str, config_span: Span) -> tuple[Flavour | None, list[Diagnostic]]:
    """The model of a generated flavour module, read statically: `ast` parses the file and
    evaluates literals only, so nothing in it runs (it imports torch and torchtitan, which the
    `parc` command never does). The model is torchtitan's llama3 (dense) or qwen3 (MoE)
    decoder, so SwiGLU, RMSNorm and RoPE are what the decoder is, not settings; its norm epsilon
    and RoPE theta are read as `norm-eps` and `rope-theta`."""

    where = module.span(0, 0)
    try:
        tree = ast.parse(module.text, filename=module.path)
    except SyntaxError as exc:
        line = exc.lineno or 1
        at = module.line_starts[min(line, len(module.line_starts)) - 1] + max((exc.offset or 1) - 1, 0)
        return None, [error("E0702", f"the flavour module is not Python: {exc.msg}", module.span(at, at + 1),
                            label="here", help="import the job folder `parc compile` wrote, with its parc_torchtitan.py")]
    functions = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    if config not in functions:
        return None, [error("E0702", f"the flavour module has no function `{config}`", config_span,
                            label=f"not defined in {os.path.basename(module.path)}",
                            help="`--config` names the function of the `--module` file that returns the job config "
                                 "(parc writes `parc_job`)")]
    constants = _constants(tree, module)
    diags: list[Diagnostic] = []

    def whole(name: str) -> int | None:
        value, span = constants.get(name, (None, where))
        if type(value) is not int or value < 0:
            diags.append(error("E0702", f"`{name}` is not a whole number in the flavour module", span,
                               label="parc reads the model's shape from literals",
                               help=f"write `{name} = <count>`, as the module `parc compile` generates"))
            return None
        return value

    shape = {field_: whole(name) for name, field_ in FLAVOUR_SHAPE.items()}
    tied, tied_span = constants.get("TIED", (None, where))
    if not isinstance(tied, bool):
        diags.append(error("E0702", "`TIED` is not True or False in the flavour module", tied_span,
                           label="tied embeddings", help="write `TIED = False` (or True)"))
    indices, moe_span = constants.get("MOE_LAYERS", (None, where))
    if not isinstance(indices, (tuple, list)) or not all(type(i) is int for i in indices):
        diags.append(error("E0702", "`MOE_LAYERS` is not a tuple of layer indices", moe_span,
                           label="0-based MoE layers", help="write `MOE_LAYERS = ()` for a dense model"))
    rate, rate_span = constants.get("BALANCE_RATE", (None, where))
    if rate is not None and (isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 < rate <= 1):
        diags.append(error("E0702", "`BALANCE_RATE` is not None or a rate in (0, 1]", rate_span,
                           label="the expert-bias step", help="write `BALANCE_RATE = None` or `BALANCE_RATE = 0.001`"))
    if diags:
        return None, diags
    fields = {k: v for k, v in shape.items() if k != "shared_ffn"} | {
        "tied_embeddings": tied, "activation": "swiglu", "norm": "rmsnorm", "position": "rope"}
    if not fields["heads"] or not fields["layers"]:
        return None, [error("E0702", "the flavour module has no layers or no heads", constants["LAYERS"][1],
                            label="an empty model", help="import the module `parc compile` generated")]
    if fields["experts"] and indices:
        rule = moe_rule(fields["layers"], tuple(indices))
        if rule is None:
            return None, [error("E0702", f"MoE layers {tuple(indices)} are not all, none, from K or every K", moe_span,
                                label="no `moe-layers` rule selects these",
                                help="parc's model states MoE layers as `moe-layers from 3` (first 3 dense) or "
                                     "`every 2`; write the indices one of them gives")]
        if not fields["expert_ffn"] or shape["shared_ffn"] % fields["expert_ffn"]:
            return None, [error("E0702", "`SHARED_FFN` is not a whole number of experts of `EXPERT_FFN`",
                                constants["SHARED_FFN"][1], label="shared experts are expert-sized",
                                help="write `SHARED_FFN = shared experts x EXPERT_FFN`")]
        fields |= {"moe_rule": rule, "shared_experts": shape["shared_ffn"] // fields["expert_ffn"],
                   "moe_balance": f"aux-free {rate!r}" if rate is not None else None}
    else:
        fields |= {"experts": 0, "top_k": 0, "expert_ffn": 0, "shared_experts": 0}
    for name, field_, default in (("NORM_EPS", "norm_eps", NORM_EPS), ("ROPE_THETA", "rope_theta", ROPE_THETA)):
        value, span = constants.get(name, (None, where))
        if (number := _positive_number(value)) is not None:
            fields[field_] = number
        else:
            diags.append(warning("W0701", f"`{name}` is not a positive number: the spec's default {default:g} "
                                 "is used", span, label="not imported", help=f"write `{name} = {default:g}`"))
    seq, seq_span = constants.get("MAX_SEQ", (None, None))
    docstring = ast.get_docstring(tree) or ""
    named = _FLAVOUR_NAME.search(docstring)
    preset = named.group(1) if named and named.group(1) in model_catalog.MODELS else None
    return Flavour(fields, preset, seq if type(seq) is int else None, seq_span), diags


def flavour_model_text(flavour: Flavour) -> str:
    """The model block: the preset the module names, with what differs from it, else a full block."""
    if flavour.preset is not None:
        return preset_model_text(flavour.preset, flavour.fields)
    text = model_text(flavour.fields)
    # a preset's shape: that preset, with what the shape comparison leaves out (top-k, balancing)
    return text if "{" in text else preset_model_text(text.split()[1], flavour.fields)




def import_torchtitan(source: SourceFile, defaults: Defaults, read: Reader = read_file) -> Imported:
    from .backends import torchtitan as backend

    options, others = read_options(source)
    used: set[str] = set()

    def get(name: str, default=None):
        used.add(name)
        o = options.get(name)
        return default if o is None else (o.value if o.value is not None else True)

    def flag(on: str, off: str, default: bool) -> bool:
        used.update((on, off))
        if on in options:
            return True
        return False if off in options else default

    diags: list[Diagnostic] = []
    config, module_name = get("--config"), get("--module")
    model = next((m for m, (_, c) in backend.CONFIGS.items() if c == config), None)
    sources: list[SourceFile] = []
    flavour = None
    if model is None and isinstance(module_name, str) and isinstance(config, str) \
            and module_name not in {m for m, _ in backend.CONFIGS.values()}:
        module = _module_source(source, module_name, read)
        if module is None:
            path = _module_path(source, module_name)
            return Imported("torchtitan", None, [error(
                "E0702", f"the flavour module `{module_name}` is not beside the command line ({path})",
                options["--module"].span, label="no such file",
                help=f"import the command line from the job folder `parc compile` wrote, next to {os.path.basename(path)}")])
        sources.append(module)
        flavour, found = read_flavour(module, config, options["--config"].span)
        diags += found
        if flavour is None:
            return Imported("torchtitan", None, diags, sources)
    elif model is None:
        span = options["--config"].span if "--config" in options else source.span(0, 0)
        return Imported("torchtitan", None, [error("E0702", f"torchtitan config `{config}` has no parc model preset",
                                                   span, label="not a llama3 registered config",
                                                   help="parc imports llama3_8b, llama3_70b and llama3_405b, and "
                                                        "the flavour module it generates for other shapes "
                                                        "(`--module parc_torchtitan --config parc_job`)")])
    layers = flavour.fields["layers"] if flavour else model_catalog.MODELS[model]["layers"]
    tp, cp = int(get("--parallelism.tensor-parallel-degree", 1)), int(get("--parallelism.context-parallel-degree", 1))
    pp, ep = int(get("--parallelism.pipeline-parallel-degree", 1)), int(get("--parallelism.expert-parallel-degree", 1))
    replicate = int(get("--parallelism.data-parallel-replicate-degree", 1))
    shard = int(get("--parallelism.data-parallel-shard-degree", -1))
    if shard < 0:
        diags.append(error("E0702", "the shard degree is -1 (the leftover ranks): parc needs the world size",
                           options.get("--parallelism.data-parallel-shard-degree", Option(None, source.span(0, 0))).span,
                           label="-1", help="write the degree explicitly"))
        return Imported("torchtitan", None, diags, sources)
    dp = replicate * shard
    reshard = get("--parallelism.fsdp-reshard-after-forward", "default")
    sharding = ("none" if shard == 1 else f"hsdp {replicate} x {shard}" if replicate > 1
                else "zero2" if reshard == "never" else "zero3")
    sp = flag("--parallelism.enable-sequence-parallel", "--parallelism.no-enable-sequence-parallel", True)
    seq, batch = int(get("--training.seq-len", 2048)), int(get("--training.global-batch-size", -1))
    local = int(get("--training.local-batch-size", 8))
    if flavour and flavour.max_seq is not None and flavour.max_seq != seq:
        diags.append(warning("W0701", f"`MAX_SEQ = {flavour.max_seq}` is not imported: the spec's sequence is "
                             f"`--training.seq-len` ({seq})", flavour.max_seq_span, label="the RoPE table's length",
                             help="compile the spec again so that the module and the command line agree"))
    micro = int(get("--parallelism.pipeline-parallel-microbatch-size", 1)) if pp > 1 else local
    if batch < 0:
        batch = local * dp
    recompute = "selective"
    for word, _ in others:
        if word.startswith("activation-checkpoint:"):
            recompute = word.split(":", 1)[1]
    recompute = {"memory-budget": "selective"}.get(recompute, recompute)
    lines = [f"# imported from {source.path} (torchtitan 0.3 options) by `parc import`",
             f"# not in the file: the GPU ({defaults.gpu}) and {defaults.gpus_per_node} GPUs per node"]
    axes = [(n, d) for n, d in (("tp", tp), ("cp", cp), ("dp", dp), ("pp", pp)) if d > 1] or [("dp", 1)]
    lines.append(" x ".join(f"{n} {d}" for n, d in axes) + f" on nodes({defaults.gpus_per_node} gpus, nvlink)")
    if ep > 1:
        lines.append(f"ep {ep} over " + " x ".join(n for n, d in (("tp", tp), ("cp", cp), ("dp", dp)) if d > 1))
    optimizer, clip = _torchtitan_optimizer(options, used)
    lines += [flavour_model_text(flavour) if flavour else f"model {model}", f"hardware {{ gpu {defaults.gpu} }}", "train {",
              f"  seq {seq}, global-batch {batch}, micro-batch {micro}",
              f"  precision {'fp8' if config in backend.FLOAT8_CONFIGS else 'bf16'}, optimizer {optimizer}, recompute {recompute}"]
    lines += ([f"  clip-grad-norm {clip}"] if clip else []) + ["}"]
    options_line = []
    compiled = flag("--compile.enable", "--compile.no-enable", False)
    components, component_diags = _compile_components(options, others)
    used.add("--compile.components")
    diags += component_diags
    if any(d.is_error for d in component_diags):
        return Imported("torchtitan", None, diags, sources)
    if compiled and "model" in components:
        options_line.append("compile on")
        if "loss" not in components:
            options_line.append("compile-loss off")
    elif compiled:
        option = options.get("--compile.components")
        diags.append(warning("W0703", f"`--compile.components {option.value if option else ''}` leaves the model eager: "
                             "imported as `compile off`", option.span if option else source.span(0, 0),
                             label="no `model` in the list",
                             help="torchtitan compiles the model only when `model` is in the list; parc models "
                                  "no compiled loss beside an eager model (write `model,loss` or `model`)"))
    if flag("--compile.enable-async-tensor-parallel", "--compile.no-enable-async-tensor-parallel", False):
        options_line.append("tp-overlap all")
    lines.append("target torchtitan" + (f" {{ {', '.join(options_line)} }}" if options_line else ""))
    if tp > 1:
        lines.append(f"tp {{ sequence-parallel {'on' if sp else 'off'} }}")
    if dp > 1:
        lines.append(f"dp {{ sharding {sharding} }}")
    if cp > 1:
        lines.append("cp { flavour all-gather }")
    if pp > 1:
        schedule_name = get("--parallelism.pipeline-parallel-schedule", "1F1B")
        schedule = next((k for k, v in backend.SCHEDULES.items() if v.lower() == str(schedule_name).lower()), None)
        if schedule is None:
            diags.append(error("E0702", f"pipeline schedule `{schedule_name}` has no parc name",
                               options["--parallelism.pipeline-parallel-schedule"].span, label="unknown schedule",
                               help=f"parc knows {', '.join(backend.SCHEDULES.values())}"))
            return Imported("torchtitan", None, diags, sources)
        a = int(get("--parallelism.pipeline-parallel-first-stage-less-layers", 1))
        b = int(get("--parallelism.pipeline-parallel-last-stage-less-layers", 1))
        per = get("--parallelism.pipeline-parallel-layers-per-stage")
        single = schedule in ("gpipe", "1f1b")
        stages = math.ceil((layers + a + b) / int(per)) if per else pp * (1 if single else 2)
        v = stages // pp
        split = backend.torchtitan_split(layers, stages, a, b)
        opts = [f"schedule {schedule}"] + ([f"virtual-stages {v}"] if not single else [])
        if split and len(set(split)) > 1:
            opts.append(f"split [{', '.join(map(str, split))}]")
        lines.append(f"pp {{ {', '.join(opts)} }}")
    steps = get("--training.steps")
    if steps is not None:
        lines.append(f"launch {{ steps {steps} }}")
    used.add("--training.disable-cuda-graphs")  # parc's model has no CUDA graphs either way
    diags += _unused(options, used, "torchtitan")
    for word, span in others:
        if not word.startswith("activation-checkpoint:") and not _component_word(word):
            diags.append(warning("W0701", f"`{word}` is not imported: parc has no setting for it", span,
                                 label="not an option", help="check the spec against the job"))
    return Imported("torchtitan", "\n".join(lines) + "\n", diags, sources)


TORCHTITAN_COMPONENTS = ("model", "loss")
"""What torchtitan's `compile.components` may name (`CompileConfig`; default both): the model's
blocks (`apply_compile`) and the loss (`BaseLoss._maybe_compile`: `"loss" in components`)."""


def _component_word(word: str) -> bool:
    return bool(word) and all(part in TORCHTITAN_COMPONENTS for part in word.split(","))


def _compile_components(options: dict[str, Option], others: list[tuple[str, Span]]) \
        -> tuple[tuple[str, ...], list[Diagnostic]]:
    """torchtitan's `--compile.components`, read as torchtitan reads it: one word after the
    option (or after `=`), split on commas (tyro's `list_str_rule` in `ConfigManager`,
    `nargs=1`, `args[0].split(",")`), so `model,loss`, `=model,loss`, `"model,loss"`, `model`
    and `loss` are its forms. A second word (`model loss`) is not one of them: tyro refuses the
    command line, so parc does too (E0702), rather than keep the first word. Absent, the
    default: both."""
    option = options.get("--compile.components")
    if option is None:
        return TORCHTITAN_COMPONENTS, []
    value = option.value if isinstance(option.value, str) else ""
    stray = [(w, sp) for w, sp in others if _component_word(w) and sp.start > option.span.start]
    if stray or not value:
        word, span = stray[0] if stray else ("", option.span)
        return TORCHTITAN_COMPONENTS, [error(
            "E0702", "`--compile.components` takes one comma-separated word" + (f": `{word}` is a second" if word else ""),
            span, label="torchtitan refuses this command line",
            help="torchtitan reads the list as one word split on commas: write `--compile.components model,loss`")]
    names = tuple(value.split(","))
    unknown = [n for n in names if n not in TORCHTITAN_COMPONENTS]
    diags = [warning("W0701", f"compile component `{n}` is not imported: torchtitan compiles `model` and `loss`",
                     option.span, label="not a component torchtitan reads",
                     help="torchtitan tests `\"model\" in` and `\"loss\" in` the list; other names do nothing")
             for n in unknown]
    return tuple(n for n in TORCHTITAN_COMPONENTS if n in names), diags


def _module_path(source: SourceFile, module: str) -> str:
    """Where torchtitan finds `--module a.b`: a/b.py in train.py's folder, which is the command
    line's (torchtitan.args sits beside train.py in the job folder)."""
    return os.path.join(os.path.dirname(source.path), *module.split(".")) + ".py"


def _module_source(source: SourceFile, module: str, read: Reader) -> SourceFile | None:
    path = _module_path(source, module)
    text = read(path)
    return None if text is None else SourceFile(path, text)


# ---------------------------------------------------------------------------------------------
# Megatron-LM


class _NotWhole(Exception):
    """A Megatron-LM option whose value is not a whole number (the option's name)."""


MEGATRON_EXAMPLES = {"--norm-epsilon": "1e-5", "--rotary-base": "500000"}
"""What the real-valued Megatron-LM options parc reads look like."""


class _NotPositive(Exception):
    """A Megatron-LM option whose value is not a positive number (the option's name)."""


def import_megatron(source: SourceFile, defaults: Defaults) -> Imported:
    """`_import_megatron`, with an option that is not a whole number reported where it stands
    (E0702) instead of ending the import as an internal error."""
    try:
        return _import_megatron(source, defaults)
    except _NotWhole as exc:
        name, least = exc.args
        option = read_options(source)[0][name]
        return Imported("megatron", None, [error(
            "E0702", f"`{name}` is not a whole number of {least} or more", option.span,
            label=f"{option.value or 'no value'}",
            help=f"give `{name}` a whole number of {least} or more, as Megatron-LM's argument parser requires")])
    except _NotPositive as exc:
        name, = exc.args
        option = read_options(source)[0][name]
        return Imported("megatron", None, [error(
            "E0702", f"`{name}` is not a positive number", option.span, label=f"{option.value or 'no value'}",
            help=f"give `{name}` a positive number (e.g. `{name} {MEGATRON_EXAMPLES[name]}`)")])


def _import_megatron(source: SourceFile, defaults: Defaults) -> Imported:
    options, others = read_options(source)
    used: set[str] = set()

    def get(name: str, default=None):
        used.add(name)
        o = options.get(name)
        return default if o is None else (o.value if o.value is not None else True)

    def has(name: str) -> bool:
        used.add(name)
        return name in options

    def whole(name: str, default: int | None = None, least: int = 0) -> int:
        value = get(name, default)
        if value is default:
            return default
        if isinstance(value, bool) or not str(value).isdigit() or int(value) < least:  # no value, a sign, a word
            raise _NotWhole(name, least)
        return int(value)

    def positive(name: str, default: float) -> float:
        value = get(name, default)  # the command line's text, or True for an option without a value
        try:
            number = None if isinstance(value, bool) else _positive_number(float(value))
        except ValueError:
            number = None
        if number is None:
            raise _NotPositive(name)
        return number

    diags: list[Diagnostic] = []
    need = [n for n in ("--num-layers", "--hidden-size", "--num-attention-heads", "--seq-length") if n not in options]
    if need:
        return Imported("megatron", None, [error("E0702", f"no {', '.join(need)} in the arguments", source.span(0, 0),
                                                 label="not a pretrain_gpt.py command line",
                                                 help="pass the launch script or argument file of a Megatron-LM job")])
    layers, hidden = whole("--num-layers", least=1), whole("--hidden-size", least=1)
    heads = whole("--num-attention-heads", least=1)
    swiglu = has("--swiglu")
    ffn = whole("--ffn-hidden-size", 4 * hidden)
    kv = whole("--num-query-groups", heads) if has("--group-query-attention") else heads
    used.add("--num-query-groups")
    position = {"rope": "rope", "learned_absolute": "learned", "none": "none"}.get(
        get("--position-embedding-type", "learned_absolute"), "learned")
    fields = {"layers": layers, "hidden": hidden, "ffn": ffn, "heads": heads, "kv_heads": kv,
              "head_dim": whole("--kv-channels", hidden // heads),
              # Megatron-LM's NullTokenizer has its --vocab-size ids and an end-of-document one
              "vocab": whole("--vocab-size", 50257) + (1 if get("--tokenizer-type") == "NullTokenizer" else 0),
              "tied_embeddings": not has("--untie-embeddings-and-output-weights"),
              "activation": "swiglu" if swiglu else "gelu",
              "norm": "rmsnorm" if get("--normalization", "LayerNorm") == "RMSNorm" else "layernorm",
              "position": position, "norm_eps": positive("--norm-epsilon", NORM_EPS)}
    if position == "rope":  # Megatron-LM's --rotary-base: an int, 10000 by default
        fields["rope_theta"] = positive("--rotary-base", ROPE_THETA)
    if has("--multi-latent-attention"):  # Megatron-LM's MLA options, with its argparse defaults
        fields.update(kv_heads=heads, kv_lora_rank=whole("--kv-lora-rank", 32), q_lora_rank=whole("--q-lora-rank", 0),
                      head_dim=whole("--qk-head-dim", 128), rope_head_dim=whole("--qk-pos-emb-head-dim", 64),
                      v_head_dim=whole("--v-head-dim", 128))
    if has("--mtp-num-layers"):
        fields["mtp_layers"] = whole("--mtp-num-layers", 0)
    if has("--num-experts"):
        expert_ffn = whole("--moe-ffn-hidden-size", ffn)
        fields.update(experts=whole("--num-experts"), top_k=whole("--moe-router-topk", 2), expert_ffn=expert_ffn,
                      shared_experts=whole("--moe-shared-expert-intermediate-size", 0) // expert_ffn)
        freq = get("--moe-layer-freq")
        if isinstance(freq, str) and freq.startswith("["):
            fields["moe_from"] = freq.strip("[]").split(",").index("1")
    used.update(("--tokenizer-type", "--mock-data", "--disable-bias-linear", "--moe-grouped-gemm",
                 "--max-position-embeddings", "--group-query-attention"))

    def accept(name: str, *values: str) -> None:
        """An option whose value is what parc's job does anyway (any value when none is named):
        read without a setting; another value stays reported (W0701)."""
        if name in options and (not values or options[name].value in values):
            used.add(name)

    if has("--multi-latent-attention"):  # what parc's MLA is: plain RoPE, unfused, latents normalised
        accept("--rope-type", "rope")  # (MLATransformerConfig's default is YaRN)
        accept("--no-rope-fusion")
        accept("--qk-layernorm")
    for name in ("--hidden-dropout", "--attention-dropout"):  # parc's models have none: 0 is parc's own
        if name in options and _is_zero(options[name].value):
            used.add(name)
    # what parc's Megatron launcher always writes: its optimizer's constants, the data-parallel
    # overlap, the attention mask in the kernel, NVIDIA's delayed-scaling preset, the dispatcher
    for name, values in (("--lr", ("3e-4", "0.0003")), ("--lr-decay-style", ("constant",)),
                         ("--adam-beta1", ("0.9",)), ("--adam-beta2", ("0.95",)), ("--adam-eps", ("1e-08", "1e-8")),
                         ("--sgd-momentum", ("0.9",)), ("--overlap-grad-reduce", ()), ("--overlap-param-gather", ()),
                         ("--no-gradient-accumulation-fusion", ()), ("--no-create-attention-mask-in-dataloader", ()),
                         ("--fp8-amax-history-len", ("1024",)), ("--fp8-param-gather", ()),
                         ("--reuse-grad-buf-for-mxfp8-param-ag", ()),
                         ("--fp8-amax-compute-algo", ("max",)), ("--moe-token-dispatcher-type", ("alltoall",)),
                         ("--moe-permute-fusion", ()), ("--moe-shared-expert-overlap", ()),
                         ("--moe-token-drop-policy", ("position",))):
        accept(name, *values)
    if fields.get("top_k") == 1:
        accept("--moe-router-pre-softmax")  # parc's router keeps the softmax probability of its one expert
    if "experts" in fields:
        balance, coeff = options.get("--moe-router-load-balancing-type"), options.get("--moe-aux-loss-coeff")
        kind = balance.value if balance else "aux_loss"  # Megatron-Core's default, at coefficient 0
        if kind == "aux_loss" and coeff is not None and not _is_zero(coeff.value):
            fields["moe_balance"] = f"aux-loss {coeff.value}"
            used.update(("--moe-router-load-balancing-type", "--moe-aux-loss-coeff"))
        elif kind in ("aux_loss", "none"):
            used.update(("--moe-router-load-balancing-type", "--moe-aux-loss-coeff"))
        capacity = options.get("--moe-expert-capacity-factor")
        if capacity is not None and capacity.value is not None:
            fields["capacity_factor"] = capacity.value
            used.add("--moe-expert-capacity-factor")
    tp, pp = whole("--tensor-model-parallel-size", 1), whole("--pipeline-model-parallel-size", 1)
    cp, ep = whole("--context-parallel-size", 1), whole("--expert-model-parallel-size", 1)
    etp = whole("--expert-tensor-parallel-size", tp)
    world = whole("--world-size", 0) or None
    dp_words = [o for o in ("--data-parallel-size",) if o in options]
    if not dp_words and world is None:
        dp = defaults.dp
    else:
        dp = whole("--data-parallel-size", 0) or (world // (tp * pp * cp))
    micro, batch = whole("--micro-batch-size", 1), whole("--global-batch-size", 0) or whole("--micro-batch-size", 1) * dp
    # NVFP4 is Megatron-LM's default (and, beside `custom`, only) `--fp4-recipe`; another is reported
    fp4_recipe = options.get("--fp4-recipe")
    nvfp4 = "--fp4-format" in options and (fp4_recipe is None or fp4_recipe.value == "nvfp4")
    if nvfp4:
        used.update(("--fp4-format", "--fp4-recipe"))
    precision = "nvfp4" if nvfp4 else "fp8" if has("--fp8-format") else "fp16" if has("--fp16") else "bf16"
    has("--bf16")
    granularity, method, count = get("--recompute-granularity"), get("--recompute-method"), get("--recompute-num-layers")
    recompute = ("none" if granularity is None else "selective" if granularity == "selective"
                 else "full" if method in (None, "uniform") else f"full {count}")
    modules = str(get("--recompute-modules") or "").split() if granularity == "selective" else []
    if modules and modules != ["core_attn"]:  # Megatron-Core's own default is `recompute selective` alone
        recompute = f"selective [{', '.join(modules)}]"  # parc's parser reports a name it does not know
    offload = whole("--cpu-offloading-num-layers", 0)  # Megatron-LM turns offloading on when above 0
    if "--vocab-size" not in options:
        diags.append(warning("W0701", "no `--vocab-size`: the vocabulary is taken as GPT-2's 50,257", source.span(0, 0),
                             label="the tokenizer decides it", help="edit `vocab` in the spec's model block"))
    lines = [f"# imported from {source.path} (Megatron-LM pretrain_gpt.py options) by `parc import`",
             f"# not in the file: the GPU ({defaults.gpu}), {defaults.gpus_per_node} GPUs per node"
             + ("" if dp_words or world else f", and dp {dp} (`parc import --dp`)")]
    axes = [(n, d) for n, d in (("tp", tp), ("cp", cp), ("dp", dp), ("pp", pp)) if d > 1] or [("dp", 1)]
    lines.append(" x ".join(f"{n} {d}" for n, d in axes) + f" on nodes({defaults.gpus_per_node} gpus, nvlink)")
    if ep > 1:
        fold = [n for n, d in (("tp", tp), ("cp", cp), ("dp", dp)) if d > 1 and (n != "tp" or etp == 1)]
        lines.append(f"ep {ep} over {' x '.join(fold)}")
    clip = _megatron_clip(options, used)
    lines += [model_text(fields), f"hardware {{ gpu {defaults.gpu} }}", "train {",
              f"  seq {whole('--seq-length', least=1)}, global-batch {batch}, micro-batch {micro}",
              f"  precision {precision}, optimizer {_megatron_optimizer(options, used)}, "
              f"recompute {recompute}"] + ([f"  offload-activations {offload}"] if offload else []) \
        + ([f"  clip-grad-norm {clip}"] if clip else []) + ["}"]
    target = []
    # the option wins over Transformer Engine's variables (Megatron-Core refuses the two where they
    # disagree); `local`, Megatron-Core's own attention, materialises the scores as `unfused` does
    backend = get("--attention-backend", None) or _te_attention_of(others)
    if backend in ("unfused", "local"):
        target.append("flash-attention off")
    elif backend in ("fused", "flash"):  # `auto` is the spec's default; `local` has no spec
        target.append(f"attention-backend {backend}")
    if has("--tp-comm-overlap"):
        target.append("tp-overlap all")
    elif has("--no-async-tensor-model-parallel-allreduce"):
        target.append("tp-overlap none")
    if has("--grad-reduce-in-bf16"):
        target.append("grad-reduce bf16")
    elif has("--accumulate-allreduce-grads-in-fp32") and precision == "fp16":
        target.append("grad-reduce fp32")
    recipe = options.get("--fp8-recipe")
    if precision == "fp8" and recipe is not None and recipe.value in ("delayed", "tensorwise", "mxfp8", "blockwise"):
        used.add("--fp8-recipe")
        if recipe.value != "delayed":  # Megatron-LM's default, and the spec's
            target.append(f"fp8-recipe {recipe.value}")
    zero1 = has("--use-distributed-optimizer") and dp * cp > 1  # the spec's `sharding zero1`
    if precision == "fp8" and zero1 and "--fp8-param-gather" not in options:
        target.append("fp8-params off")  # Megatron-LM's default: bf16 weights beside cached fp8 casts
    if precision == "nvfp4" and zero1 and not has("--fp4-param-gather"):
        target.append("fp8-params off")  # the same choice for NVFP4 weights (`targets.fp4_params`)
    lines.append("target megatron" + (f" {{ {', '.join(target)} }}" if target else ""))
    if tp > 1:
        lines.append(f"tp {{ sequence-parallel {'on' if has('--sequence-parallel') else 'off'} }}")
    if dp * cp > 1:
        sharding = "zero1" if has("--use-distributed-optimizer") else "zero3" if has("--use-torch-fsdp2") else "none"
        bucket = get("--ddp-bucket-size") if sharding == "zero1" else None
        lines.append(f"dp {{ sharding {sharding}" + (f", bucket {int(bucket)}" if bucket else "") + " }")
    if cp > 1:
        flavour = {"p2p": "ring", "all_gather": "all-gather", "a2a": "all-to-all"}.get(get("--cp-comm-type", "p2p"), "ring")
        lines.append(f"cp {{ flavour {flavour} }}")
    if pp > 1:
        per = get("--num-layers-per-virtual-pipeline-stage")
        # Megatron-Core's accounting: the embedding and (or) the loss count as a layer each
        ends = (has("--account-for-embedding-in-pipeline-split"), has("--account-for-loss-in-pipeline-split"))
        units = layers + sum(ends)
        v = units // (pp * int(per)) if per else 1
        opts = [f"schedule interleaved-1f1b, virtual-stages {v}"] if per else ["schedule 1f1b"]
        first, last = get("--decoder-first-pipeline-num-layers"), get("--decoder-last-pipeline-num-layers")
        if first or last:
            f_, l_ = int(first or 0), int(last or 0)
            middle = (layers - f_ - l_) // (pp - 2) if pp > 2 else 0
            opts.append(f"split [{', '.join(map(str, [f_] + [middle] * (pp - 2) + [l_]))}]")
        elif any(ends):
            each = units // (pp * v)
            split = [each - ends[0]] + [each] * (pp * v - 2) + [each - ends[1]]
            opts.append(f"split [{', '.join(map(str, split))}]")
        lines.append(f"pp {{ {', '.join(opts)} }}")
    steps = get("--train-iters")
    if steps is not None:
        lines.append(f"launch {{ steps {steps} }}")
    diags += _unused(options, used, "Megatron-LM")
    return Imported("megatron", "\n".join(lines) + "\n", diags)


# ---------------------------------------------------------------------------------------------


def import_source(source: SourceFile, defaults: Defaults | None = None, read: Reader = read_file) -> Imported:
    """Recognise the file by its content and import it; `read` reads the other files it names
    (a torchtitan flavour module), from disk unless given."""
    defaults = defaults or Defaults()
    text = source.text.lstrip()
    if text.startswith("{"):
        return import_hf(source)
    if "--parallelism." in text or "--module" in text or "--training." in text:
        return import_torchtitan(source, defaults, read)
    if "--num-layers" in text or "--tensor-model-parallel-size" in text or "pretrain_gpt" in text:
        return import_megatron(source, defaults)
    return Imported("unknown", None, [error(
        "E0702", "not a torchtitan command line, a Megatron-LM launch script or a config.json", source.span(0, 0),
        label="unrecognised", help="pass torchtitan.args, a pretrain_gpt.py launch script, or config.json")])
