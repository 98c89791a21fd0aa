"""The official evaluation protocol (gpu-mode reference-kernels, problems/amd_202602/eval.py), locally.

Read it top to bottom like eval.py:
  1. seeds: the secret POPCORN_SEED is combined with every case seed (Cantor pairing);
  2. the child side: _run_single_test / _run_single_benchmark / _run_single_profile run inside the
     submission's worker process (eval.py runs them in its spawned pool of one);
  3. the parent side: run_tests, run_benchmarks, run_leaderboard, run_profile send one case at a
     time to the worker (eval.py's pool.apply), with eval.py's repeat and time budgets;
  4. evaluate: one submission, one mode, all cases -> a RunResult; record() turns it into a ledger record.
"""
import dataclasses
import datetime
import json
import statistics
import os
import sys
from pathlib import Path

from harness import ledger, lint, timing
from harness.cases import spec_line
from harness.platform import Platform, can_run
from harness.submission import Submission
from harness.worker import LOG_DIR, Worker, invalid_limits

MODES = ("test", "benchmark", "leaderboard", "profile")
SEED_STEP = 13  # leaderboard mode: every timed call gets fresh input from seed += 13


@dataclasses.dataclass(frozen=True)
class Budget:
    """How long one case may be timed: at most max_repeats calls and max_time_ns of summed kernel time."""
    max_repeats: int
    max_time_ns: float


@dataclasses.dataclass(frozen=True)
class Budgets:
    """eval.py's numbers; tests may pass smaller ones."""
    benchmark_warmup: Budget = Budget(100, 10e7)
    benchmark: Budget = Budget(1000, 50e9)
    leaderboard_warmup: Budget = Budget(100, 1e7)
    leaderboard: Budget = Budget(100, 30e9)


OFFICIAL_BUDGETS = Budgets()


@dataclasses.dataclass
class Case:
    """One case as eval.py's TestCase: `spec` as written (what reports show), `args` with the secret seed applied."""
    spec: dict
    args: dict


@dataclasses.dataclass
class CaseResult:
    spec: dict
    status: str  # "pass" | "fail" | "error" | "timeout" | "skip"
    message: str = ""
    stats: timing.Stats | None = None
    notes: dict = dataclasses.field(default_factory=dict)
    report: str = ""  # profile mode: the profiler table
    log_tail: str = ""  # what the child printed last, when it crashed or raised

    def record(self) -> dict:
        return {"spec": self.spec, "status": self.status, "message": self.message,
                "stats": dataclasses.asdict(self.stats) if self.stats else None, "notes": self.notes}


@dataclasses.dataclass
class RunResult:
    submission: Submission
    mode: str
    cases: str  # "official" | "small" | the cases file
    flush: str
    platform: Platform
    status: str  # "pass" | "fail" | "skip" | "error"
    reason: str
    results: list
    warnings: list
    started: str
    finished: str
    log_path: Path | None = None

    @property
    def failed(self) -> bool:
        return self.status in ("fail", "error")


# ---------------------------------------------------------------------------------------------
# 1. Seeds
# ---------------------------------------------------------------------------------------------

def combine_seed(a: int, b: int) -> int:
    """eval.py's _combine: a + (a+b)(a+b+1)/2, so a large secret b makes every case seed large."""
    return int(a + (a + b) * (a + b + 1) // 2)


def secret_seed(environ=os.environ) -> int | None:
    """POPCORN_SEED as an integer, None when unset; ValueError with a clear message when it is not a number."""
    text = environ.get("POPCORN_SEED")
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"POPCORN_SEED must be an integer, got {text!r}") from None


def make_cases(specs: list, secret: int | None) -> list:
    """Cases whose run seeds are combined with the secret seed when there is one."""
    cases = []
    for spec in specs:
        args = dict(spec)
        if secret is not None and "seed" in args:
            args["seed"] = combine_seed(args["seed"], secret)
        cases.append(Case(spec=dict(spec), args=args))
    return cases


# ---------------------------------------------------------------------------------------------
# 2. Child side: runs inside the worker process, next to the submission
# ---------------------------------------------------------------------------------------------

