"""Traced waves on the C fast path: the steps, EXEC lanes and cache lines they record are the
numpy path's (trace.Recorder, HostMemory.touched), on the row sum of test_trace (a loop, LDS,
barriers, lanes that drop out) and on aiter's stage-1 kernel (buffer loads, LDS-DMA, scalar loads)."""
import numpy as np
import torch

from harness.emulator import trace as tracing
from harness.emulator.code_object import load_code_object
from harness.emulator.launch import run_kernel
from harness.emulator.native import program, runner

from .kernels import compile_hip, memory_of, pack_args
from .native_bench import skip_without_clang
from .test_end_to_end import REDUCTION


def count_c_turns(monkeypatch) -> list:
    """The traced waves' turns in C, counted (else a fast run could trace on numpy and still agree)."""
    turns, original = [], runner.run_wave
    monkeypatch.setattr(runner, "run_wave", lambda *args, traced=False: (turns.append(1) if traced else None)
                        or original(*args, traced=traced))
    return turns


def assert_same_traces(fast, slow):
    assert "C fast path" in fast.engine and "C fast path" not in (slow.engine or "")
    assert sorted(fast.trace.workgroups) == sorted(slow.trace.workgroups)
    for group, waves in slow.trace.workgroups.items():
        for on_numpy, in_c in zip(waves, fast.trace.workgroups[group], strict=True):
            assert np.array_equal(on_numpy.steps, in_c.steps)
            assert np.array_equal(on_numpy.lanes, in_c.lanes)
    assert fast.trace.unique_lines == slow.trace.unique_lines
    assert fast.by_mnemonic == slow.by_mnemonic


def test_the_fast_path_traces_what_the_numpy_path_traces(monkeypatch):
    skip_without_clang()
    code = load_code_object(compile_hip(REDUCTION))
    x, out, n = torch.randn(3, 600), torch.zeros(3), 600  # the same addresses, so the same lines

    def traced():
        return run_kernel(code, "row_sum", (3, 1, 1), (256, 1, 1), pack_args(x, out, n), memory=memory_of(x, out),
                          trace=tracing.TraceRequest([(0, 0, 0), (2, 0, 0)]))
    turns = count_c_turns(monkeypatch)
    fast = traced()
    assert turns
    monkeypatch.setenv(program.ENV, "0")
    assert_same_traces(fast, traced())


def test_aiters_stage1_kernels_trace_alike_on_both_paths(monkeypatch):
    from harness.aiter_gfx950 import stage1
    from harness.estimate import aiter_traces

    skip_without_clang()
    turns = count_c_turns(monkeypatch)
    for stage, shape in [(aiter_traces.Stage1("a8w8", True, 32), (4, 256)),
                         (aiter_traces.Stage1("a16w16", False, 8), (4, 512))]:
        args, request = aiter_traces.arguments(stage, shape)  # one set of tensors: the same lines

        def traced():
            return stage1.run(stage.kernel, let_through=aiter_traces.LET_THROUGH, trace=request, **args).counts
        monkeypatch.setenv(program.ENV, "1")
        turns.clear()
        fast = traced()
        assert turns
        monkeypatch.setenv(program.ENV, "0")
        assert_same_traces(fast, traced())
