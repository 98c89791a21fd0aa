"""aiter's get_mla_metadata_v1 from the wheel's metadata.cu on the gfx950 emulator; its buffer sizes from the
wheel's attention.py (harness/aiter_gfx950/metadata.py, issue 38).

The emulated schedule is checked field by field where the wheel's
source fixes it, and end to end: the stand-in's torch stage 1 and
reduce, run on it, give the attention the stand-in's own schedule gives.
The first run builds the module from the wheel's sources (minutes).
"""
import ast
import math
import types

import pytest
import torch

from harness.aiter_gfx950 import build, metadata, package
from harness.aiter_standin import metadata as standin
from harness.aiter_standin import mla as standin_mla
from harness.aiter_standin.dtypes import fp8

HEADS, V_DIM, QK_DIM = 16, 512, 576


def _wheels_info_function():
    """The wheel's own get_mla_metadata_info_v1 (aiter/ops/attention.py), on a device of 256 CUs."""
    path = package.cache_root() / "aiter" / "ops" / "attention.py"
    tree = ast.parse(path.read_text())
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_mla_metadata_info_v1")
    device = types.SimpleNamespace(multi_processor_count=256)
    fake_torch = types.SimpleNamespace(dtype=torch.dtype, uint64=torch.uint64, int32=torch.int32, cuda=types.SimpleNamespace(
        current_device=lambda: 0, get_device_properties=lambda _: device))
    scope = {"math": math, "torch": fake_torch, "dtypes": types.SimpleNamespace(fp8=fp8)}
    exec(compile(ast.Module(body=[node], type_ignores=[]), str(path), "exec"), scope)
    return scope["get_mla_metadata_info_v1"]


@pytest.mark.parametrize("batch, q_len, heads, q_dtype, kv_dtype, sparse, fast", [
    (4, 1, 16, fp8, fp8, False, True), (300, 2, 16, torch.bfloat16, torch.bfloat16, False, True),
    (8, 1, 128, torch.bfloat16, fp8, False, True), (8, 3, 32, fp8, fp8, False, False),
    (2, 4, 16, fp8, fp8, True, True)])
def test_info_sizes_are_the_wheels(batch, q_len, heads, q_dtype, kv_dtype, sparse, fast):
    wheels = _wheels_info_function()(batch, q_len, heads, q_dtype, kv_dtype, sparse, fast)
    ours = metadata.get_mla_metadata_info_v1(batch, q_len, heads, q_dtype, kv_dtype, sparse, fast)
    assert [(tuple(torch.Size([s]) if isinstance(s, int) else s), d) for s, d in wheels] == \
        [(tuple(torch.Size([s]) if isinstance(s, int) else s), d) for s, d in ours]


def _buffers(batch: int, q_len: int = 1):
    return [torch.full(shape if isinstance(shape, tuple) else (shape,), -7, dtype=dtype)
            for shape, dtype in metadata.get_mla_metadata_info_v1(batch, q_len, HEADS, fp8, fp8, False)]


def _emulated_schedule(q_lens, kv_lens, **options):
    qo = torch.tensor([0, *torch.tensor(q_lens).cumsum(0).tolist()], dtype=torch.int32)
    kv = torch.tensor([0, *torch.tensor(kv_lens).cumsum(0).tolist()], dtype=torch.int32)
    ptrs, indptr, works, reduce_indptr, final_map, partial_map = _buffers(len(kv_lens), max(q_lens))
    metadata.get_mla_metadata_v1(qo, kv, torch.ones(len(kv_lens), dtype=torch.int32), HEADS, 1, False, ptrs, works,
                                 indptr, reduce_indptr, final_map, partial_map, max_seqlen_qo=max(q_lens),
                                 uni_seqlen_qo=max(q_lens), **options)
    return qo, kv, ptrs, indptr, works, reduce_indptr, final_map, partial_map


@pytest.fixture(scope="module")
def built_module():
    build.load(metadata.MODULE)  # builds it from the wheel's sources the first time (minutes)


