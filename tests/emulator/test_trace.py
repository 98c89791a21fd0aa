"""The launch trace the timing model reads: per traced wave, each instruction run, in order, with
its active lanes; run_kernel's trace option on a real small kernel (the row sum of
test_end_to_end: a loop, LDS, barriers and lanes that drop out)."""
import json
from dataclasses import replace

import numpy as np
import pytest
import torch

from harness.emulator import trace as tracing
from harness.emulator.code_object import load_code_object
from harness.emulator.errors import EmulationFault
from harness.emulator.launch import run_kernel
from harness.emulator.memory import LINE_BYTES

from .kernels import compile_hip, memory_of, pack_args
from .test_end_to_end import REDUCTION

SPIN = """
KERNEL void wait_for_first(volatile int* flag, int* out) {
  if (bid() == 0) { if (tid() == 0) *flag = 1; return; }
  while (*flag == 0) {}
  out[bid()] = 1;
}"""


def row_sum(rows: int, n: int = 600, trace=None):
    code = load_code_object(compile_hip(REDUCTION))
    x, out = torch.randn(rows, n), torch.zeros(rows)
    counts = run_kernel(code, "row_sum", (rows, 1, 1), (256, 1, 1), pack_args(x, out, n),
                        memory=memory_of(x, out), trace=trace)
    return counts, out, x


def steps_per_instruction(launch: tracing.LaunchTrace) -> dict[str, int]:
    every = np.concatenate([w.steps for waves in launch.workgroups.values() for w in waves])
    found: dict[str, int] = {}
    for index, count in enumerate(np.bincount(every).tolist()):
        if count:
            mnemonic = launch.instructions[index][0]
            found[mnemonic] = found.get(mnemonic, 0) + count
    return found


def test_tracing_every_workgroup_steps_equal_the_launchs_hits():
    request = tracing.TraceRequest([(0, 0, 0), (1, 0, 0), (2, 0, 0)])
    counts, out, x = row_sum(3, trace=request)
    torch.testing.assert_close(out, x.sum(dim=1), rtol=1e-5, atol=1e-4)  # traced, still right
    launch = counts.trace
    assert sorted(launch.workgroups) == [(0, 0, 0), (1, 0, 0), (2, 0, 0)]
    assert steps_per_instruction(launch) == counts.by_mnemonic
    assert launch.resources.waves_per_workgroup == 4 and launch.resources.vgprs > 0
    assert launch.resources.lds_bytes >= 256 * 4


def test_steps_follow_the_branches_in_order_and_lanes_drop_out():
    counts, _, _ = row_sum(1, trace=tracing.TraceRequest([(0, 0, 0)]))
    listing, waves = counts.trace.instructions, counts.trace.workgroups[(0, 0, 0)]
    for wave in waves:
        names = [listing[i][0] for i in wave.steps.tolist()]
        assert names[-1] == "s_endpgm" and names.count("s_endpgm") == 1
        assert names.count("s_barrier") == 9  # one before the halving, one per halving step
        jumps = np.flatnonzero(np.diff(wave.steps) != 1)
        # a step is the next instruction unless a branch was taken just before
        assert all(names[j].startswith(("s_branch", "s_cbranch")) for j in jumps)
    first, last = waves[0], waves[-1]
    assert (np.diff(first.steps) < 0).any()  # the strided loop runs again
    assert (np.diff(last.steps) > 1).sum() > 3  # wave 3's lanes skip the halving's adds
    assert len(first.steps) > len(last.steps)
    assert 0 < first.lanes[first.lanes < 64].max()  # tid() < step: part of wave 0 adds


def test_only_traced_runs_the_chosen_workgroups_alone():
    full, _, _ = row_sum(9)
    alone, out, x = row_sum(9, trace=tracing.TraceRequest(only_traced=True))
    assert sorted(alone.trace.workgroups) == [(0, 0, 0), (4, 0, 0), (8, 0, 0)]
    assert alone.instructions * 3 == full.instructions  # rows alike: three of nine
    ran = [k for k in range(9) if out[k] != 0]
    assert ran == [0, 4, 8]
    torch.testing.assert_close(out[ran], x.sum(dim=1)[ran], rtol=1e-5, atol=1e-4)


