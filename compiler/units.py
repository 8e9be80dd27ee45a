"""Units a spec may write after a number, and what they multiply it by.

Every quantity inside parc is in base units: bytes, bytes per second, FLOP per second.
Bits and bytes are both accepted for bandwidth because vendors quote NICs in Gb/s and NVLink in
GB/s; the case of the `b` decides (`400 Gb/s` = 50 GB/s).
"""

from __future__ import annotations

BYTES: dict[str, int] = {
    "B": 1,
    "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
    "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
}

BANDWIDTH: dict[str, float] = {
    "Mb/s": 10**6 / 8, "Gb/s": 10**9 / 8, "Tb/s": 10**12 / 8,
    "MB/s": 10**6, "GB/s": 10**9, "TB/s": 10**12,
}

FLOPS: dict[str, float] = {
    "GFLOP/s": 1e9, "TFLOP/s": 1e12, "PFLOP/s": 1e15,
    "GFLOPS": 1e9, "TFLOPS": 1e12, "PFLOPS": 1e15,
}

POWER: dict[str, float] = {"W": 1.0, "kW": 1e3}
"""Watts: a GPU's power limit (`power-limit 500 W`)."""

BATCH: dict[str, str] = {
    "seqs": "sequences", "sequences": "sequences", "samples": "sequences", "tokens": "tokens",
}

KINDS: dict[str, dict] = {"bytes": BYTES, "bandwidth": BANDWIDTH, "flops": FLOPS, "power": POWER}

EXAMPLES = {"bytes": "80 GB", "bandwidth": "400 Gb/s", "flops": "989 TFLOP/s", "power": "500 W"}


def unit_kind(unit: str) -> str | None:
    for kind, table in KINDS.items():
        if unit in table:
            return kind
    return None


def case_fix(unit: str, kind: str) -> str | None:
    """`gb` -> `GB`, `gbps` -> `Gb/s`: the unit a user probably meant, if any."""
    table = KINDS[kind]
    folded = {u.lower().replace("/", "").replace("ps", "/s"): u for u in table}
    key = unit.lower().replace("/", "").replace("ps", "/s")
    if key in folded:
        return folded[key]
    for u in table:
        if u.lower() == unit.lower():
            return u
    return None


TOKEN_SCALES: dict[str, int] = {"K": 10**3, "M": 10**6, "B": 10**9, "G": 10**9, "T": 10**12, "P": 10**15}
"""Decimal multipliers a token budget may carry, as papers write them: `15T` = 15 x 10^12 tokens
(Llama 3), `300B` = 3 x 10^11 (GPT-3). `B` is billion, as in model and token counts, not bytes."""

PRICES: dict[str, float] = {
    "$/gpu-hour": 1.0, "$/GPU-hour": 1.0, "$/gpu-hr": 1.0, "$/gpu-h": 1.0,
    "USD/gpu-hour": 1.0, "usd/gpu-hour": 1.0,
}
"""Units of a price: US dollars per GPU-hour, the unit clouds list GPU capacity in."""

DURATIONS: dict[str, float] = {
    "days": 86_400.0, "day": 86_400.0, "d": 86_400.0,
    "hours": 3_600.0, "hour": 3_600.0, "h": 3_600.0,
    "weeks": 604_800.0, "week": 604_800.0,
}
"""Units of a deadline, in seconds (no months or years: their length varies)."""

MONEY_SCALES: dict[str, int] = {"K": 10**3, "k": 10**3, "M": 10**6, "B": 10**9}
"""Decimal multipliers of a dollar amount: `$2.5M`, `$750K`."""