# -- defences: the originals the submission must not replace, and memory it must not pass off as output --

class Verdict(Exception):
    """A failure the harness words itself: the worker reports str(exc) as is, without a type name."""


class SubmissionImportError(Verdict):
    """The submission could not be imported; every later case would fail the same way."""


class TamperError(Verdict):
    """The submission replaced something the evaluation relies on."""


# What the evaluation relies on; the worker takes these before importing the submission and uses them.
GUARDED = ("torch.cuda.Event", "torch.cuda.Event.record", "torch.cuda.Event.elapsed_time",
           "torch.cuda.Event.synchronize", "torch.cuda.synchronize", "time.perf_counter_ns",
           "reference.generate_input", "reference.ref_kernel", "reference.check_implementation",
           "torch.Tensor.clone", "torch.isclose", "harness.timing.flush_last_level_cache")
_trusted: dict = {}

# A bfloat16 NaN with a payload no arithmetic produces: memory holding it was never written by the submission.
POISON_BITS = 0x7FA5
POISON_COPIES = 4  # when the GPU allocator has no free block, several fresh ones
# What a CPU worker's fresh allocations hold (MALLOC_PERTURB_=128 fills them with 0x7F bytes; see worker.py).
MALLOC_POISON_BITS = 0x7F7F


def _resolve(dotted: str):
    """The object a dotted name refers to right now, looked up from sys.modules (None if gone)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        found = sys.modules.get(".".join(parts[:cut]))
        if found is not None:
            break
    else:
        return None
    for part in parts[cut:]:
        found = getattr(found, part, None)
    return found


def trust_current_environment() -> None:
    """Remember the originals of everything in GUARDED; the worker calls this before importing the submission."""
    import time as _time  # noqa: F401  (so that every GUARDED module is loaded)

    import torch  # noqa: F401

    import reference  # noqa: F401

    _trusted.clear()
    _trusted.update({name: _resolve(name) for name in GUARDED})


def _trusted_object(name: str):
    if not _trusted:
        trust_current_environment()
    return _trusted[name]


def verify_untampered() -> None:
    """Raise TamperError naming the first guarded object the submission replaced."""
    for name, original in _trusted.items():
        if _resolve(name) is not original:
            raise TamperError(f"tampered with {name}")


def poison_output_memory(q, device: str) -> None:
    """On a GPU, fill free output-sized memory with POISON_BITS, so torch.empty cannot return a stale answer.

    Without this, benchmark mode's checked call could get the block that held the warm-up's reference
    output for the very same seed. Only before untimed calls: emptying the GPU cache slows the next call.
    (A CPU worker needs nothing here: its malloc fills every allocation, see worker.child_environment.)
    """
    import torch

    if device == "cpu":
        return  # the CPU worker's malloc fills every allocation with MALLOC_POISON_BITS already
    output_bytes = q.shape[0] * q.shape[1] * 512 * 2  # a (total_q, heads, 512) bfloat16 output
    torch.cuda.empty_cache()  # wholly free segments go back to the driver; what is left is poisoned below
    # The caching allocator carves a request from the start of a free block: poison the start of every
    # free block big enough to hold an output, by allocating each one at its exact size.
    device_index = q.device.index if q.device.index is not None else torch.cuda.current_device()
    free_sizes = sorted((block["size"] for segment in torch.cuda.memory_snapshot()
                         if segment.get("device", device_index) == device_index for block in segment["blocks"]
                         if block["state"] == "inactive" and block["size"] >= output_bytes), reverse=True)
    held = []
    for size in free_sizes:
        block = torch.empty(size, dtype=torch.uint8, device=q.device)
        block[: min(size, 2 * output_bytes) // 2 * 2].view(torch.int16).fill_(POISON_BITS)
        held.append(block)
    if not held:  # nothing cached: a fresh output-sized block would come next, poison that one
        held = [torch.empty(output_bytes, dtype=torch.int16, device=q.device).fill_(POISON_BITS)
                for _ in range(POISON_COPIES)]
    del held


def poisoned_share(output) -> float:
    """The share of the output that still holds the poison pattern (0 when it cannot be read)."""
    import torch

    try:
        if output.element_size() not in (2, 4) or output.device.type == "meta":
            return 0.0
        bits = output.detach().contiguous().view(torch.int16)
        poisoned = (bits == POISON_BITS) | (bits == MALLOC_POISON_BITS)
        return float(poisoned.float().mean()) if bits.numel() else 0.0
    except (RuntimeError, TypeError, AttributeError):
        return 0.0


def _checked(data, output) -> tuple:
    """The reference's verdict, plus a plain explanation when the output is memory nobody wrote."""
    good, message = _trusted_object("reference.check_implementation")(data, output)
    if not good:
        share = poisoned_share(output)
        if share > 0.5:
            message = (f"returned uninitialised memory: {share:.0%} of the output still holds the harness's "
                       f"poison pattern (torch.empty that no kernel wrote?)\n{message}")
    return bool(good), message


