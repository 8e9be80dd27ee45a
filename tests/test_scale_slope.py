"""benchmarks/scale_slope.py: every series of published runs that differ only in scale, and how
the model's error moves along it (docs/time-model.md, "Throughput against GPU count")."""

from __future__ import annotations

import importlib
import statistics
import sys

import pytest

from .conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
scale_slope = importlib.import_module("scale_slope")

SPEC = """# source
job {job}
tp 8 x dp {dp} on nodes(8 gpus, nvlink)
model llama3-70b
hardware {{ gpu h100-sxm, nodes {nodes}, network 8 x 400 Gb/s }}
train {{
  seq 8192, global-batch {gbs}, micro-batch 1
}}
"""


def test_a_series_is_the_same_spec_at_another_scale():
    """Two runs of one series differ only in dp, nodes and global batch (and their comments and
    job names); another tp is another series."""
    one = SPEC.format(job="a", dp=4, nodes=4, gbs=64)
    two = SPEC.format(job="b", dp=16, nodes=16, gbs=256)
    assert scale_slope.scale_key(one) == scale_slope.scale_key(two)
    assert scale_slope.scale_key(one) != scale_slope.scale_key(one.replace("tp 8", "tp 4"))


def test_the_slope_is_points_per_doubling():
    """By hand: 0, 1 and 2 points of error at 8, 16 and 32 GPUs rise 1 point a doubling; a flat
    series reads 0; three runs at two GPU counts make no series."""
    assert scale_slope.slope(((8, 0.0), (16, 0.01), (32, 0.02))) == pytest.approx(1.0)
    assert scale_slope.slope(((8, 0.05), (64, 0.05), (512, 0.05))) == pytest.approx(0.0)
    runs = [("a", 8, SPEC.format(job="a", dp=1, nodes=1, gbs=8), 0.0),
            ("b", 16, SPEC.format(job="b", dp=2, nodes=2, gbs=16), 0.02),
            ("c", 16, SPEC.format(job="c", dp=2, nodes=2, gbs=32), 0.04)]
    assert scale_slope.series_of("f", runs) == []
    runs.append(("d", 32, SPEC.format(job="d", dp=4, nodes=4, gbs=32), 0.04))
    (series,) = scale_slope.series_of("f", runs)
    assert series.first == "a" and [g for g, _ in series.points] == [8, 16, 16, 32]


def test_the_published_series_and_the_docs_figures():
    """Every file's series, evaluated as `fidelity.py --published` does: at least twenty-five, each
    of three GPU counts or more, and the doc quotes the count and the median slope as computed."""
    scaling = importlib.import_module("scaling_check")
    found = scale_slope.all_series()
    assert len(found) >= 25
    assert all(len({g for g, _ in s.points}) >= scale_slope.MIN_COUNTS for s in found)
    line = scaling.slopes_line(found)
    assert f"of the {len(found)} series" in line
    assert f"{statistics.median(s.slope for s in found):+.2f} points per doubling" in line
    assert line in (ROOT / "docs" / "time-model.md").read_text().replace("\n", " ")
