"""The aiter stand-in (harness/aiter_standin): the pinned aiter's signatures and buffer sizes, its arithmetic close
to the reference's own noise, results in the caller's buffers, refusals in the runner's words, the journal, and a
loader that never shadows a real aiter."""
import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import reference
from harness.aiter_standin import decode, journal, loader, metadata, mla
from harness.aiter_standin.errors import NotCovered, StandInRefusal
from harness.run import accuracy

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def served():
    """`import aiter` served by the stand-in for one test, then forgotten."""
    finder = loader.install()
    yield
    sys.meta_path.remove(finder)
    for name in [n for n in sys.modules if n == "aiter" or n.startswith("aiter.")]:
        del sys.modules[name]


def reference_through_standin(data):
    q, kv_data, qo_indptr, kv_indptr, config = data
    kv8, kv_scale = kv_data["fp8"]
    q8, q_scale = reference.quantize_fp8(q, dtype=kv8.dtype)
    return reference._aiter_a8w8_decode(q8, q_scale, kv8, kv_scale, qo_indptr, kv_indptr, config)


@pytest.mark.parametrize("batch, kv, lens", [(4, 1024, None), (3, 257, None), (3, 0, [5, 700, 64])])
def test_the_reference_through_the_standin_stays_within_its_own_noise(served, batch, kv, lens):
    data = reference.generate_input(batch, 1, kv or max(lens), 7, device="cpu", kv_seq_lens=lens)
    expected = reference.ref_kernel(data)
    out = reference_through_standin(data)
    ok, message = reference.check_implementation(data, out)
    assert ok, message
    assert accuracy.relative_error(out, expected) < 1.5 * accuracy.noise_floor(data, expected) * 0.1  # far below


def pages(data):
    q, kv_data, qo_indptr, kv_indptr, config = data
    return (torch.arange(kv_data["bf16"].shape[0], dtype=torch.int32),
            (kv_indptr[1:] - kv_indptr[:-1]).to(torch.int32))


def schedule(data, q_dtype, kv_dtype, splits=32, page_size=1):
    q, kv_data, qo_indptr, kv_indptr, config = data
    info = metadata.get_mla_metadata_info_v1(config["batch_size"], 1, 16, q_dtype, kv_dtype, is_sparse=False,
                                             fast_mode=False, num_kv_splits=splits, intra_batch_mode=True)
    buffers = [torch.empty(shape, dtype=dtype) for shape, dtype in info]
    meta, indptr, works, r_indptr, r_final, r_partial = buffers
    metadata.get_mla_metadata_v1(qo_indptr, kv_indptr, pages(data)[1], 16, 1, True, meta, works, indptr, r_indptr,
                                 r_final, r_partial, page_size=page_size, max_seqlen_qo=1, uni_seqlen_qo=1,
                                 fast_mode=False, max_split_per_batch=splits, intra_batch_mode=True)
    return dict(zip(("work_meta_data", "work_indptr", "work_info_set", "reduce_indptr", "reduce_final_map",
                     "reduce_partial_map"), buffers))


@pytest.mark.parametrize("variant", ["a16w16", "a16w8", "a8w8-one-split"])
def test_other_variants_write_the_callers_output_within_tolerance(variant):
    data = reference.generate_input(2, 1, 300, 3, device="cpu")
    q, kv_data, qo_indptr, kv_indptr, config = data
    kv_indices, lengths = pages(data)
    out = torch.full((2, 16, 512), float("nan"), dtype=torch.bfloat16)
    kv8, kv_scale = kv_data["fp8"]
    if variant == "a16w16":
        decode.mla_decode_fwd(q, kv_data["bf16"].view(-1, 1, 1, 576), out, qo_indptr, kv_indptr, kv_indices, lengths, 1)
    elif variant == "a16w8":
        decode.mla_decode_fwd(q, kv8.view(-1, 1, 1, 576), out, qo_indptr, kv_indptr, kv_indices, lengths, 1,
                              kv_scale=kv_scale, **schedule(data, torch.bfloat16, kv8.dtype))
    else:
        q8, q_scale = reference.quantize_fp8(q, dtype=kv8.dtype)
        logits, lse = decode.mla_decode_fwd(q8, kv8.view(-1, 1, 1, 576), out, qo_indptr, kv_indptr, kv_indices,
                                            lengths, 1, num_kv_splits=1, q_scale=q_scale, kv_scale=kv_scale)
        assert logits.data_ptr() == out.data_ptr()  # one split, fp8 Q: stage 1 writes o itself, as aiter does
    expected = reference.ref_kernel(data)
    assert reference.check_implementation(data, out)[0]
    assert accuracy.relative_error(out, expected) < 1.5 * accuracy.noise_floor(data, expected)