def _timed_call(fn, device: str, flush: str):
    """timing.time_call with the clocks, events and flush taken before the submission was imported."""
    clocks = timing.Clocks(
        perf_counter_ns=_trusted_object("time.perf_counter_ns"),
        synchronize=_trusted_object("torch.cuda.synchronize"),
        event=_trusted_object("torch.cuda.Event"),
        record=_trusted_object("torch.cuda.Event.record"),
        elapsed_time=_trusted_object("torch.cuda.Event.elapsed_time"),
        flush=_trusted_object("harness.timing.flush_last_level_cache"),
    )
    return timing.time_call(fn, device, flush, clocks)


def clone_data(data):
    """A deep copy of every tensor in nested tuples, lists and dicts (eval.py's _clone_data)."""
    import torch

    if isinstance(data, tuple):
        return tuple(clone_data(x) for x in data)
    if isinstance(data, list):
        return [clone_data(x) for x in data]
    if isinstance(data, dict):
        return {k: clone_data(v) for k, v in data.items()}
    if isinstance(data, torch.Tensor):
        return data.clone()
    return data


def _custom_kernel():
    """The submission's entry point, imported on first use (as eval.py does) and checked for tampering."""
    _trusted_object("time.perf_counter_ns")  # take the originals before the submission can touch them
    already_imported = "submission" in sys.modules
    try:
        import submission  # the worker maps module `submission` to the submission file
    except Exception as exc:
        # A SyntaxError names its own line; for the rest the worker adds the submission's line from the cause.
        raise SubmissionImportError(_import_failure(exc)) from (None if isinstance(exc, SyntaxError) else exc)
    if not already_imported:
        try:
            verify_untampered()
        except TamperError as exc:
            raise SubmissionImportError(f"{exc} (at import)") from None
    custom_kernel = getattr(submission, "custom_kernel", None)
    if not callable(custom_kernel):
        raise SubmissionImportError("the submission defines no custom_kernel(data)")
    return custom_kernel


def _import_failure(exc: Exception) -> str:
    """'SyntaxError: '(' was never closed (submission line 9)' or the exception's first line."""
    first_line = (str(exc).strip().splitlines() or [""])[0]
    if isinstance(exc, SyntaxError):
        return f"SyntaxError: {exc.msg} (submission line {exc.lineno})"
    return f"{type(exc).__name__} while importing the submission: {first_line}"


def _submission_notes() -> dict:
    """A JSON-safe copy of the submission's LAST_RUN_INFO dict (which path it took...), if it keeps one."""
    info = getattr(sys.modules.get("submission"), "LAST_RUN_INFO", None)
    if not isinstance(info, dict):
        return {}
    return json.loads(json.dumps(info, default=str))


def _run_single_test(args: dict, device: str) -> dict:
    custom_kernel = _custom_kernel()
    data = _trusted_object("reference.generate_input")(**args)
    timing.synchronize(device)
    cloned = clone_data(data)
    poison_output_memory(cloned[0], device)
    output = custom_kernel(cloned)
    timing.synchronize(device)
    verify_untampered()
    good, message = _checked(data, output)
    return {"good": good, "message": message, "notes": _submission_notes()}


