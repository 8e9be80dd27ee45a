"""Built-in catalogues: GPUs and model presets, each figure with its source."""

from __future__ import annotations


def catalog_reference() -> str:
    """The GPU catalogue and model presets as Markdown tables: generated into docs/language.md."""
    from . import gpus, models

    out = ["### GPUs\n", "| name | part | HBM | BF16 dense | FP8 dense | FP4 dense | intra-node link (one way) | "
           "NVLink domain | default node | list price |", "|---|---|---|---|---|---|---|---|---|---|"]
    for name, g in gpus.GPUS.items():
        fp8 = f"{g['fp8_flops'] / 1e12:,.0f} TFLOP/s" if g["fp8_flops"] else "-"
        fp4 = f"{g['fp4_flops'] / 1e12:,.0f} TFLOP/s" if g.get("fp4_flops") else "-"
        price = f"${g['price']:,.2f}/GPU-hour" if g.get("price") else "-"
        out.append(
            f"| `{name}` | {g['description']} | {g['hbm_bytes'] / 2**30:,.1f} GiB | {g['bf16_flops'] / 1e12:,.0f} TFLOP/s "
            f"| {fp8} | {fp4} | {g['link_bandwidth'] / 1e9:,.0f} GB/s | {g['nvlink_domain']} | "
            f"{g['gpus_per_node']} GPUs, {g['nics']} x {g['nic_bandwidth'] * 8 / 1e9:,.0f} Gb/s | {price} |")
    out.append("\nSources for every figure are comments in `compiler/catalog/gpus.py`. List prices (dollars per "
               "GPU-hour, on demand) are the default of `hardware { price ... }`: "
               + "; ".join(f"`{name}`: {g['price_source']}" for name, g in gpus.GPUS.items() if g.get("price"))
               + ". Where none is listed, state one. Aliases: "
               + ", ".join(f"`{a}`" for a in sorted(gpus.ALIASES)) + ".\n")
    out += ["### Model presets\n", "| name | layers | hidden | ffn | heads | kv heads | vocab | MoE |",
            "|---|---|---|---|---|---|---|---|"]
    for name, m in models.MODELS.items():
        moe = (f"{m['experts']} experts, top-{m['top_k']}, expert ffn {m['expert_ffn']}"
               + (f", {m['shared_experts']} shared" if m.get("shared_experts") else "")) if m.get("experts") else "-"
        kv = f"MLA, latent {m['kv_lora_rank']}" if m.get("kv_lora_rank") else m.get("kv_heads", m["heads"])
        out.append(f"| `{name}` | {m['layers']} | {m['hidden']:,} | {m['ffn']:,} | {m['heads']} | {kv} "
                   f"| {m['vocab']:,} | {moe} |")
    out.append("\nEach preset cites its source in `compiler/catalog/models.py`.\n")
    return "\n".join(out)
