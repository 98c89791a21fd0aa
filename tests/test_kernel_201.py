"""Submission 201 (MLA decode over the fp8 KV cache: Triton on gfx950 and the CPU, Gluon on sm90).

CPU, in CI: the kernel runs under TRITON_INTERPRET=1 in a child process (tests/kernel_checks/interpret_201.py)
on small shapes, every launch path checked with the official check; the split model and the file rules are
pure Python; the gfx950 ahead-of-time compile must show no spills and fp8 MFMAs for both dots (fp8 x fp8:
no software decode); the sm90 Gluon kernel compiled here (slow). GPU (marked): the official shapes on the device,
the default and the other paths.
"""
import subprocess
from pathlib import Path

import pytest
import torch

import reference as ref
from kernel_loading import load_file, run_interpreted

# Its module-wide fixtures run once: make test gives the whole file to one xdist worker (--dist loadgroup).
pytestmark = pytest.mark.xdist_group("kernel_201")

REPO = Path(__file__).resolve().parent.parent
KERNEL_FILE = next((REPO / "submissions").glob("201_*.py"))
INTERPRETED_CHECKS = Path(__file__).resolve().parent / "kernel_checks" / "interpret_201.py"


def _load(name: str):
    return load_file(KERNEL_FILE, name)


@pytest.fixture(scope="module")
def sub():
    return _load("sub201_host")


@pytest.fixture(scope="module")
def interpreted():
    return run_interpreted(INTERPRETED_CHECKS, timeout=600)


@pytest.mark.slow  # the interpreter's run: ~25 s of CPU
def test_every_path_passes_the_official_check(interpreted):
    assert len(interpreted["paths"]) == 5
    for case in interpreted["paths"]:
        batch = case["case"][0]
        assert case["shape"] == [batch, 16, 512] and case["dtype"] == "torch.bfloat16"
        assert case["ok"], case


@pytest.mark.slow  # the interpreter's run: ~25 s of CPU
def test_fidelity_close_to_the_a8w8_reference(interpreted):
    # Against float64 attention on the bf16 KV. On the H200 the Gluon kernel (fp8 P.V too) measured 1.01x the
    # reference's own error (bench/notes/2026-12-01-fp8kv-kernel-201.md); the interpreter rounds fp32 -> fp8
    # differently from the hardware (2.4% of values differ), so on the CPU the bound is looser.
    fidelity = interpreted["fidelity"]
    assert fidelity["fp8"] < 3.0 * fidelity["ref_a8w8"], fidelity


@pytest.mark.slow  # the interpreter's run: ~25 s of CPU
def test_uneven_lengths_and_empty_slices(interpreted):
    uneven = interpreted["uneven"]
    assert uneven["finite"] and uneven["ok"], uneven


@pytest.mark.slow  # the interpreter's run: ~25 s of CPU
def test_a_plan_reused_gives_the_same_output_and_splits_agree(interpreted):
    assert interpreted["repeat_equal"]
    # P is rounded to e4m3 against each split's own running max, so split counts differ by fp8 steps of P
    assert interpreted["splits_agree"] < 0.05


@pytest.mark.slow  # the interpreter's run: ~25 s of CPU
def test_the_merge_kernel_by_slices_and_by_rows_match_the_weighted_mean(interpreted):
    merge = interpreted["merge"]
    assert merge["rows"] < 1e-2 and merge["slices"] < 1e-2, merge


@pytest.mark.slow  # the interpreter's run: ~25 s of CPU
def test_output_is_fresh_every_call(interpreted):
    assert interpreted["fresh"] == {"differ": True, "repeatable": True}


def test_choose_splits(sub):
    for fused in (True, False):
        # Batches that fill the H200 (132 SMs, 2 programs each) keep one split and skip the merge.
        assert sub.choose_splits(256, 8192, 132, 64, 2, 128, fused) == 1
        assert sub.choose_splits(256, 1024, 132, 64, 2, 128, fused) == 1
        for batch, kv in [(4, 1024), (4, 8192), (32, 1024), (32, 8192), (64, 8192), (1, 300)]:
            splits = sub.choose_splits(batch, kv, 132, 64, 2, 128, fused)
            assert 1 <= splits <= 64 and (kv / splits >= 128 or splits == 1)
        assert sub.choose_splits(4, 8192, 132, 64, 2, 128, fused) >= 16