def test_info_v1_sizes_are_the_pinned_commits_for_256_cus():
    fp8 = torch.float8_e4m3fn
    sizes = [shape for shape, _ in metadata.get_mla_metadata_info_v1(256, 1, 16, fp8, fp8, is_sparse=False,
                                                                      fast_mode=False, num_kv_splits=32,
                                                                      intra_batch_mode=True)]
    assert sizes == [2, 257, (256 * 32, 8), 257, (256, 2), 256 * 32]
    fast = [shape for shape, _ in metadata.get_mla_metadata_info_v1(4, 1, 16, fp8, fp8, is_sparse=False)]
    assert fast == [2, 257, (4 + 255, 8), 5, (4, 2), 4 + 255]
    slow = [shape for shape, _ in metadata.get_mla_metadata_info_v1(4, 1, 16, fp8, fp8, is_sparse=False,
                                                                    fast_mode=False)]
    assert slow[2] == (4 * 256, 8) and slow[5] == 4 * 256


def test_page_size_above_one_is_refused_naming_the_argument():
    data = reference.generate_input(2, 1, 64, 3, device="cpu")
    q, kv_data, qo_indptr, kv_indptr, config = data
    out = torch.empty((2, 16, 512), dtype=torch.bfloat16)
    with pytest.raises(StandInRefusal, match=r"page_size=8: on MI355X .* page size 1 only.* by chance"):
        decode.mla_decode_fwd(q, kv_data["bf16"].view(-1, 8, 1, 576), out, qo_indptr, kv_indptr // 8,
                              torch.arange(16, dtype=torch.int32), torch.full((2,), 8, dtype=torch.int32), 1,
                              page_size=8)


def test_a_schedule_built_for_other_lengths_is_refused():
    short = reference.generate_input(2, 1, 300, 3, device="cpu")
    long = reference.generate_input(2, 1, 700, 3, device="cpu")
    q, kv_data, qo_indptr, kv_indptr, config = long
    kv8, kv_scale = kv_data["fp8"]
    q8, q_scale = reference.quantize_fp8(q, dtype=kv8.dtype)
    out = torch.empty((2, 16, 512), dtype=torch.bfloat16)
    with pytest.raises(StandInRefusal, match="work_info_set.*built for other q/kv lengths"):
        decode.mla_decode_fwd(q8, kv8.view(-1, 1, 1, 576), out, qo_indptr, kv_indptr, *pages(long), 1,
                              q_scale=q_scale, kv_scale=kv_scale, **schedule(short, kv8.dtype, kv8.dtype))


def test_what_the_runner_rejects_is_rejected_with_its_gist():
    data = reference.generate_input(1, 1, 64, 3, device="cpu")
    q, kv_data, qo_indptr, kv_indptr, config = data
    kv8, kv_scale = kv_data["fp8"]
    out = torch.empty((1, 16, 512), dtype=torch.bfloat16)
    with pytest.raises(StandInRefusal, match="cannot get heuristic kernel for q bf16, kv fp8.*non-persistent"):
        decode.mla_decode_fwd(q, kv8.view(-1, 1, 1, 576), out, qo_indptr, kv_indptr, *pages(data), 1, kv_scale=kv_scale)
    q8, q_scale = reference.quantize_fp8(q, dtype=kv8.dtype)
    with pytest.raises(StandInRefusal, match="q_scale=None"):
        decode.mla_decode_fwd(q8, kv8.view(-1, 1, 1, 576), out, qo_indptr, kv_indptr, *pages(data), 1)
    with pytest.raises(RuntimeError, match="kv_granularity Must be power of 2"):
        metadata.get_mla_metadata_v1(qo_indptr, kv_indptr, pages(data)[1], 16, 1, True, *[torch.empty(0)] * 6,
                                     kv_granularity=12)
    with pytest.raises(RuntimeError, match="partial_out and partial_lse must be float32"):
        mla.mla_reduce_v1(torch.empty(1, 1, 16, 512, dtype=torch.bfloat16), torch.empty(1, 1, 16, 1),
                          torch.zeros(2, dtype=torch.int32), None, torch.zeros(1, dtype=torch.int32), 1, out)


def test_the_journal_records_one_complete_entry_per_call():
    data = reference.generate_input(2, 1, 300, 3, device="cpu")
    q, kv_data, qo_indptr, kv_indptr, config = data
    kv8, kv_scale = kv_data["fp8"]
    q8, q_scale = reference.quantize_fp8(q, dtype=kv8.dtype)
    with journal.recording() as calls:
        plan = schedule(data, kv8.dtype, kv8.dtype)
        decode.mla_decode_fwd(q8, kv8.view(-1, 1, 1, 576), torch.empty((2, 16, 512), dtype=torch.bfloat16),
                              qo_indptr, kv_indptr, *pages(data), 1, q_scale=q_scale, kv_scale=kv_scale, **plan)
    assert [c["api"] for c in calls] == ["aiter.get_mla_metadata_v1", "aiter.mla.mla_decode_fwd"]
    assert all(set(c) == set(journal.KEYS) for c in calls)
    call = calls[1]
    assert (call["kernel"], call["variant"], call["persistent"], call["launches"]) == (
        "mla_a8w8_qh16_qseqlen1_gqaratio16_ps", "a8w8", True, 2)
    assert (call["batch"], call["total_q"], call["total_kv"], call["page_size"]) == (2, 2, 600, 1)
    assert call["bytes_read"] >= 600 * 576 and calls[0]["launches"] == 1
    with journal.recording() as outside:
        pass
    assert outside == []