def _run_single_benchmark(args: dict, recheck: bool, max_repeats: int, max_time_ns: float,
                          flush: str, device: str) -> dict:
    custom_kernel = _custom_kernel()
    generate_input = _trusted_object("reference.generate_input")
    args = dict(args)
    durations = []
    data = generate_input(**args)
    check_copy = clone_data(data)
    # First, one obligatory correctness check (on the very input the timed calls reuse unless recheck).
    poison_output_memory(data[0], device)
    output = custom_kernel(data)
    verify_untampered()
    good, message = _checked(check_copy, output)
    if not good:
        return {"good": False, "message": message, "stats": None, "notes": _submission_notes()}

    clock = _trusted_object("time.perf_counter_ns")
    started = clock()
    for call in range(max_repeats):
        if recheck:
            args["seed"] += SEED_STEP  # fresh input for every call: cached results fail here
            data = generate_input(**args)
            check_copy = clone_data(data)
        output, duration = _timed_call(lambda: custom_kernel(data), device, flush)
        verify_untampered()
        if recheck:
            good, message = _checked(check_copy, output)
            if not good:
                message = f"timed call {call + 1} (seed {args['seed']}): {message}"
                return {"good": False, "message": message, "stats": None, "notes": _submission_notes()}
        del output
        durations.append(duration)
        stats = timing.calculate_stats(durations)
        if timing.should_stop(stats, clock() - started, max_time_ns):
            break
    stats = timing.calculate_stats(durations)
    return {"good": True, "message": "", "stats": dataclasses.asdict(stats), "notes": _submission_notes()}


def _run_single_profile(args: dict, device: str) -> dict:
    from torch.profiler import ProfilerActivity, profile

    custom_kernel = _custom_kernel()
    data = _trusted_object("reference.generate_input")(**args)
    timing.synchronize(device)
    on_gpu = device != "cpu"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
    with profile(activities=activities) as prof:
        custom_kernel(data)
        timing.synchronize(device)
    verify_untampered()
    sort_by = "self_cuda_time_total" if on_gpu else "self_cpu_time_total"
    return {"report": prof.key_averages().table(sort_by=sort_by, row_limit=20), "notes": _submission_notes()}


CHILD_OPERATIONS = {
    "test": _run_single_test,
    "benchmark": _run_single_benchmark,
    "profile": _run_single_profile,
}


# ---------------------------------------------------------------------------------------------
# 3. Parent side: the four modes, one case at a time through the worker
# ---------------------------------------------------------------------------------------------

def _no_progress(completed: int, total: int, label: str) -> None:
    pass


def _failed_case(case: Case, reply: dict) -> CaseResult:
    return CaseResult(spec=case.spec, status=reply["status"], message=reply["message"],
                      log_tail=reply.get("log_tail", ""))


def run_tests(worker: Worker, cases: list, timeout_s: float, progress=_no_progress) -> list:
    """Per case: generate input, call custom_kernel on a deep clone, synchronize, check against the original."""
    results = []
    for index, case in enumerate(cases):
        progress(index, len(cases), spec_line(case.spec))
        reply = worker.call("test", timeout_s, args=case.args, device=worker.device)
        if not reply["ok"]:
            results.append(_failed_case(case, reply))
            continue
        outcome = reply["result"]
        results.append(CaseResult(spec=case.spec, status="pass" if outcome["good"] else "fail",
                                  message=outcome["message"], notes=outcome["notes"]))
    progress(len(cases), len(cases), "done")
    return results


def _benchmark_case(worker: Worker, case: Case, recheck: bool, budget: Budget, flush: str,
                    timeout_s: float) -> CaseResult:
    reply = worker.call("benchmark", timeout_s, args=case.args, recheck=recheck, max_repeats=budget.max_repeats,
                        max_time_ns=budget.max_time_ns, flush=flush, device=worker.device)
    if not reply["ok"]:
        return _failed_case(case, reply)
    outcome = reply["result"]
    if not outcome["good"]:
        return CaseResult(spec=case.spec, status="fail", message=outcome["message"], notes=outcome["notes"])
    return CaseResult(spec=case.spec, status="pass", message=outcome["message"],
                      stats=timing.Stats(**outcome["stats"]), notes=outcome["notes"])