def test_a_traced_workgroup_waiting_on_an_untraced_one_is_a_named_hang(monkeypatch):
    from harness.emulator import launch
    monkeypatch.setattr(launch, "HANG_LIMIT", 2_000)
    monkeypatch.setattr(launch, "WORKGROUP_SLICE", 1_000)  # the hang is checked between slices
    code = load_code_object(compile_hip(SPIN))
    flag, out = torch.zeros(1, dtype=torch.int32), torch.zeros(2, dtype=torch.int32)
    with pytest.raises(EmulationFault, match="only the traced workgroups ran"):
        run_kernel(code, "wait_for_first", (2, 1, 1), (64, 1, 1), pack_args(flag, out),
                   memory=memory_of(flag, out), trace=tracing.TraceRequest([(1, 0, 0)], only_traced=True))


def test_save_and_load_round_trip_and_the_folder_switch(tmp_path, monkeypatch):
    monkeypatch.setenv(tracing.ENV, str(tmp_path))
    counts, _, _ = row_sum(2)
    saved = sorted(tmp_path.glob("launch-*.npz"))
    assert [p.name for p in saved] == ["launch-0000-row_sum.npz"]
    back = tracing.load(saved[0])
    assert back.grid == counts.trace.grid and back.instructions == counts.trace.instructions
    assert back.resources == counts.trace.resources and not back.only_traced
    for group, waves in counts.trace.workgroups.items():
        for before, after in zip(waves, back.workgroups[group]):
            assert np.array_equal(before.steps, after.steps)
            assert np.array_equal(before.lanes, after.lanes)
    assert back.unique_lines == counts.trace.unique_lines and len(back.unique_lines) == 2


def _lines(start: int, nbytes: int) -> set:
    return set(range(start // LINE_BYTES, (start + nbytes - 1) // LINE_BYTES + 1))


def test_a_traced_workgroup_counts_the_distinct_cache_lines_it_touched():
    n = 600  # a row of 2,400 bytes: its lines, the output's one, the kernel arguments' one or two
    counts, out, x = row_sum(3, n, trace=tracing.TraceRequest([(0, 0, 0), (2, 0, 0)]))
    for row in (0, 2):
        data = _lines(x.data_ptr() + row * n * 4, n * 4) | _lines(out.data_ptr() + row * 4, 4)
        assert len(data) + 1 <= counts.trace.unique_lines[(row, 0, 0)] <= len(data) + 2
    loads = [(w.steps[i], int(w.lanes[i])) for w in counts.trace.workgroups[(0, 0, 0)]
             for i in range(len(w.steps))]
    listing = counts.trace.instructions
    assert sum(lanes for i, lanes in loads if listing[i][0].startswith("global_load")) == n  # each once


def test_a_trace_saved_before_lines_were_counted_still_loads(tmp_path):
    counts, _, _ = row_sum(1, trace=tracing.TraceRequest([(0, 0, 0)]))
    old = replace(counts.trace, unique_lines={})
    old.save(tmp_path / "old.npz")
    with np.load(tmp_path / "old.npz") as saved:  # written as format 1 wrote it: no lines, format 1
        arrays = dict(saved)
    head = json.loads(arrays["head"].tobytes())
    head["format"] = 1
    head.pop("unique_lines")
    arrays["head"] = np.frombuffer(json.dumps(head).encode(), np.uint8)
    np.savez_compressed(tmp_path / "format1.npz", **arrays)
    back = tracing.load(tmp_path / "format1.npz")
    assert back.unique_lines == {} and back.workgroups.keys() == counts.trace.workgroups.keys()
    head["format"] = 99
    arrays["head"] = np.frombuffer(json.dumps(head).encode(), np.uint8)
    np.savez_compressed(tmp_path / "format99.npz", **arrays)
    with pytest.raises(ValueError, match="trace format 99"):
        tracing.load(tmp_path / "format99.npz")


def test_chosen_workgroups_are_spread_and_checked():
    assert tracing.TraceRequest().chosen((4, 2, 1)) == [(0, 0, 0), (0, 1, 0), (3, 1, 0)]
    assert tracing.TraceRequest().chosen((1, 1, 1)) == [(0, 0, 0)]
    with pytest.raises(ValueError, match="outside the grid"):
        tracing.TraceRequest([(5, 0, 0)]).chosen((4, 1, 1))
