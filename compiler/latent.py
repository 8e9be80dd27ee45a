"""Multi-head latent attention's projections: the one list parameters, FLOPs, GEMM times and
bytes all read.

MLA (DeepSeek-V2, Liu et al. 2024, section 2.1; DeepSeek-V3 keeps it) replaces the Q, K and V
projections by two low-rank chains. Keys and values: the hidden state goes down to a latent of
`kv_lora` plus one RoPE key of `rope` dims shared by every head (`kv_down`); the latent is
normalised and comes up to every head's key part (`head_dim`) and value (`v_dim`) (`kv_up`).
Queries: down to their own latent `q_lora` and up to every head's `head_dim + rope`
(`q_down`, `q_up`), or straight up from the hidden state when `q_lora` is 0 (`q_proj`). The
output projection reads `heads x v_dim`.

How Megatron-Core splits them over tensor parallelism (megatron/core/transformer/
multi_latent_attention.py at core_v0.16.0, `MLASelfAttention.__init__` with the Transformer
Engine layer spec): the down projections are `TELinear(parallel_mode="duplicated")`, whole on
every tp rank and run on the rank's own (sequence-parallel) tokens; the up projections are
column-parallel (each rank its heads); the output projection row-parallel."""

from __future__ import annotations

from dataclasses import dataclass

COLUMN, ROW, DUPLICATED = "column", "row", "duplicated"


@dataclass(frozen=True, slots=True)
class Linear:
    """One weight matrix of the attention: `inputs` x `outputs` elements, split over tp as
    `split` says (column: outputs; row: inputs; duplicated: whole on every rank)."""

    name: str
    inputs: int
    outputs: int
    split: str

    @property
    def weights(self) -> int:
        return self.inputs * self.outputs

    def local(self, tp: int) -> tuple[float, float]:
        """(inputs, outputs) of this rank's part."""
        if self.split == COLUMN:
            return self.inputs, self.outputs / tp
        if self.split == ROW:
            return self.inputs / tp, self.outputs
        return self.inputs, self.outputs


def mla_linears(hidden: int, heads: int, head_dim: int, q_lora: int, kv_lora: int, rope: int,
                v_dim: int) -> tuple[Linear, ...]:
    """The attention's matrices in the order the forward runs them (module doc)."""
    qk = head_dim + rope
    queries = ((Linear("q_down", hidden, q_lora, DUPLICATED), Linear("q_up", q_lora, heads * qk, COLUMN))
               if q_lora else (Linear("q_proj", hidden, heads * qk, COLUMN),))
    return queries + (Linear("kv_down", hidden, kv_lora + rope, DUPLICATED),
                      Linear("kv_up", kv_lora, heads * (head_dim + v_dim), COLUMN),
                      Linear("o_proj", heads * v_dim, hidden, ROW))


def latent_norm_widths(q_lora: int, kv_lora: int) -> tuple[int, ...]:
    """Widths of the norms MLA applies to its latents (`q_layernorm`, `kv_layernorm`): one weight
    per element under RMSNorm, each before its up projection."""
    return ((q_lora,) if q_lora else ()) + (kv_lora,)


def latent_width(q_lora: int, kv_lora: int, rope: int) -> int:
    """Elements per token the down projections write: the query latent, the key-value latent and
    the shared RoPE key. Under sequence parallelism these are what each layer all-gathers before
    its up projections, instead of the hidden state."""
    return q_lora + kv_lora + rope
