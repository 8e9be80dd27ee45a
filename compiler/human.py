"""Numbers for people, at every scale: a tiny model and a 405B one both read sensibly.

`parc explain specs/tiny.par` once printed "0.0 B parameters", every memory cell "0.0 GiB" and
"MFU 0.0 %": one fixed unit does not scale down. Each helper picks the unit from the value (or,
for a table, from its largest value, so a column stays comparable), and a share that is not zero
never prints as zero.
"""

from __future__ import annotations

BINARY: tuple[tuple[str, int], ...] = (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))
DECIMAL_COUNTS: tuple[tuple[str, float], ...] = (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3))


def count(value: float) -> str:
    """1.2 K, 45.3 M, 405.9 B: parameters and other counts, one decimal in the largest unit."""
    for unit, scale in DECIMAL_COUNTS:
        if abs(value) >= scale:
            return f"{value / scale:,.1f} {unit}"
    return f"{value:,.0f}"


def byte_unit(largest: float) -> tuple[str, int]:
    """The binary unit a column of byte counts is written in: the largest unit in which its
    largest value is at least 1 (B below 1 KiB)."""
    for unit, scale in BINARY:
        if abs(largest) >= scale:
            return unit, scale
    return "B", 1


def in_unit(value: float, unit: tuple[str, int]) -> str:
    """A byte count in a column's unit (bytes as whole numbers, the rest with one decimal)."""
    name, scale = unit
    return f"{value:,.0f}" if scale == 1 else f"{value / scale:,.1f}"


def size(value: float) -> str:
    """A byte count in its own unit: 67.4 GiB, 3.1 MiB, 812 B."""
    unit = byte_unit(value)
    return f"{in_unit(value, unit)} {unit[0]}"


def percent(share: float, digits: int = 1) -> str:
    """A share as a percentage with `digits` decimals; a share too small for them keeps two
    significant digits instead of reading 0.0 % (an MFU of 0.00074 % is not zero)."""
    value = share * 100
    if value == 0 or abs(value) >= 10 ** -digits:
        return f"{value:.{digits}f}%"
    return f"{value:.2g}%"
