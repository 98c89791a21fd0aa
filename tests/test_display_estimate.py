"""What `harness estimate` prints: each basis of the breakdown once, under a marker its rows show."""
import types
from pathlib import Path

from rich.console import Console

from harness import platform as platforms
from harness.display import estimate as display_estimate
from harness.estimate.calibration import Launch
from harness.estimate.model import Priced, ShapeEstimate
from harness.estimate.runner import EstimateRun, ShapeRun
from harness.submission import Submission

KERNEL_BASIS = ("launch (facts) + kernel model, uncalibrated: gfx950 compile of AOT_SPECS 'gfx950 default', loop "
                "per wave per iteration 370 VALU + 14 MFMA, 18432 B loaded per program; not priced: LDS")
SHAPES = [(4, 1024), (4, 8192), (32, 1024), (32, 8192), (64, 1024), (64, 8192), (256, 1024), (256, 8192)]


def shape_run(batch: int, kv: int) -> ShapeRun:
    """One shape's estimate: a fixed-cost call and three copies, and two Triton kernels on one long basis."""
    priced = [Priced(Launch("python", "custom_kernel call"), 5.0, 5.0, 5.0, "fixed (facts)", True)]
    priced += [Priced(Launch("torch", f"aten.copy_{i}"), 1.0, 1.0, 1.0, "fixed (facts)", True) for i in range(3)]
    priced += [Priced(Launch("triton", name), kv / 100, kv / 200, kv / 50, KERNEL_BASIS, False)
               for name in ("_attention", "_merge")]
    us = sum(p.us for p in priced)
    estimate = ShapeEstimate((batch, kv), us, us * 0.8, us * 1.5, us + 6, us * 0.8, us * 1.5 + 12, priced)
    return ShapeRun({"batchsize": batch, "qseqlen": 1, "kvseqlen": kv, "seed": 1}, estimate, [kv])


def estimate_run() -> EstimateRun:
    sub = Submission(number=201, slug="triton_fp8kv", path=Path("submissions/201_triton_fp8kv.py"),
                     requirements=frozenset({"torch", "triton"}), sha256="")
    return EstimateRun(sub, platforms.detect("cpu"), "mi355x", types.SimpleNamespace(errors=(-0.12, 0.2)),
                       [shape_run(*shape) for shape in SHAPES], "", "pass", [], "", "")


def printed(width: int) -> str:
    out = Console(width=width, record=True, no_color=True)
    display_estimate.print_estimate(out, estimate_run())
    return out.export_text()


def test_each_basis_is_printed_once_below_the_tables_at_any_width():
    for width in (80, 120, 300):
        text = printed(width)
        flat = " ".join(text.split())
        assert flat.count("370 VALU + 14 MFMA") == 1, (width, text)
        assert "[1] fixed (facts)" in flat and f"[2] {KERNEL_BASIS}" in flat
        assert "widened by the launches priced on bases [2] (no calibration figure)" in flat


def test_a_breakdown_row_shows_the_marker_of_its_basis():
    rows = display_estimate.breakdown_rows([shape_run(*shape) for shape in SHAPES])
    marks = {row[1]: row[-1] for row in rows}
    assert marks["custom_kernel call"] == "[1]" and marks["aten.copy_2"] == "[1]"
    assert marks["_attention"] == marks["_merge"] == "[2]" and marks["benchmark estimate"] == ""