def test_platform_defaults(sub, monkeypatch):
    cpu = sub.platform_defaults(torch.device("cpu"))
    assert cpu["gluon"] == 0 and not sub.gluon_usable(torch.device("cpu"))  # the Gluon path is sm90-only
    # the CPU runs the MI355X's launch (only its programs per CU differ: the interpreter's 4 "CUs")
    monkeypatch.setattr(torch.version, "hip", "7.1 (test)")
    rocm = sub.platform_defaults(torch.device("cpu"))
    assert {k: rocm[k] for k in sub.TRITON_LAUNCH} == {k: cpu[k] for k in sub.TRITON_LAUNCH} == sub.TRITON_LAUNCH
    assert (rocm["gluon"], rocm["fused"], rocm["programs_per_cu"], cpu["programs_per_cu"]) == (0, 0, 2, 1)


def test_unknown_tuning_keys_are_refused(sub):
    data = ref.generate_input(1, 1, 64, 5, device="cpu")
    with pytest.raises(ValueError, match="unknown tuning keys"):
        sub.mla_decode(data, no_such_key=1)


def test_choose_splits_gluon(sub):
    # The Gluon path's split counts on the 8 official shapes (H200, 132 SMs, its default min_tokens 64): each
    # one measured best or level in the sweep of 1-32 splits (bench/NOTES.md, issue 20, register-V section).
    shapes = [(4, 1024), (4, 8192), (32, 1024), (32, 8192), (64, 1024), (64, 8192), (256, 1024), (256, 8192)]
    got = [sub.choose_splits(b, kv, 132, 64, 2, 64, False, True) for b, kv in shapes]
    assert got == [16, 32, 4, 4, 2, 4, 1, 1]


def _gluon_sass(**overrides) -> tuple:
    """(compiled, SASS) of the sm90 Gluon kernel compiled on this CPU: the fused merge of 4 splits with the L2
    hint (the default plan of 32 x 8k on the H200), with `overrides`."""
    import tempfile

    import triton
    from triton.backends.compiler import GPUTarget

    sub = _load("sub201_gluon_aot")
    if not sub.HAVE_GLUON:
        pytest.skip("this triton has no Gluon")
    from triton.experimental.gluon._runtime import GluonASTSource
    from triton.experimental.gluon.language._layouts import NVMMASharedLayout

    kernel = sub.mla_fp8_gluon_kernel
    types = {"q_ptr": "*bf16", "q_stride_t": "i32", "q_stride_h": "i32", "kv_scale_ptr": "*fp32",
             "kv_indptr_ptr": "*i32", "out_ptr": "*bf16", "part_o_ptr": "*bf16", "part_lse_ptr": "*fp32",
             "counter_ptr": "*i32", "sm_scale": "fp32", "num_splits": "i32",
             "kv_desc_n": f"tensordesc<fp8e4nv[64, 512],{NVMMASharedLayout(128, 8, 2)!r}>",
             "kv_desc_r": f"tensordesc<fp8e4nv[64, 64],{NVMMASharedLayout(64, 8, 2)!r}>"}
    constexprs = {"WRITE_FINAL": False, "FUSED_MERGE": True, "MERGE_ELEMS": 2048, "L2_EVICT_FIRST": True}
    constexprs.update(overrides)
    sub._install_l2_hint_stage()  # as the default plan does: the marked kernel's TMA copies get the L2 hint
    signature = {name: ("constexpr" if name in constexprs else types[name]) for name in kernel.arg_names}
    attrs = {(i,): [["tt.divisibility", 16]] for i, name in enumerate(kernel.arg_names)
             if name.endswith("_ptr") or name.startswith("q_stride")}
    target = GPUTarget("cuda", 90, 32)
    backend = triton.compiler.make_backend(target)
    compiled = triton.compile(GluonASTSource(kernel, signature, constexprs, attrs), target=target,
                              options=backend.parse_options({"num_warps": 4}).__dict__)
    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    with tempfile.NamedTemporaryFile(suffix=".cubin") as handle:
        handle.write(compiled.asm["cubin"])
        handle.flush()
        sass = subprocess.run([str(tool), "--dump-sass", handle.name], capture_output=True, text=True).stdout
    return compiled, sass


