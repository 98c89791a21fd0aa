"""aiter's stage-1 kernels traced at the benchmark shapes (harness/estimate/aiter_traces.py): which
launches the public rows make, the persistent launch's busiest workgroup, and the cache."""
import torch

from harness.aiter_gfx950 import stage1
from harness.estimate import aiter_traces
from harness.estimate import calibration as calib


def row(row_id: str) -> calib.Row:
    return next(r for r in calib.load().rows if r.id == row_id)


def test_rows_map_to_the_stage1_launch_their_structure_names():
    above_one = row("dgavriloff_v99")  # aiter's split count; one split runs non-persistent
    assert aiter_traces.stage1_of(above_one, (256, 1024)) == aiter_traces.Stage1("a8w8", False, 1)
    assert aiter_traces.stage1_of(above_one, (4, 1024)) == aiter_traces.Stage1(
        "a8w8", True, calib.aiter_splits(4, 1024, fp8_q=True))
    mixed = row("kernelsanders_112")
    assert aiter_traces.stage1_of(mixed, (4, 1024)) is None  # its torch GEMM path
    assert aiter_traces.stage1_of(mixed, (64, 1024)) == aiter_traces.Stage1("a16w8", True, 8)


def test_every_needed_launch_is_a_kernel_the_wheel_has():
    wanted = aiter_traces.needed()
    kernels = {stage.kernel for stage, _ in wanted}
    assert kernels == {"mla_a8w8_qh16_qseqlen1_gqaratio16", "mla_a8w8_qh16_qseqlen1_gqaratio16_ps",
                       "mla_a16w8_qh16_m16x4_n16x1_coex0_mask1_ps", "mla_dec_stage1_bf16_a16w16_subQ16_mqa16"}
    assert all(stage1.covered(kernel) for kernel in kernels)
    assert {shape for _, shape in wanted} == set(row("kernelsanders_60").times_us)


def test_the_busiest_persistent_workgroup_is_traced():
    work_indptr = torch.tensor([0, 1, 1, 3, 4], dtype=torch.int32)
    works = torch.zeros((4, 8), dtype=torch.int32)
    works[:, 4] = torch.tensor([0, 100, 150, 300])
    works[:, 5] = torch.tensor([100, 150, 300, 320])
    assert aiter_traces.busiest_workgroup(work_indptr, works) == 2  # 50 + 150 rows


def test_a_trace_is_kept_and_read_back_by_its_key(tmp_path):
    stage, shape = aiter_traces.Stage1("a8w8", True, 32), (4, 1024)
    made, cached = aiter_traces.stage1_trace(stage, shape, tmp_path)
    assert not cached and made.only_traced and made.grid == (256, 1, 1)
    [(group, waves)] = made.workgroups.items()
    assert len(waves) == 4 and all(len(w.steps) > 500 for w in waves)
    again, cached = aiter_traces.stage1_trace(stage, shape, tmp_path)
    assert cached and list(again.workgroups) == [group]
    assert all((a.steps == b.steps).all() for a, b in zip(waves, again.workgroups[group]))
    assert aiter_traces.key(stage, shape) != aiter_traces.key(aiter_traces.Stage1("a8w8", True, 16), shape)


def test_a_persistent_launchs_bytes_share_follows_its_schedule():
    # 4 sequences x 32 splits = 128 equal works over 256 workgroups: the busiest has one, half have none
    assert aiter_traces.busiest_share(aiter_traces.Stage1("a8w8", True, 32), (4, 1024)) == 0.5
    assert aiter_traces.busiest_share(aiter_traces.Stage1("a8w8", True, 32), (256, 1024)) == 1.0
    assert aiter_traces.busiest_share(aiter_traces.Stage1("a8w8", False, 8), (4, 1024)) == 1.0