@pytest.mark.slow
def test_each_cu_takes_one_granule_when_the_kv_is_short(built_module):
    """kn_get_mla_metadata_v1_2: 82 granules + 2 x 16 overhead over 256 CUs is a payload of 17, so every
    work is one 16-row granule, one per CU, and batch b's splits are merged by its reduce tile."""
    qo, kv, ptrs, indptr, works, reduce_indptr, final_map, partial_map = _emulated_schedule([1, 1], [300, 1000])
    assert indptr[:84].tolist() == list(range(83)) + [82] and int(indptr[-1]) == 82
    rows = works[:82].tolist()
    assert [r[0] for r in rows] == [0] * 19 + [1] * 63
    assert [(r[4], r[5]) for r in rows[:2]] == [(0, 16), (16, 32)] and rows[18][4:6] == [288, 300]
    assert rows[19][4:6] == [300, 316] and rows[-1][4:6] == [1292, 1300]
    assert [r[1] for r in rows] == list(range(82))  # every work is a split: partial row = its number
    assert [r[2:4] for r in rows] == [[0, 1]] * 19 + [[1, 2]] * 63
    assert reduce_indptr[:3].tolist() == [0, 19, 82] and final_map[:2].tolist() == [[0, 1], [1, 2]]
    assert partial_map[:82].tolist() == list(range(82))
    assert ptrs.tolist() == [indptr.data_ptr(), works.data_ptr()]