@pytest.mark.slow
def test_gluon_kernel_compiles_for_sm90():
    """The sm90 Gluon kernel compiles on a CPU: fp8 wgmma for both dots, V^T from 8-byte shared loads into the P.V
    wgmma's registers, tiles by TMA, the fused merge's atomic ticket and bf16 partials stored from the accumulator,
    no spills, and shared memory for two programs per SM."""
    import re

    compiled, sass = _gluon_sass()
    assert (233472 - 1024) // (compiled.metadata.shared + 1024) == 2, compiled.metadata.shared
    assert "QGMMA.64x16x32.F32.E4M3.E4M3" in sass
    assert "UTMALDG.2D" in sass and "LDGSTS" not in sass  # the tiles come by TMA, not by cp.async
    # every tile copy carries the evict-first policy: a cache-policy operand on each UTMALDG
    copies = re.findall(r"UTMALDG\.2D[^;]*;", sass)
    assert copies and all("desc[" in c for c in copies), copies
    assert compiled.asm["ptx"].count("createpolicy.fractional.L2::evict_first") == len(copies)
    assert re.search(r"ATOMG\.E\.ADD\.STRONG\.GPU", sass)  # the fused merge's ticket
    assert not re.search(r"\b(STL|LDL)\b", sass)
    # V^T comes to the P.V wgmma in registers (QGMMA with a register A operand), loaded by 8-byte shared loads,
    # and is never stored back to shared memory: fewer 8-byte stores than loads
    loads, stores = len(re.findall(r"\bLDS\.64\b", sass)), len(re.findall(r"\bSTS\.64\b", sass))
    assert re.search(r"QGMMA\.64x16x32\.F32\.E4M3\.E4M3 R\d+, R\d+, gdesc", sass)
    assert loads >= 32 and stores < loads, (loads, stores)
    assert "E4M3.UNPACK" not in sass  # no fp8 -> fp16 conversion of the values (only fp32 -> fp8 of Q and P)
    # the bf16 partial leaves the accumulator as it lies, a bf16 pair (4 bytes) per store, 32 per thread; the
    # merged output leaves as 8 consecutive dims (16 bytes) per store
    assert len(re.findall(r"\bSTG\.E ", sass)) == 32 and "STG.E.128" in sass


@pytest.mark.slow
def test_gluon_partials_for_the_merge_kernel_compile_for_sm90():
    """Without the fused merge (a split count not a power of two): fp32 partials, the PDL trigger for the merge
    kernel, no ticket; without the L2 hint (a KV over 4x the L2): no cache policy on the copies."""
    import re

    compiled, sass = _gluon_sass(FUSED_MERGE=False, MERGE_ELEMS=0, L2_EVICT_FIRST=False)
    assert "griddepcontrol.launch_dependents" in compiled.asm["ptx"]
    assert "createpolicy" not in compiled.asm["ptx"] and "UTMALDG.2D" in sass
    assert not re.search(r"ATOMG", sass) and not re.search(r"\b(STL|LDL)\b", sass)


def test_l2_evict_first_ptx_rewrites_only_marked_tensor_copies():
    """Issue 31: the PTX stage gives a marked kernel's TMA copies (predicated or not) an evict-first L2 policy and
    leaves every other line, and any unmarked kernel, unchanged."""
    sub = _load("sub201_l2_hint")
    copy = ("\t@%p3 cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r102], "
            "[%rd2, {%r103, %r2578}], [%r101];")
    plain = copy.replace("@%p3 ", "")
    other = "\tld.global.b32 %r1, [%rd1];"
    plain = plain.replace("shared::cluster", "shared::cta")  # newer Triton's form
    ptx = "\n".join([other, copy, plain, other])
    assert sub.l2_evict_first_ptx(ptx) == ptx  # no marker: unchanged
    marked = "// " + sub.L2_MARK + "\n" + ptx
    out = sub.l2_evict_first_ptx(marked).splitlines()
    assert out[0] == "// " + sub.L2_MARK and out[1] == other and out[4] == other
    for line, predicate, space in ((out[2], "@%p3 ", "cluster"), (out[3], "", "cta")):
        assert line.startswith("\t{ .reg .b64 %l2ef; createpolicy.fractional.L2::evict_first.b64 %l2ef, 1.0; ")
        assert (f"{predicate}cp.async.bulk.tensor.2d.shared::{space}.global.mbarrier::complete_tx::bytes"
                ".L2::cache_hint [%r102], [%rd2, {%r103, %r2578}], [%r101], %l2ef; }") in line


