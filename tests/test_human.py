"""Human units at every scale (issue 17: a tiny model read "0.0 B parameters", "0.0 GiB", "MFU 0.0 %")."""

from __future__ import annotations

from parc.human import byte_unit, count, in_unit, percent, size


def test_counts_take_their_own_unit():
    assert [count(n) for n in (0, 999, 1_000, 328_832, 7_240_000, 405_900_000_000, 1.0e12)] == [
        "0", "999", "1.0 K", "328.8 K", "7.2 M", "405.9 B", "1.0 T"]


def test_byte_sizes_are_binary_and_scale_down():
    assert [size(n) for n in (0, 812, 1024, 3 * 1024 * 1024 + 100 * 1024, 67.4 * 2**30, 2**41)] == [
        "0 B", "812 B", "1.0 KiB", "3.1 MiB", "67.4 GiB", "2.0 TiB"]
    unit = byte_unit(2 * 2**20)
    assert unit == ("MiB", 2**20) and in_unit(300 * 1024, unit) == "0.3"


def test_a_share_that_is_not_zero_never_reads_zero():
    assert percent(0.313) == "31.3%" and percent(0.0) == "0.0%" and percent(1.0) == "100.0%"
    assert percent(7.4e-6) == "0.00074%" and percent(0.0004) == "0.04%"
    assert percent(0.8, 0) == "80%" and percent(2.4e-5, 0) == "0.0024%"