@pytest.mark.slow
def test_the_schedule_gives_the_stand_ins_attention(built_module, monkeypatch):
    """The stand-in's torch stage 1 + reduce on aiter's schedule = on the stand-in's own (float32 rounding)."""
    torch.manual_seed(3)
    q_lens, kv_lens = [1, 1, 1], [40, 700, 129]
    qo, kv, _, indptr, works, reduce_indptr, final_map, partial_map = _emulated_schedule(q_lens, kv_lens)
    total_kv, batch = sum(kv_lens), len(kv_lens)
    q = torch.randn(batch, HEADS, QK_DIM).to(fp8)
    cache = torch.randn(total_kv, 1, 1, QK_DIM).to(fp8)
    scale = torch.ones(1)
    pages = torch.arange(total_kv, dtype=torch.int32)

    def decode(schedule):
        indptr_, works_, reduce_indptr_, final_map_, partial_map_ = schedule
        rows = int(partial_map_.numel()) + batch
        data, lse = torch.zeros(rows, 1, HEADS, V_DIM), torch.zeros(rows, 1, HEADS, 1)
        out = torch.zeros(batch, HEADS, V_DIM, dtype=torch.bfloat16)
        standin_mla.mla_decode_stage1_asm_fwd(q, cache, qo, kv, pages, None, None, None, indptr_, works_, 1, 1, 1,
                                              0.06, data, lse, out, scale, scale)
        standin_mla._reduce(data, lse, reduce_indptr_, final_map_, partial_map_, 1, out)
        return out.float()

    monkeypatch.setenv("HARNESS_AITER", "torch")  # the stand-in's schedule, and its torch math for both
    theirs = _buffers(batch)
    standin.get_mla_metadata_v1(qo, kv, torch.ones(batch, dtype=torch.int32), HEADS, 1, False, theirs[0], theirs[2],
                                theirs[1], *theirs[3:],
                                max_seqlen_qo=1, uni_seqlen_qo=1)
    emulated = decode((indptr, works, reduce_indptr, final_map, partial_map))
    modelled = decode((theirs[1], theirs[2], *theirs[3:]))
    assert int(indptr[-1]) > batch  # aiter split the long sequence
    torch.testing.assert_close(emulated, modelled, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_a_schedule_past_its_buffer_is_refused(built_module, monkeypatch):
    """Through the stand-in, emulating: a work_info_set of 20 rows for a schedule of ~110 works. aiter's kernel
    writes past it (here into a live tensor, so the emulator lets it); the stand-in refuses the call."""
    monkeypatch.setenv("HARNESS_AITER", "emulate")
    qo = torch.arange(4, dtype=torch.int32)
    kv = torch.tensor([0, 600, 1200, 1800], dtype=torch.int32)
    ptrs, indptr, works, reduce_indptr, final_map, partial_map = _buffers(3)
    spare = torch.zeros(4096, dtype=torch.int32)
    small = spare[:20 * 8].view(20, 8)
    with pytest.raises(standin.StandInRefusal, match="work_info_set of 20 entries: this schedule needs 1"):
        standin.get_mla_metadata_v1(qo, kv, torch.ones(3, dtype=torch.int32), HEADS, 1, False, ptrs, small, indptr,
                                    reduce_indptr, final_map, partial_map, max_seqlen_qo=1, uni_seqlen_qo=1)
    assert build.take_lines()[0].startswith("aiter emulated (gfx950; amd-aiter 0.1.7.post2.dev18 sources")


def test_an_unbuilt_module_runs_the_torch_model_and_a_build_without_ck_headers_names_them(tmp_path, monkeypatch):
    """A call never builds (minutes, past a case's limit): without the built module the stand-in's torch schedule
    is written and the case's line says `make setup` builds it; that build, from a wheel unpacked without
    composable_kernel's headers, names the missing header."""
    monkeypatch.setenv("HARNESS_AITER", "emulate")
    monkeypatch.setattr(package, "cache_root", lambda: tmp_path)
    monkeypatch.setattr(package, "missing", lambda: None)
    monkeypatch.setattr(build, "built", lambda module: None)
    monkeypatch.setattr(build, "_loaded", {})
    build.take_lines()  # what earlier tests in this process noted
    qo = torch.arange(3, dtype=torch.int32)
    kv = torch.tensor([0, 40, 100], dtype=torch.int32)
    ptrs, indptr, works, reduce_indptr, final_map, partial_map = _buffers(2)
    standin.get_mla_metadata_v1(qo, kv, torch.ones(2, dtype=torch.int32), HEADS, 1, False, ptrs, works, indptr,
                                reduce_indptr, final_map, partial_map, max_seqlen_qo=1, uni_seqlen_qo=1)
    rows = works[:int(indptr[-1])]
    assert int((rows[:, 5] - rows[:, 4]).sum()) == 100
    assert build.take_lines() == ["aiter modelled in torch: get_mla_metadata_v1 (module_mla_metadata is not built "
                                  "here yet (`make setup` builds it from amd-aiter's sources once, minutes: "
                                  "python -m harness.aiter_gfx950.build))"]
    problems = build.prebuild()
    missing = (f"{tmp_path}/aiter_meta/3rdparty/composable_kernel/include/ck_tile/core.hpp is missing: aiter's "
               "metadata and reduce sources include composable_kernel's ck_tile headers")
    assert len(problems) == len(build.MODULES) and all(missing in line for line in problems)


def test_intra_batch_mode_stays_on_the_torch_model_and_says_so(monkeypatch):
    monkeypatch.setenv("HARNESS_AITER", "emulate")
    build.take_lines()
    qo = torch.arange(3, dtype=torch.int32)
    kv = torch.tensor([0, 40, 100], dtype=torch.int32)
    ptrs, indptr, works, reduce_indptr, final_map, partial_map = [
        torch.zeros(shape if isinstance(shape, tuple) else (shape,), dtype=dtype) for shape, dtype in
        metadata.get_mla_metadata_info_v1(2, 1, HEADS, fp8, fp8, False, False, 8, True)]
    standin.get_mla_metadata_v1(qo, kv, torch.ones(2, dtype=torch.int32), HEADS, 1, True, ptrs, works, indptr,
                                reduce_indptr, final_map, partial_map, max_seqlen_qo=1, uni_seqlen_qo=1,
                                fast_mode=False, max_split_per_batch=8, intra_batch_mode=True)
    assert int((works[:, 5] - works[:, 4]).sum()) == 100
    assert build.take_lines() == ["aiter modelled in torch: get_mla_metadata_v1 (intra_batch_mode: amd-aiter's "
                                  "metadata.cu has none)"]
