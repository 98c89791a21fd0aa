"""The corpus of broken, hostile and slow submissions, each run through the real `harness run` in a child process.

Every file in tests/samples/bad/ has one expected verdict below (status and a piece of its reason or
warning). The files run in a few batches, one harness invocation each, so the tests also see that a bad
submission never stops the run of the next one, that the harness exits 1, that the ledger gets one
record per file with the same verdict, and that no traceback of the harness itself is printed.
GPU-only cases (device out-of-memory, a faulting kernel, the cache cheat on a GPU) are marked `gpu`.
"""
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.results import ledger
from harness.run import cases


REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "tests" / "samples" / "bad"
SHORT_TIMEOUT_S = 3  # the --timeout for the files that hang or sleep


@dataclass(frozen=True)
class Expected:
    status: str  # the run's status in the ledger: pass | fail | error | timeout | rejected
    reason: str = ""  # a piece of the run's one-line reason
    warning: str = ""  # a piece of one of the run's warnings
    batch: str = "test"  # which harness invocation runs it (see BATCHES)


EXPECTED = {
    "syntax_error.py": Expected("error", "SyntaxError"),
    "missing_module.py": Expected("error", "No module named 'mla_kernels_that_do_not_exist'"),
    "no_custom_kernel.py": Expected("error", "defines no custom_kernel"),
    "raises.py": Expected("error", "RuntimeError: split count must divide the KV length (submission line 8)"),
    "wrong_shape.py": Expected("fail", "SIZE MISMATCH: output (1, 16, 256), expected (1, 16, 512)"),
    # Decision: a float32 output passes (the official check compares in float32 and passes it), warned loudly.
    "wrong_dtype.py": Expected("pass", warning="output dtype is torch.float32"),
    "wrong_device.py": Expected("fail", "output is on meta, expected cpu"),
    "nan_everywhere.py": Expected("fail", "Number of mismatched elements: 8192", warning="8192 NaN"),
    "nan_few.py": Expected("pass", warning="output holds 3 NaN"),
    "returns_input.py": Expected("fail", "SIZE MISMATCH: output (1, 16, 576)"),
    "mutates_inputs.py": Expected("fail", "mismatched elements"),
    "uninitialised.py": Expected("fail", "returned uninitialised memory"),
    "exits.py": Expected("error", "exited with code 3", batch="tables"),
    "aborts.py": Expected("error", "killed by signal 6 (SIGABRT)", batch="tables"),
    "segfaults.py": Expected("error", "killed by signal 11 (SIGSEGV)", batch="tables"),
    "out_of_memory.py": Expected("error", "out of memory", batch="tables"),
    "floods_output.py": Expected("error", "output cap"),
    "patches_timer.py": Expected("error", "tampered with time.perf_counter_ns", batch="tables"),
    "patches_reference.py": Expected("error", "tampered with reference.check_implementation", batch="tables"),
    "patches_clock_in_call.py": Expected("error", "tampered with time.perf_counter_ns", batch="tables"),
    "forges_reply.py": Expected("error", "forged reply", batch="tables"),
    "forbidden_word.py": Expected("rejected", "the server would reject it", warning="FORBIDDEN_WORD", batch="tables"),
    "hangs.py": Expected("timeout", f"exceeded the run's {SHORT_TIMEOUT_S} s time limit", batch="timeouts"),
    "sleeps.py": Expected("timeout", f"exceeded the run's {SHORT_TIMEOUT_S} s time limit", batch="timeouts"),
    "caches_output.py": Expected("fail", "timed call 1", warning="SHAPE_OUTPUT_REPLAY", batch="leaderboard"),
}

# One harness invocation per batch; the first prints JSON, the others the tables a user sees. Each batch runs
# on one xdist worker (its tests share an xdist group), so the batches run side by side.
BATCHES = {
    "test": ["--mode", "test", "--json"],
    "tables": ["--mode", "test"],
    "timeouts": ["--mode", "test", "--timeout", str(SHORT_TIMEOUT_S)],
    "leaderboard": ["--mode", "leaderboard"],
}
# The crashing files restart their worker for every case (~3 s of CPU each, torch imported): their batch runs
# two of the small cases, enough to see the case after a crash still run.
# The "test" batch runs three, its last one 2 x 450 rather than SMALL's 2 x 4500: no verdict here depends
# on the size, and that case's input and check for 14 files were ~1/6 of the batch's CPU.
BATCH_CASES = {"tables": cases.SMALL[:2],
               "test": [*cases.SMALL[:2], dict(cases.SMALL[2], kvseqlen=450)]}