def test_covered_functions_have_the_pinned_signatures():
    api = json.loads((REPO / "harness" / "checks" / "data" / "aiter_api.json").read_text())["namespaces"]
    checked = 0
    for module, names in loader.MODULES.items():
        space = api.get(loader.ALIASES.get(module, module))
        for name, value in names.items():
            if not inspect.isfunction(value) or space is None or name not in space:
                continue
            params = [p.name + ("=" if p.default is not inspect.Parameter.empty else "")
                      for p in inspect.signature(value).parameters.values()]
            assert params == space[name]["params"], f"{module}.{name}"
            checked += 1
    assert checked >= 15


def run_python(code: str, extra_path: str | None = None) -> str:
    env_path = ":".join(p for p in (extra_path, str(REPO)) if p)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"})
    return done.stdout + done.stderr


def test_a_real_aiter_is_never_shadowed(tmp_path):
    fake = tmp_path / "aiter"
    fake.mkdir()
    (fake / "__init__.py").write_text("REAL = True\n")
    (fake / "mla.py").write_text("")
    code = ("from harness.aiter_standin import loader; loader.install(); import aiter; "
            "print(aiter.__dict__.get('REAL', False), loader.served())")
    assert run_python(code, str(tmp_path)).split() == ["True", "False"]
    assert run_python(code).split() == ["False", "True"]


def test_uncovered_names_fail_with_the_covered_message(served):
    import aiter

    with pytest.raises(NotCovered, match=r"^not covered: aiter\.mla\.mla_prefill_fwd \(the aiter stand-in "
                                         r"neither emulates nor models it\)$"):
        from aiter.mla import mla_prefill_fwd  # noqa: F401
    with pytest.raises(NotCovered, match="^not covered: aiter.fused_moe "):
        import aiter.fused_moe  # noqa: F401
    with pytest.raises(NotCovered, match="has no such name either"):
        aiter.no_such_function
    assert aiter.mla.mla_decode_fwd is decode.mla_decode_fwd and aiter.dtypes.fp8 == torch.float8_e4m3fn
    assert not hasattr(aiter, "__wrapped__")  # dunder probes stay AttributeErrors


def test_the_survey_is_covered():
    """Every aiter name more than one public submission file uses is served, except the few named here (each used
    by one repository only; docs/AITER_STANDIN.md says why)."""
    survey = json.loads((REPO / "bench" / "tools" / "aiter_survey.json").read_text())["names"]
    internals = {"aiter.ops.triton._triton_kernels.quant.quant._mxfp4_quant_op",  # a @triton.jit helper
                 "aiter.ops.triton.attention.mla_decode_rope.decode_attention_fwd_grouped_rope",  # Triton MLA + rope
                 "aiter.ops.triton.moe.quant_moe.downcast_to_mxfp"}  # a MoE quantizer
    assert all(len(survey[name]["repositories"]) == 1 for name in internals)
    for name, entry in survey.items():
        if entry["files"] < 2 or name in internals:
            continue
        module, _, attr = name.rpartition(".")
        if name in loader.MODULES:
            continue
        assert module in loader.MODULES and attr in loader.MODULES[module], name


def test_the_stage2_merge_never_reads_a_split_past_the_kv():
    """kv 256 in 16 splits: stage 1 writes the first 4 (64-row runs); the rest may hold NaN garbage."""
    torch.manual_seed(0)
    splits, heads, dim = 16, 16, 512
    logits = torch.randn(1, splits, heads, dim)
    lse = torch.randn(1, splits, heads, 1)
    logits[:, 4:] = float("nan")
    lse[:, 4:] = float("nan")
    out = torch.zeros(1, heads, dim, dtype=torch.bfloat16)
    decode._merge_splits(logits, lse, torch.tensor([0, 1]), torch.tensor([0, 256]), out)
    weights = torch.softmax(lse[0, :4, :, 0], dim=0)  # the four written splits, by log-sum-exp
    expected = (weights[..., None] * logits[0, :4]).sum(dim=0)
    torch.testing.assert_close(out[0].float(), expected, rtol=1e-2, atol=1e-2)