def test_submission_file_rules():
    text = KERNEL_FILE.read_text()
    lines = text.splitlines()
    assert lines[0] == "#!POPCORN leaderboard amd-mixed-mla"
    assert lines[1] == "#!POPCORN gpu MI355X"
    assert "from task import input_t, output_t" in text
    assert "str" + "eam" not in text.lower()
    assert "import harness" not in text and "from harness" not in text
    assert "import reference" not in text and "from reference" not in text
    assert len(text.encode()) < 1_000_000
    for hard_coded in ('device="cuda"', "device='cuda'", ".cuda()", 'torch.device("cuda")'):
        assert hard_coded not in text


@pytest.mark.slow
def test_gfx950_compile_has_no_spills_and_fp8_mfma():
    from harness.compile import aot

    reports = aot.compile_submission(KERNEL_FILE, "gfx950")
    # The Gluon kernel is sm90-only and not a @triton.jit kernel the harness can compile: reported as skipped.
    reports = [r for r in reports if not (r.kernel == "mla_fp8_gluon_kernel" and r.skipped)]
    assert reports and all(r.error is None for r in reports), [r.error for r in reports]
    for report in reports:
        assert report.spills == 0, (report.label, report.spills)
        assert not report.stack_bytes, (report.label, report.stack_bytes)
        if report.kernel == "mla_fp8_kernel":
            # fp8 x fp8 for the scores on both paths; the gfx950 default does P.V in fp8 too.
            assert any("f8f6f4" in m or "fp8_fp8" in m for m in report.matrix_instructions), report
            if "gfx950 default" in report.label:
                assert all("f16" not in m.replace("f8f6f4", "") for m in report.matrix_instructions), report


@pytest.fixture(scope="module")
def device_sub():
    if not torch.cuda.is_available():
        pytest.fail("this test needs a CUDA or ROCm device")
    return _load("sub201_device")


@pytest.mark.gpu
@pytest.mark.parametrize("spec", [(4, 1024, 4217), (4, 8192, 4220), (32, 8192, 5415), (64, 1024, 1357),
                                  (256, 1024, 9823), (256, 8192, 9826)])
def test_official_shapes_on_the_device(device_sub, spec):
    """The default, the Triton path on the device (gluon=0) and the merge kernel after the Gluon kernel: a split
    count not a power of two (3), and 24 splits (with 4 sequences: merged by 128-dim slices)."""
    batch, kv_len, seed = spec
    data = ref.generate_input(batch, 1, kv_len, seed, device="cuda")
    ok, message = ref.check_implementation(data, device_sub.custom_kernel(data))
    assert ok, message
    for tuning in ({"gluon": 0}, {"splits": 3}, {"splits": 24}):
        ok, message = ref.check_implementation(data, device_sub.mla_decode(data, **tuning))
        assert ok, f"{tuning}: {message}"


@pytest.mark.gpu
def test_tma_tiles_and_fused_merge_on_uneven_lengths(device_sub):
    """Partial last tiles (TMA brings the next sequence's rows, here NaN; they must not reach P.V), empty splits,
    and the fused merge's ever-growing ticket counter over repeated calls and several split counts (3 and 24:
    the merge kernel): every output passes the official check and repeats bit for bit."""
    data = ref.generate_input(6, 1, 0, 77, device="cuda", kv_seq_lens=[1, 63, 65, 130, 1000, 3001])
    kv8, kv_scale = data[1]["fp8"]
    padded = torch.full((kv8.shape[0] + 64, *kv8.shape[1:]), 0x7F, dtype=torch.uint8, device="cuda")  # e4m3 NaN
    padded[:kv8.shape[0]] = kv8.view(torch.uint8)
    data[1]["fp8"] = (padded.view(kv8.dtype), kv_scale)  # rows past the last sequence: TMA copies them, P.V must not
    for splits in (None, 2, 3, 4, 16, 24, 32):
        tuning = {} if splits is None else {"splits": splits}
        first = device_sub.mla_decode(data, **tuning).clone()
        ok, message = ref.check_implementation(data, first)
        assert ok, f"{tuning}: {message}"
        assert torch.isfinite(first).all()
        for _ in range(2):  # the counter keeps growing across calls
            assert torch.equal(device_sub.mla_decode(data, **tuning), first), tuning