HARNESS_SOURCES = ("harness/run/worker.py", "harness/run/child.py", "harness/run/faults.py", "harness/run/protocol.py",
                   "harness/cli.py", "harness/run/timing.py")


@dataclass
class BatchRun:
    returncode: int
    stdout: str
    stderr: str
    records: dict  # file name -> its ledger record
    logs: Path  # the batch's worker logs, in its own results folder


def run_batch(name: str, tmp_path: Path) -> BatchRun:
    files = [str(CORPUS / f) for f, e in EXPECTED.items() if e.batch == name]
    ledger_path = tmp_path / f"{name}.jsonl"
    results = tmp_path / f"{name}-results"
    env = {**os.environ, "HARNESS_LEDGER": str(ledger_path), "HARNESS_RESULTS": str(results), "COLUMNS": "200",
           # keep the worker's address space small so the out-of-memory file fails within a second
           "HARNESS_WORKER_MEMORY_LIMIT": "4G",
           # and its log small, so the flood stops after 8 MiB instead of the default cap
           "HARNESS_WORKER_OUTPUT_LIMIT": "8M"}
    env.pop("HARNESS_DEBUG", None)
    chosen = "small"
    if name in BATCH_CASES:
        chosen = tmp_path / f"{name}-cases.yml"
        chosen.write_text("".join(f"- {json.dumps(spec)}\n" for spec in BATCH_CASES[name]))
    done = subprocess.run([sys.executable, "-c", "from harness.cli import main; main()", "run", *files,
                           "--device", "cpu", "--cases", str(chosen), *BATCHES[name]],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    records = {Path(r["submission"]["path"]).name: r for r in ledger.read(ledger_path)}
    return BatchRun(done.returncode, done.stdout, done.stderr, records, results / "logs")


class Batches(dict):
    """Each batch's run, made when a test first asks for it (a worker runs only the batches of its tests)."""

    def __init__(self, root: Path):
        super().__init__()
        self.root = root

    def __missing__(self, name: str) -> BatchRun:
        self[name] = run_batch(name, self.root)
        return self[name]


@pytest.fixture(scope="module")
def batches(tmp_path_factory):
    return Batches(tmp_path_factory.mktemp("corpus"))


def of_batch(batch: str):
    """The xdist group of a batch's tests: one worker runs the batch once (make test: --dist loadgroup)."""
    return pytest.mark.xdist_group(f"reliability-{batch}")


def batch_marks(batch: str) -> list:
    """Its group, and slow: whichever test of a batch comes first pays for the batch's run (10-85 s)."""
    return [of_batch(batch), pytest.mark.slow]


def test_every_corpus_file_has_an_expected_verdict():
    assert sorted(p.name for p in CORPUS.glob("*.py")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", [pytest.param(n, marks=batch_marks(EXPECTED[n].batch)) for n in sorted(EXPECTED)])
def test_verdict(batches, name):
    expected = EXPECTED[name]
    record = batches[expected.batch].records.get(name)
    assert record is not None, f"no ledger record for {name}"
    assert record["status"] == expected.status, record["reason"]
    assert expected.reason in record["reason"], record["reason"]
    assert "\n" not in record["reason"]
    if expected.warning:
        assert any(expected.warning in w for w in record["warnings"]), record["warnings"]
    for result in record["results"]:  # every case has a status: a bad case never stops the next one silently
        assert result["status"] in ("pass", "fail", "error", "timeout", "skip", "not run")
    if expected.batch != "leaderboard":
        assert len(record["results"]) == len(BATCH_CASES.get(expected.batch, cases.SMALL))


@pytest.mark.parametrize("batch", [pytest.param(b, marks=batch_marks(b)) for b in sorted(BATCHES)])
def test_batch_runs_every_file_exits_1_and_prints_no_harness_traceback(batches, batch):
    run = batches[batch]
    names = [f for f, e in EXPECTED.items() if e.batch == batch]
    assert sorted(run.records) == sorted(names), run.stderr[-2000:]
    assert run.returncode == 1
    shown = run.stdout + run.stderr
    for source in HARNESS_SOURCES:
        assert source not in shown, f"a harness traceback leaked ({source}):\n{shown[-3000:]}"
    assert "internal error" not in shown


@of_batch("test")
@pytest.mark.slow
def test_json_output_is_the_ledger(batches):
    run = batches["test"]
    printed = {Path(r["submission"]["path"]).name: r for r in json.loads(run.stdout)}
    assert printed == run.records  # what --json prints is exactly what the ledger holds


@pytest.mark.parametrize("batch", [pytest.param(b, marks=batch_marks(b)) for b in ("tables", "timeouts", "leaderboard")])
def test_tables_carry_each_reason(batches, batch):
    run = batches[batch]
    for name, record in run.records.items():
        assert record["reason"].split("): ", 1)[-1][:40] in " ".join(run.stdout.split()), (name, run.stdout[-3000:])


def test_uninitialised_output_cannot_reuse_the_warm_ups_answer(tmp_path):
    """Benchmark mode checks case 1 with the warm-up's seed: a stale block could hold the right answer."""
    env = {**os.environ, "HARNESS_LEDGER": str(tmp_path / "ledger.jsonl")}
    cases = tmp_path / "one.yml"
    cases.write_text("- {batchsize: 3, qseqlen: 1, kvseqlen: 257, seed: 12}\n")
    done = subprocess.run([sys.executable, "-c", "from harness.cli import main; main()", "run",
                           str(CORPUS / "uninitialised.py"), "--device", "cpu", "--cases", str(cases),
                           "--mode", "benchmark", "--json"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    (record,) = json.loads(done.stdout)
    assert done.returncode == 1 and record["status"] == "fail"
    assert "returned uninitialised memory: 100%" in record["reason"]


@of_batch("test")
@pytest.mark.slow
def test_a_flood_leaves_a_capped_log_and_a_short_table(batches):
    run = batches["test"]
    assert len(run.stdout) < 2_000_000  # the JSON of 20 runs, not megabytes of the flood
    logs = sorted(run.logs.glob("floods_output-test-*.log"), key=lambda p: p.stat().st_mtime)
    assert logs and logs[-1].stat().st_size <= 9 * 2**20


# ---------------------------------------------------------------------------------------------
# The defences one by one, in this process (fast)
# ---------------------------------------------------------------------------------------------

@pytest.fixture
def trusted():
    from harness.run import child

    child.trust_current_environment()
    yield child
    child._trusted.clear()  # the next user takes fresh references


def test_tamper_detection_names_what_was_replaced(trusted, monkeypatch):
    import time
    import types

    trusted.verify_untampered()
    monkeypatch.setattr(time, "perf_counter_ns", lambda: 0)
    with pytest.raises(trusted.TamperError, match="tampered with time.perf_counter_ns"):
        trusted.verify_untampered()
    monkeypatch.undo()
    trusted.verify_untampered()
    monkeypatch.setitem(sys.modules, "reference", types.ModuleType("reference"))  # a whole module swapped
    with pytest.raises(trusted.TamperError, match="tampered with reference.generate_input"):
        trusted.verify_untampered()


def test_timed_calls_use_the_references_taken_before_the_import(trusted, monkeypatch):
    import time

    calls = []

    class FakeEvent:
        def __init__(self, enable_timing):
            self.name = f"event{len([c for c in calls if c.startswith('new')])}"
            calls.append(f"new {self.name}")

    ticks = iter([1_000, 1_750])
    monkeypatch.setitem(trusted._trusted, "time.perf_counter_ns", lambda: next(ticks))
    monkeypatch.setattr(time, "perf_counter_ns", lambda: 0)  # what a submission might have done meanwhile
    assert trusted._timed_call(lambda: "out", "cpu", "none") == ("out", 750)
    fakes = {"torch.cuda.Event": FakeEvent,
             "torch.cuda.Event.record": lambda event: calls.append(f"record {event.name}"),
             "torch.cuda.Event.elapsed_time": lambda start, end: 0.002,  # ms
             "torch.cuda.synchronize": lambda: calls.append("synchronize"),
             "harness.run.timing.flush_last_level_cache": lambda mode: calls.append(f"flush {mode}")}
    for name, fake in fakes.items():
        monkeypatch.setitem(trusted._trusted, name, fake)
    result, duration = trusted._timed_call(lambda: calls.append("kernel") or "out", "cuda", "fast")
    assert (result, duration) == ("out", pytest.approx(2000.0))
    assert calls == ["synchronize", "flush fast", "new event0", "new event1", "record event0", "kernel",
                     "record event1", "synchronize"]


def test_poison_pattern_is_recognised():
    import torch

    from harness.run import poison

    poisoned = torch.empty((2, 16, 512), dtype=torch.bfloat16)
    poisoned.view(torch.int16).fill_(poison.POISON_BITS)
    assert poison.poisoned_share(poisoned) == 1.0
    wide = torch.empty((2, 16, 512), dtype=torch.float32)  # a float32 output left unwritten
    wide.view(torch.int16).fill_(poison.POISON_BITS)
    assert poison.poisoned_share(wide) == 1.0
    malloc_filled = torch.empty((2, 16, 512), dtype=torch.bfloat16)  # what a CPU worker's allocations hold
    malloc_filled.view(torch.int16).fill_(poison.MALLOC_POISON_BITS)
    assert poison.poisoned_share(malloc_filled) == 1.0
    # a NaN from arithmetic is not the poison
    assert poison.poisoned_share(torch.full((2, 16, 512), float("nan"), dtype=torch.bfloat16)) == 0.0
    assert poison.poisoned_share(torch.empty((2, 16, 512), device="meta")) == 0.0
    assert poison.poisoned_share("not a tensor") == 0.0
    poison.poison_output_memory(torch.zeros((2, 16, 576), dtype=torch.bfloat16), "cpu")  # must not raise


def test_gpu_poisoning_allocates_every_big_enough_free_block(monkeypatch):
    """The GPU path, run on the CPU with the allocator's snapshot and torch.empty stood in for."""
    import torch

    from harness.run import poison

    output_bytes = 2 * 16 * 512 * 2
    segments = [{"blocks": [{"state": "inactive", "size": output_bytes * 3},
                            {"state": "active_allocated", "size": output_bytes * 5},
                            {"state": "inactive", "size": output_bytes // 2}]},  # too small to hold an output
                {"blocks": [{"state": "inactive", "size": output_bytes}]}]
    made = []
    real_empty = torch.empty

    def recording_empty(size, dtype, device):
        made.append(real_empty(size, dtype=dtype))
        return made[-1]

    segments.append({"device": 7, "blocks": [{"state": "inactive", "size": output_bytes * 9}]})  # another GPU
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(torch.cuda, "memory_snapshot", lambda: segments)
    monkeypatch.setattr(torch, "empty", recording_empty)
    poison.poison_output_memory(real_empty((2, 16, 576), dtype=torch.bfloat16), "cuda")
    blocks, exact = made[:2], made[2:]
    assert [t.numel() for t in blocks] == [output_bytes * 3, output_bytes]  # biggest first, exact sizes
    for block in blocks:  # the start of each block, room for a float32 output, holds the poison
        head = block[: min(block.numel(), 2 * output_bytes)].view(torch.int16)
        assert bool((head == poison.POISON_BITS).all())
    # then requests of the output's own size, poisoned whole: where its request lands, whichever pool
    assert [t.numel() * t.element_size() for t in exact] == [output_bytes] * poison.POISON_COPIES
    assert all(bool((t == poison.POISON_BITS).all()) for t in exact)


def test_worker_limits_and_the_reasons_they_give():
    import errno

    from harness.run import faults
    from harness.run import limits

    assert limits.parse_size("8G") == 8 << 30 and limits.parse_size("512MiB") == 512 << 20
    assert limits.parse_size("1000") == 1000
    for bad in ("", "G", "-1G", "lots", "inf", "nan"):
        with pytest.raises(ValueError):
            limits.parse_size(bad)
    assert limits.memory_limit({limits.MEMORY_LIMIT_ENV: "3G"}) == 3 << 30
    assert limits.output_limit({}) == limits.DEFAULT_OUTPUT_LIMIT
    assert limits.output_limit({limits.OUTPUT_LIMIT_ENV: "lots"}) == limits.DEFAULT_OUTPUT_LIMIT
    assert limits.invalid_limits({limits.OUTPUT_LIMIT_ENV: "lots"}) == [
        "HARNESS_WORKER_OUTPUT_LIMIT='lots' is not a size like 8G or 512M; using the default"]
    flood = OSError(errno.EFBIG, "File too large")
    assert faults.one_line_error(flood, "/x.py").startswith("output cap: the submission wrote more than")
    oom = RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: can't allocate memory: you tried")
    assert faults.one_line_error(oom, "/x.py").startswith("out of memory: RuntimeError: ")


# ---------------------------------------------------------------------------------------------
# GPU-specific cases: run on the device (bench/reliability_gpu.sh); deselected on CPU-only machines.
# ---------------------------------------------------------------------------------------------

GPU_CORPUS = CORPUS / "gpu"
GPU_EXPECTED = {  # tests/samples/bad/gpu/: name -> (status, piece of the reason)
    "out_of_memory.py": ("error", "out of memory"),
    "device_assert.py": ("error", ""),  # the wording is the device's (CUDA and ROCm differ)
    "triton_oob.py": ("error", ""),
}


def _gpu_available() -> bool:
    import torch

    return torch.cuda.is_available()


def test_every_gpu_corpus_file_has_an_expected_verdict():
    assert sorted(p.name for p in GPU_CORPUS.glob("*.py")) == sorted(GPU_EXPECTED)


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(GPU_EXPECTED))
def test_gpu_fault_is_reported_and_the_next_submission_runs(tmp_path, name):
    if not _gpu_available():
        pytest.skip("needs a CUDA or ROCm device (run with -m gpu on the device)")
    status, reason = GPU_EXPECTED[name]
    bad = GPU_CORPUS / name
    ledger_path = tmp_path / "ledger.jsonl"
    env = {**os.environ, "HARNESS_LEDGER": str(ledger_path), "COLUMNS": "200"}
    after = CORPUS / "wrong_shape.py"  # runs right after the fault: the device must still work
    done = subprocess.run([sys.executable, "-c", "from harness.cli import main; main()", "run", str(bad), str(after),
                           "--device", "cuda", "--cases", "small", "--mode", "test", "--timeout", "120"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    records = {Path(r["submission"]["path"]).name: r for r in ledger.read(ledger_path)}
    assert done.returncode == 1, done.stderr[-2000:]
    assert records[name]["status"] == status and reason in records[name]["reason"], records[name]["reason"]
    assert records["wrong_shape.py"]["status"] == "fail"
    assert "SIZE MISMATCH" in records["wrong_shape.py"]["reason"]
    for source_file in HARNESS_SOURCES:
        assert source_file not in done.stdout + done.stderr


@pytest.mark.gpu
def test_gpu_cache_cheat_fails_leaderboard_and_uninitialised_output_fails_benchmark(tmp_path):
    if not _gpu_available():
        pytest.skip("needs a CUDA or ROCm device (run with -m gpu on the device)")
    ledger_path = tmp_path / "ledger.jsonl"
    env = {**os.environ, "HARNESS_LEDGER": str(ledger_path), "COLUMNS": "200"}
    runs = {}
    for name, mode in (("caches_output.py", "leaderboard"), ("caches_output.py", "benchmark"),
                       ("uninitialised.py", "benchmark")):
        done = subprocess.run([sys.executable, "-c", "from harness.cli import main; main()", "run",
                               str(CORPUS / name), "--device", "cuda", "--cases", "small", "--mode", mode,
                               "--timeout", "300"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
        runs[(name, mode)] = (done.returncode, ledger.read(ledger_path)[-1])
    assert runs[("caches_output.py", "leaderboard")][0] == 1
    assert runs[("caches_output.py", "leaderboard")][1]["status"] == "fail"
    # Benchmark mode reuses one input per case, so the replay cheat passes there (as it does officially), but
    # its data_ptr() cache is a pattern the server's rules reject: never a plain pass.
    assert runs[("caches_output.py", "benchmark")][1]["status"] == "rejected"
    # torch.empty could get the block of the warm-up's reference output for the same seed; the poison stops it.
    assert runs[("uninitialised.py", "benchmark")][1]["status"] == "fail"
    assert "uninitialised" in runs[("uninitialised.py", "benchmark")][1]["reason"]
