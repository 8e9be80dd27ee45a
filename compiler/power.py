"""A GPU under a power limit: how far its clock, and so its peak, falls.

Why the compiler and not the benchmarks: a cluster run under `nvidia-smi -pl` (torchtitan's H100
hosts at 500 W) computes slower than its datasheet, and a spec says so with `hardware {
power-limit 500 W }`; every prediction (explain, search, the published comparisons) must then
derate the same way, from one law in one place.

The law. A GPU at its power limit is at the top of its DVFS curve: dynamic power goes as
f V^2 and, in that range, the voltage falls in proportion to the clock, so power goes as f^3 and
the sustained clock under a limit P of a board rated P0 is f0 (P / P0)^(1/3). Dense matrix
throughput scales with the clock: the peak is derated by the same factor (500 W on a 700 W H100
SXM: 0.894, 884 of 989 TFLOP/s, between the 400 W H100 NVL's 835 and the SXM's 989, as NVIDIA's
datasheets list them). HBM bandwidth does not follow the SM clock (its own clock domain); a
limit at or above the board power changes nothing. NVIDIA's drivers refuse limits below about a
quarter to a third of the board power (H100 SXM: 200 of 700 W; A100 SXM: 100 of 400 W), where
the law above no longer holds: the front end refuses them (E0370).

The same law compares two parts of one generation at their own board powers
(`power_limited_throughput`): with power going as N f^3 over N SMs, a part of N SMs held at P
runs its clock at (P / N)^(1/3) and its tensor cores at N f ~ N^(2/3) P^(1/3). It carries a
measured matmul maximum from a swept part to an unswept sibling (`kernels.MAMF_CARRIED`).
"""

from __future__ import annotations

CLOCK_EXPONENT = 1.0 / 3.0
"""Clock (and peak) ~ power^(1/3) near the top of the voltage-frequency curve (module doc)."""
LOWEST_SHARE = 0.25
"""The lowest limit the law is used for, as a share of the board power (module doc)."""

BOARD_POWER = {
    "a100-40gb": 400.0,  # datasheet: A100 SXM4 40 GB, 400 W
    "a100-80gb": 400.0,  # datasheet: A100 SXM4 80 GB, 400 W
    "h100-sxm": 700.0,  # datasheet: H100 SXM5, up to 700 W
    "h200": 700.0,  # datasheet: H200 SXM, up to 700 W
    "h800": 700.0,  # same board as H100 SXM
    "b200": 1000.0,  # DGX B200 datasheet: 1,000 W per GPU
    "gb200-nvl72": 1200.0,  # GB200 NVL72: 1,200 W per Blackwell GPU
    "b300": 1100.0,  # HGX B300: 1,100 W per Blackwell Ultra GPU
    "gb300-nvl72": 1400.0,  # GB300 NVL72: 1,400 W per Blackwell Ultra GPU
    "mi300x": 750.0,  # datasheet: MI300X OAM, 750 W
}
"""Board power (W) of the catalogue's GPUs, the P0 of the law. A GPU defined in a spec has none:
a power limit on it is refused (E0370)."""


def power_limited_throughput(sms: int, board: float, measured_sms: int, measured_board: float) -> float:
    """Dense tensor-core throughput of a part with `sms` SMs held at its board power `board`,
    relative to a part of the same generation with `measured_sms` held at `measured_board`: both
    at the top of one voltage-frequency curve (module doc), (sms / measured_sms)^(2/3) x
    (board / measured_board)^(1/3). Checked against the two parts a sweep measured at their board
    powers: B200 (1,000 W) to GB200 (1,200 W), 148 SMs each, gives 1.063 where the sweeps measured
    1.044 in BF16 and 1.053 in FP8 (tests/test_power.py). The SM-count factor has no such pair: it
    follows from the same power law, untested by a measurement."""
    return (sms / measured_sms) ** (1.0 - CLOCK_EXPONENT) * (board / measured_board) ** CLOCK_EXPONENT


def clock_fraction(limit: float | None, board: float | None) -> float:
    """The share of the datasheet clock (and dense peak) a GPU of board power `board` sustains
    under a power limit `limit` (both watts; None: no limit, or unknown board power)."""
    if not limit or not board or limit >= board:
        return 1.0
    return (limit / board) ** CLOCK_EXPONENT
