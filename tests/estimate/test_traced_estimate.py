"""Issue 40: the estimate's emulated call traces its launches, the traces reach the gfx950 timing model,
and a replay from the shared recordings prices from the same trace files (a trace gone, or an entry kept
before tracing, runs the call again). A real small HIP kernel (the emulator tests' row sum) stands in for
the submission's launches; the worker is a double that answers as the child does."""
import functools

import torch

from harness.emulator import launch_hip
from harness.emulator.code_object import load_code_object
from harness.emulator.launch import run_kernel
from harness.estimate import fit, kernel_model, recordings, runner
from harness.estimate import model as cost
from harness.run import recording

from emulator.kernels import compile_hip, memory_of, pack_args
from emulator.test_end_to_end import REDUCTION

SPEC = {"batchsize": 4, "qseqlen": 1, "kvseqlen": 8192, "seed": 7}
LENGTHS = [32, 64]


def launch_row_sum(kv: int) -> None:
    """One launch as launch_hip._launch makes it: the core run with the trace option of now, recorded."""
    code = load_code_object(compile_hip(REDUCTION))
    rows, n = 4, 8 * kv  # the work grows with the KV length
    x, out = torch.randn(rows, n), torch.zeros(rows)
    counts = run_kernel(code, "row_sum", (rows, 1, 1), (256, 1, 1), pack_args(x, out, n),
                        memory=memory_of(x, out), **launch_hip.trace_option())
    launch_hip.record_launch("_Z7row_sumPKfPfi", (rows, 1, 1), (256, 1, 1), 0.0, counts)
    assert torch.allclose(out, x.sum(dim=1), rtol=1e-4, atol=1e-3)


class ChildDouble:
    """Answers "estimate" as the child does: a checked call, then the call under the recorder."""

    def __init__(self):
        self.calls = []
        launch_hip.summary()  # a new child's: no launch of an earlier test in this process

    def call(self, op, limit_s, args, device):
        self.calls.append(args["kvseqlen"])
        launch_row_sum(args["kvseqlen"])
        with recording.recording(device):
            launch_row_sum(args["kvseqlen"])
        return {"ok": True, "result": {"good": True, "message": "", "recording": {}},
                "emulated": launch_hip.summary()}


def priced(shelf, worker):
    recorded, emulated, replayed, failure = runner._record_shape(worker, SPEC, LENGTHS, "cpu", shelf)
    assert failure == "" and len(recorded) == 2
    (found,), why = runner._hip_launches(True, LENGTHS, emulated, 4, 8192, replayed)
    assert why == ""
    return found, cost.price(found, calibrated(), shape=(4, 8192))


@functools.cache
def calibrated():
    return fit.calibrated_model()[0]


def test_traced_launches_are_priced_by_the_timeline_and_replayed_from_the_same_files(tmp_path, monkeypatch):
    monkeypatch.setenv(launch_hip.ENV, "1")  # the emulated worker's: its recorder traces
    shelf = recordings.Recordings(runner.__file__, "emulated gfx950", tmp_path)
    child = ChildDouble()
    found, row = priced(shelf, child)
    assert child.calls == LENGTHS and launch_hip.trace_option() == {}  # tracing ends with the block
    assert [length for length, _ in found.fit.traced] == LENGTHS  # the recorded call's one launch each
    assert row.basis.endswith(kernel_model.TIMELINE)
    assert "3 of 4 workgroups traced" in row.detail and "extrapolated to kv 8192" in row.figures
    assert "replayed" not in row.figures
    shelf.commit()
    kept = sorted((tmp_path / recordings.TRACE_FOLDER).iterdir())
    assert len(kept) == 2 and all(path.suffix == ".npz" for path in kept)

    again = recordings.Recordings(runner.__file__, "emulated gfx950", tmp_path)
    silent = ChildDouble()
    replayed, row_again = priced(again, silent)
    assert silent.calls == [] and again.hits == 2 and again.traces == 2
    assert row_again.us == row.us and "traces of 2 of 2 calls replayed" in row_again.figures

    kept[0].unlink()  # one trace gone: that call runs again, never a price without it
    third = recordings.Recordings(runner.__file__, "emulated gfx950", tmp_path)
    rerun = ChildDouble()
    _, row_third = priced(third, rerun)
    assert len(rerun.calls) == 1 and third.hits == 1
    assert row_third.basis.endswith(kernel_model.TIMELINE)


def test_an_estimate_entry_kept_before_tracing_is_recorded_again(tmp_path):
    shelf = recordings.Recordings(runner.__file__, "emulated gfx950", tmp_path)
    old = {"ok": True, "result": {"good": True, "recording": {}},
           "emulated": {"_Z1kv": {"launches": 2, "counts": {"workgroups": 2}}}}
    shelf.keep("estimate", SPEC, old)
    shelf.keep("test", SPEC, old)  # the executed counts' calls never trace
    shelf.commit()
    again = recordings.Recordings(runner.__file__, "emulated gfx950", tmp_path)
    assert again.get("estimate", SPEC) is None and again.get("test", SPEC) is not None


def test_a_triton_kernel_traced_in_the_emulated_calls_is_priced_by_the_timeline(tmp_path):
    from harness.estimate import executed
    calls = []
    for kv in (64, 128, 256):  # a call per sample, as executed.sample's worker answers with tracing on
        with launch_hip.tracing():
            launch_row_sum(kv)
        reply = recordings.trace_files({"emulated": launch_hip.summary()})
        calls.append(((4, kv), {"row_sum": reply["emulated"]["_Z7row_sumPKfPfi"]}))
    fits = executed.fit_calls(calls, False)
    fitted = fits.fits["row_sum"]
    assert [units for units, _ in fitted.sampled] == [2.0, 4.0, 8.0]  # KV tiles per program
    costs = kernel_model.load_costs()
    at = {units: kernel_model.price_executed(4e6, 4, 1, units, fitted, costs, 8e12, 1e12, 256, None)
          for units in (4.0, 32.0)}
    assert at[4.0].method == kernel_model.TIMELINE
    assert "a line through 3 emulated calls at 2-8" in at[32.0].figures
    assert at[32.0].us > at[4.0].us  # the longer slice costs more
    untraced = [(shape, {"row_sum": dict(entry["row_sum"], traces=[])}) for shape, entry in calls]
    plain = executed.fit_calls(untraced, False).fits["row_sum"]
    counted = kernel_model.price_executed(4e6, 4, 1, 4.0, plain, costs, 8e12, 1e12, 256, None)
    assert plain.sampled == () and counted.method == kernel_model.EXECUTED_METHOD
    assert "not timed by the gfx950 timing model" in counted.detail  # the row says why