def _warm_up(worker: Worker, case: Case, budget: Budget, flush: str, timeout_s: float, warnings: list) -> None:
    """eval.py benchmarks the first case once before the real ones and ignores the result; we warn of a crash."""
    result = _benchmark_case(worker, case, False, budget, flush, timeout_s)
    if result.status in ("error", "timeout"):
        warnings.append(f"warm-up on {spec_line(case.spec)}: {result.message}")


def run_benchmarks(worker: Worker, cases: list, timeout_s: float, flush: str, budgets: Budgets = OFFICIAL_BUDGETS,
                   progress=_no_progress, warnings: list | None = None) -> list:
    """Warm-up on the first case, then per case one correctness check and timed calls on the same input."""
    warnings = [] if warnings is None else warnings
    total = len(cases) + 1
    progress(0, total, f"warm-up: {spec_line(cases[0].spec)}")
    _warm_up(worker, cases[0], budgets.benchmark_warmup, flush, timeout_s, warnings)
    results = []
    for index, case in enumerate(cases):
        progress(index + 1, total, spec_line(case.spec))
        results.append(_benchmark_case(worker, case, False, budgets.benchmark, flush, timeout_s))
    progress(total, total, "done")
    return results


def run_leaderboard(worker: Worker, cases: list, timeout_s: float, flush: str, budgets: Budgets = OFFICIAL_BUDGETS,
                    progress=_no_progress, warnings: list | None = None) -> list:
    """Warm-up, then per case fresh input (seed += 13) and a check on every call; stops at the first failing case."""
    warnings = [] if warnings is None else warnings
    total = len(cases) + 1
    progress(0, total, f"warm-up: {spec_line(cases[0].spec)}")
    _warm_up(worker, cases[0], budgets.leaderboard_warmup, flush, timeout_s, warnings)
    results = []
    for index, case in enumerate(cases):
        progress(index + 1, total, spec_line(case.spec))
        result = _benchmark_case(worker, case, True, budgets.leaderboard, flush, timeout_s)
        results.append(result)
        if result.status != "pass":
            reason = f"not run: leaderboard mode stops at the first failure (case {index + 1})"
            results.extend(CaseResult(spec=later.spec, status="skip", message=reason) for later in cases[index + 1:])
            break
    progress(total, total, "done")
    return results


def run_profile(worker: Worker, cases: list, timeout_s: float, progress=_no_progress) -> list:
    """Per case: one call under the torch profiler; the table of the busiest operators."""
    results = []
    for index, case in enumerate(cases):
        progress(index, len(cases), spec_line(case.spec))
        reply = worker.call("profile", timeout_s, args=case.args, device=worker.device)
        if not reply["ok"]:
            results.append(_failed_case(case, reply))
            continue
        outcome = reply["result"]
        results.append(CaseResult(spec=case.spec, status="pass", report=outcome["report"], notes=outcome["notes"]))
    progress(len(cases), len(cases), "done")
    return results


# ---------------------------------------------------------------------------------------------
# 4. One submission, one mode
# ---------------------------------------------------------------------------------------------

def now_iso() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _is_warning(line: str) -> bool:
    return line.lstrip().lower().startswith("warning")


def summarize(results: list) -> tuple:
    """(status, reason) of a whole run from its cases: a wrong answer is "fail", a crash or timeout "error"."""
    for wanted, status in (("fail", "fail"), ("error", "error"), ("timeout", "error")):
        for index, result in enumerate(results):
            if result.status == wanted:
                lines = result.message.splitlines() or [""]
                # The verdict itself, not the NaN warning the check puts first (that goes to the warnings).
                first_line = next((line for line in lines if line.strip() and not _is_warning(line)), lines[0])
                return status, f"case {index + 1} ({spec_line(result.spec)}): {first_line}"
    return "pass", ""


