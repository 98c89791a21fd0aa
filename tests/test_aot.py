"""Ahead-of-time compilation on the CPU: submission 200's kernels for gfx950 (MFMA, no spills) and the AOT_SPECS checks."""
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.compile import aot
from harness.cli import main
from harness import exits
from harness.results import ledger
import helpers

# Its module-wide fixtures run once: make test gives the whole file to one xdist worker (--dist loadgroup).
pytestmark = pytest.mark.xdist_group("aot")

REPO = Path(__file__).resolve().parent.parent
KERNEL_200 = REPO / "submissions" / "200_triton_mxfp4.py"


@pytest.fixture(scope="module")
def gfx950_reports():
    return aot.compile_submission(KERNEL_200, "gfx950")


@pytest.mark.slow
def test_200_compiles_for_gfx950_with_mfma_and_no_spills(gfx950_reports):
    split = [r for r in gfx950_reports if r.kernel == "mla_decode_split_kernel"]
    assert len(split) >= 2, "200 should describe its attention kernel in AOT_SPECS"
    for report in gfx950_reports:
        assert report.error is None, f"{report.kernel} ({report.label}): {report.error}"
        assert report.spills == 0, f"{report.kernel} ({report.label}) spills {report.spills} registers"
        assert report.stack_bytes == 0
        assert 0 < report.registers <= 512
    for report in split:
        assert any(i.startswith("v_mfma") for i in report.matrix_instructions), report.matrix_instructions
        assert report.shared_bytes and report.shared_bytes <= 160 * 1024  # gfx950 LDS per CU
    reduce = [r for r in gfx950_reports if r.kernel == "mla_reduce_kernel"]
    assert reduce and reduce[0].matrix_instructions == ()


def _write(tmp_path, body: str) -> Path:
    path = tmp_path / "submissions" / "900_aot_probe.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(body))
    return path


SMALL_KERNEL = """
    import triton
    import triton.language as tl

    @triton.jit
    def scale_kernel(x_ptr, y_ptr, n, factor, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * factor, mask=offs < n)

    @triton.jit
    def unused_kernel(x_ptr):
        pass

    AOT_SPECS = [{"kernel": "scale_kernel", "signature": {"x_ptr": "*fp32:16", "y_ptr": "*fp32:16",
                  "n": "i32", "factor": "fp32"}, "constexprs": {"BLOCK": 256}, "num_warps": 4}]
"""


def test_kernel_without_spec_is_reported_skipped(tmp_path):
    reports = aot.compile_submission(_write(tmp_path, SMALL_KERNEL), "gfx942")
    by_name = {r.kernel: r for r in reports}
    assert by_name["scale_kernel"].error is None and by_name["scale_kernel"].registers > 0
    assert by_name["scale_kernel"].matrix_instructions == ()
    assert by_name["unused_kernel"].skipped and "AOT_SPECS" in by_name["unused_kernel"].error


def test_spec_naming_an_unknown_argument_is_an_error_in_the_report(tmp_path):
    body = SMALL_KERNEL.replace('"factor": "fp32"}', '"factor": "fp32", "bogus": "i32"}')
    reports = aot.compile_submission(_write(tmp_path, body), "gfx950")
    scale = [r for r in reports if r.kernel == "scale_kernel"][0]
    assert scale.error and "bogus" in scale.error


def test_spec_naming_a_missing_kernel_fails_clearly(tmp_path):
    body = SMALL_KERNEL.replace('"kernel": "scale_kernel"', '"kernel": "no_such_kernel"')
    with pytest.raises(aot.AotError, match="no_such_kernel"):
        aot.compile_submission(_write(tmp_path, body), "gfx950")


def test_unknown_target_is_rejected():
    with pytest.raises(aot.AotError, match="unknown target"):
        aot.compile_submission(KERNEL_200, "sm_75")


def test_compile_command_reports_and_exit_codes(tmp_path):
    runner = CliRunner(env={"COLUMNS": "200"})
    ok = runner.invoke(main, ["compile", str(_write(tmp_path, SMALL_KERNEL)), "--target", "gfx950"])
    assert ok.exit_code == 0, ok.output
    assert "scale_kernel" in ok.output and "Traceback" not in ok.output
    broken = _write(tmp_path, SMALL_KERNEL.replace("* factor", "* undefined_name"))
    failed = runner.invoke(main, ["compile", str(broken), "--target", "gfx950"])
    assert failed.exit_code == 1 and "Traceback" not in failed.output
    missing = runner.invoke(main, ["compile", str(tmp_path / "nope.py"), "--target", "gfx950"])
    assert missing.exit_code == 2


@pytest.mark.parametrize("body", [
    "import triton\n\ndef broken(:\n    pass\n",
    "from torch.utils.cpp_extension import load_inline\nSOURCE = '__global__ void k() {}'\n\ndef broken(:\n    pass\n",
])
def test_compile_of_a_file_with_a_python_syntax_error_fails_at_its_line(tmp_path, body):
    path = tmp_path / "broken.py"
    path.write_text(body)
    line = body.splitlines().index("def broken(:") + 1
    result = helpers.invoke("compile", path)
    assert result.exit_code == exits.EXIT_FAILED, result.output
    assert f"broken.py:{line}:" in result.output and "SyntaxError" in result.output
    assert "internal error" not in result.output
    [record] = ledger.read()
    assert record["mode"] == "compile" and record["status"] == "fail" and f"line {line}" in record["reason"]


def test_compile_tables_at_80_columns_are_not_slivers(tmp_path):
    import textwrap

    path = tmp_path / "900_probe.py"
    path.write_text(textwrap.dedent('''
        import triton
        import triton.language as tl

        @triton.jit
        def scale_rows_by_factor_kernel(x_ptr, y_ptr, n, factor, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * factor, mask=offs < n)

        AOT_SPECS = [{"kernel": "scale_rows_by_factor_kernel", "label": "fp32 rows, 256-wide blocks",
                      "signature": {"x_ptr": "*fp32:16", "y_ptr": "*fp32:16", "n": "i32", "factor": "fp32"},
                      "constexprs": {"BLOCK": 256}, "num_warps": 4}]
    '''))
    shown = helpers.invoke("compile", path, "--target", "gfx950", env=helpers.TERMINAL_80)
    assert shown.exit_code == 0, shown.output
    text = helpers.plain(shown.output)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "waves/SIMD" in text and "fp32 rows, 256-wide blocks" in " ".join(text.replace("│", " ").split())
    hip = helpers.invoke("compile", "120", env=helpers.TERMINAL_80)
    assert hip.exit_code == 0, hip.output
    text = helpers.plain(hip.output)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "v_mfma_f32_16x16x128_f8f6f4" in text and "waves/SIMD" in text and "…" not in text