def case_warnings(results: list) -> list:
    """Every warning line of every case's message (NaN/inf, dtype, the 5% rule), once each."""
    found = []
    for index, result in enumerate(results):
        for line in result.message.splitlines():
            if _is_warning(line):
                found.append(f"case {index + 1}: {line.strip()}")
    return list(dict.fromkeys(found))


def server_rejections(submission: Submission) -> list:
    """Lint's blocking findings: what the official server or its KernelGuard would refuse this file for."""
    try:
        findings = lint.lint_file(submission.path)
    except OSError:
        return []
    return [f"the server would reject it: line {f.line}: {f.rule} {f.message}" for f in findings if f.blocking]


def log_file_for(submission: Submission, mode: str, log_dir: Path = LOG_DIR) -> Path:
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path(log_dir) / f"{submission.label}-{mode}-{stamp}-{os.getpid()}.log"


def evaluate(submission: Submission, platform: Platform, mode: str, specs: list, *, cases_name: str,
             flush: str, timeout_s: float, secret: int | None = None, budgets: Budgets = OFFICIAL_BUDGETS,
             log_dir: Path = LOG_DIR, progress=_no_progress) -> RunResult:
    """Run every case of one submission in `mode` in its own worker; never raises for the submission's faults."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}: use one of {', '.join(MODES)}")
    if not specs:
        raise ValueError("no cases to run")
    started = now_iso()
    flush = flush if platform.is_gpu else "none"
    rejections = server_rejections(submission)  # attached to every run, so the table and the ledger show them
    runnable, note = can_run(submission, platform)
    if not runnable:
        results = [CaseResult(spec=dict(spec), status="skip", message=note) for spec in specs]
        return RunResult(submission, mode, cases_name, flush, platform, "skip", note, results, rejections,
                         started, now_iso())

    warnings = ([note] if note else []) + rejections + invalid_limits()
    if secret is not None:
        warnings.append("case seeds combined with POPCORN_SEED (reports show the public seeds)")
    cases = make_cases(specs, secret)
    log_path = log_file_for(submission, mode, log_dir)
    # An optional triton import succeeds wherever Triton is installed, so its kernels need the interpreter too.
    interpret = "triton" in (submission.requirements | submission.optional) and not platform.is_gpu
    with Worker(submission.path, platform.torch_device, log_path, triton_interpreter=interpret) as worker:
        if mode == "test":
            results = run_tests(worker, cases, timeout_s, progress)
        elif mode == "benchmark":
            results = run_benchmarks(worker, cases, timeout_s, flush, budgets, progress, warnings)
        elif mode == "leaderboard":
            results = run_leaderboard(worker, cases, timeout_s, flush, budgets, progress, warnings)
        else:
            results = run_profile(worker, cases, timeout_s, progress)
    warnings.extend(case_warnings(results))
    status, reason = summarize(results)
    if status == "pass" and rejections:
        reason = f"passes here, but the server would reject it: {rejections[0].split(': ', 1)[1]}"
    return RunResult(submission, mode, cases_name, flush, platform, status, reason, results, warnings,
                     started, now_iso(), log_path)


def geomean_ns(run: RunResult) -> float | None:
    """Geometric mean of the per-case means (the leaderboard's ranking), when every case has timings."""
    means = [r.stats.mean for r in run.results if r.stats is not None]
    if not means or len(means) != len(run.results) or min(means) <= 0:
        return None
    return statistics.geometric_mean(means)


def record(run: RunResult) -> dict:
    """The ledger record of one run (schema in harness/ledger.py)."""
    sub = run.submission
    return {
        "run_id": ledger.new_run_id(),
        "source": "local",
        "submission": {"number": sub.number, "path": sub.display_path(), "sha256": sub.sha256},
        "mode": run.mode,
        "cases": run.cases,
        "flush": run.flush,
        "device": run.platform.record_device(),
        "versions": dict(run.platform.versions),
        "status": run.status,
        "reason": run.reason,
        "results": [result.record() for result in run.results],
        "warnings": list(run.warnings),
        "started": run.started,
        "finished": run.finished,
    }
