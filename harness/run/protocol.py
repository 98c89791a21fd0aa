"""The official evaluation protocol (gpu-mode reference-kernels, problems/amd_202602/eval.py): the parent's side.

Read it top to bottom like eval.py:
  1. seeds: the secret POPCORN_SEED is combined with every case seed (Cantor pairing);
  2. the modes: run_tests, run_benchmarks, run_leaderboard, run_profile send one case at a time to the
     worker (eval.py's pool.apply), with eval.py's repeat and time budgets; what each request does
     inside the worker is harness/run/child.py's `_run_single_*`;
  3. evaluate: one submission, one mode, all cases -> a RunResult; record() turns it into a ledger record.
"""
import ast
import dataclasses
import datetime
import os
import time
from pathlib import Path

from harness import paths
from harness.checks import lint
from harness.results import records
from harness.run.stats import Stats
from harness.run.cases import MODES, spec_line
from harness.results.figures import geomean
from harness.run.limits import invalid_limits
from harness.platform import (AITER_STANDIN, AITER_STANDIN_MARK, Platform, can_run, emulated, emulates,
                              emulator_environment, interprets_triton, standin_serves_aiter)
from harness.submission import Submission
from harness.run.worker import Worker



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
STRESS_ERROR_FACTOR = 3.0  # a stress case this many times worse than the official ones (in noise multiples) is warned
# Through the Triton interpreter a call takes seconds and its time means nothing: a few calls check it, as the
# official minimum of three runs does, and leaderboard mode still gives each one fresh input.
INTERPRETER_REPEATS = 3
# On the aiter stand-in a time means nothing either, but leaderboard mode's fresh inputs still catch caches: more calls.
STANDIN_REPEATS = 20
EMULATED_STRESS_MAX_KV = 1024  # 013's 2 x 4500 case takes 2 minutes on the emulator; its three stress kinds 6 more


def interpreter_budgets(budgets: Budgets, repeats: int = INTERPRETER_REPEATS) -> Budgets:
    return Budgets(**{field.name: dataclasses.replace(getattr(budgets, field.name), max_repeats=min(
        getattr(budgets, field.name).max_repeats, repeats)) for field in dataclasses.fields(budgets)})


@dataclasses.dataclass
class Case:
    """One case as eval.py's TestCase: `spec` as written (what reports show), `args` with the secret seed applied."""
    spec: dict
    args: dict


@dataclasses.dataclass
class CaseResult:
    spec: dict
    status: str  # "pass" | "fail" | "error" | "timeout" | "skip" | "not run"
    message: str = ""
    stats: Stats | None = None
    notes: dict = dataclasses.field(default_factory=dict)
    report: str = ""  # profile mode: the profiler table
    log_tail: str = ""  # what the child printed last, when it crashed or raised
    accuracy: dict | None = None  # the sharper verdict's figures (harness/run/accuracy.py) of a checked output

    def record(self) -> dict:
        return {"spec": self.spec, "status": self.status, "message": self.message,
                "stats": dataclasses.asdict(self.stats) if self.stats else None, "notes": self.notes,
                "accuracy": self.accuracy}


@dataclasses.dataclass
class RunResult:
    submission: Submission
    mode: str
    cases: str  # "official" | "small" | the cases file
    flush: str
    platform: Platform
    status: str  # "pass" | "rejected" | "fail" | "error" | "timeout" | "skip"
    reason: str
    results: list
    warnings: list
    started: str
    finished: str
    log_path: Path | None = None
    interpreter: bool = False  # Triton kernels ran through TRITON_INTERPRET: its times say nothing about a GPU
    standin: str | None = None  # "aiter": the aiter stand-in served it (correctness only, its times say nothing)
    emulator: dict | None = None  # HIP kernels ran on the gfx950 emulator: per kernel launches and counts

    @property
    def failed(self) -> bool:
        return self.status in records.FAILED


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
# 2. The four modes: the four modes, one case at a time through the worker
# ---------------------------------------------------------------------------------------------

def _no_progress(completed: int, total: int, label: str) -> None:
    pass


def _no_case_report(index: int, total: int, result: "CaseResult") -> None:
    pass


class TimeLimit:
    """The official limit bounds a submission's whole run (as the official runner's does); a per-case cap is optional."""

    def __init__(self, run_s: float, case_s: float | None = None, clock=time.monotonic):
        self.run_s, self.case_s, self.clock = run_s, case_s, clock
        self.started = clock()

    def remaining_s(self) -> float:
        return self.run_s - (self.clock() - self.started)

    def next_call_s(self) -> float:
        """How long the next worker call may take."""
        return max(0.0, min(self.remaining_s(), self.case_s or float("inf")))

    def timeout_message(self, granted_s: float) -> str:
        if self.case_s is not None and granted_s >= self.case_s:
            return f"exceeded the {self.case_s:g} s case limit"
        return f"exceeded the run's {self.run_s:g} s time limit (it bounds all cases of a submission together)"


def _failed_case(case: Case, reply: dict) -> CaseResult:
    return CaseResult(spec=case.spec, status=reply["status"], message=reply["message"],
                      log_tail=reply.get("log_tail", ""))


def _not_run(cases: list, reason: str) -> list:
    return [CaseResult(spec=case.spec, status="not run", message=reason) for case in cases]


def _call(worker: Worker, limit: TimeLimit, op: str, **args) -> dict:
    """One worker call under the time limit; a timeout reply says which limit it hit."""
    granted = limit.next_call_s()
    reply = worker.call(op, granted, **args)
    if not reply["ok"] and reply["status"] == "timeout":
        reply = dict(reply, message=limit.timeout_message(granted))
    return reply


def _each_case(cases: list, limit: TimeLimit, run_one, progress, on_case, first_step: int = 0,
               stop_on_failure: str | None = None) -> list:
    """run_one(case) for every case in order; after a timeout (or, if asked, any failure) the rest are not run."""
    results = []
    total = len(cases) + first_step
    for index, case in enumerate(cases):
        if limit.remaining_s() <= 0:
            results += _not_run(cases[index:], "not run: the run's time limit was spent")
            break
        progress(index + first_step, total, spec_line(case.spec))
        result = run_one(case)
        results.append(result)
        on_case(index, len(cases), result)
        if result.status == "timeout" and limit.remaining_s() <= 0:  # the run's limit, not just a case cap
            results += _not_run(cases[index + 1:], "not run: an earlier case timed out")
            break
        if stop_on_failure and result.status != "pass":
            results += _not_run(cases[index + 1:], f"not run: {stop_on_failure} (case {index + 1})")
            break
    progress(total, total, "done")
    return results


def run_tests(worker: Worker, cases: list, limit: TimeLimit, progress=_no_progress, on_case=_no_case_report) -> list:
    """Per case: generate input, call custom_kernel on a deep clone, synchronize, check against the original."""
    def one(case):
        reply = _call(worker, limit, "test", args=case.args, device=worker.device)
        if not reply["ok"]:
            return _failed_case(case, reply)
        outcome = reply["result"]
        return CaseResult(spec=case.spec, status="pass" if outcome["good"] else "fail", message=outcome["message"],
                          notes=outcome["notes"], accuracy=outcome.get("accuracy"))
    return _each_case(cases, limit, one, progress, on_case)


def _benchmark_case(worker: Worker, case: Case, recheck: bool, budget: Budget, flush: str,
                    limit: TimeLimit) -> CaseResult:
    reply = _call(worker, limit, "benchmark", args=case.args, recheck=recheck, max_repeats=budget.max_repeats,
                  max_time_ns=budget.max_time_ns, flush=flush, device=worker.device)
    if not reply["ok"]:
        return _failed_case(case, reply)
    outcome = reply["result"]
    if not outcome["good"]:
        return CaseResult(spec=case.spec, status="fail", message=outcome["message"], notes=outcome["notes"],
                          accuracy=outcome.get("accuracy"))
    return CaseResult(spec=case.spec, status="pass", message=outcome["message"],
                      stats=Stats(**outcome["stats"]), notes=outcome["notes"], accuracy=outcome.get("accuracy"))


def _warm_up(worker: Worker, case: Case, budget: Budget, flush: str, limit: TimeLimit, warnings: list) -> None:
    """eval.py benchmarks the first case once before the real ones and ignores the result; we warn of a crash."""
    result = _benchmark_case(worker, case, False, budget, flush, limit)
    if result.status in ("error", "timeout"):
        warnings.append(f"warm-up on {spec_line(case.spec)}: {result.message}")


def run_benchmarks(worker: Worker, cases: list, limit: TimeLimit, flush: str, budgets: Budgets = OFFICIAL_BUDGETS,
                   progress=_no_progress, warnings: list | None = None, on_case=_no_case_report) -> list:
    """Warm-up on the first case, then per case one correctness check and timed calls on the same input."""
    warnings = [] if warnings is None else warnings
    progress(0, len(cases), f"warm-up: {spec_line(cases[0].spec)}")  # the count is of cases: no step of its own
    _warm_up(worker, cases[0], budgets.benchmark_warmup, flush, limit, warnings)
    return _each_case(cases, limit, lambda case: _benchmark_case(worker, case, False, budgets.benchmark, flush, limit),
                      progress, on_case)


def run_leaderboard(worker: Worker, cases: list, limit: TimeLimit, flush: str, budgets: Budgets = OFFICIAL_BUDGETS,
                    progress=_no_progress, warnings: list | None = None, on_case=_no_case_report) -> list:
    """Warm-up, then per case fresh input (seed += 13) and a check on every call; stops at the first failing case."""
    warnings = [] if warnings is None else warnings
    progress(0, len(cases), f"warm-up: {spec_line(cases[0].spec)}")
    _warm_up(worker, cases[0], budgets.leaderboard_warmup, flush, limit, warnings)
    return _each_case(cases, limit, lambda case: _benchmark_case(worker, case, True, budgets.leaderboard, flush, limit),
                      progress, on_case, stop_on_failure="leaderboard mode stops at the first failure")


def run_profile(worker: Worker, cases: list, limit: TimeLimit, progress=_no_progress, on_case=_no_case_report) -> list:
    """Per case: one call under the torch profiler; the table of the busiest operators."""
    def one(case):
        reply = _call(worker, limit, "profile", args=case.args, device=worker.device)
        if not reply["ok"]:
            return _failed_case(case, reply)
        outcome = reply["result"]
        return CaseResult(spec=case.spec, status="pass", report=outcome["report"], notes=outcome["notes"])
    return _each_case(cases, limit, one, progress, on_case)


# ---------------------------------------------------------------------------------------------
# 3. One submission, one mode
# ---------------------------------------------------------------------------------------------

def _is_warning(line: str) -> bool:
    return line.lstrip().lower().startswith("warning")


def summarize(results: list) -> tuple:
    """(status, reason) of a whole run from its cases: a wrong answer is "fail", a crash "error", a case
    still running at the limit or a case the spent limit left unrun "timeout", a case skipped (an instruction
    the gfx950 emulator lacks) "skip": no pass either."""
    for wanted, status in (("fail", "fail"), ("error", "error"), ("timeout", "timeout"), ("not run", "timeout"),
                           ("skip", "skip")):
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
                text = line.strip()[len("warning"):].lstrip(" :")  # the table adds its own "warning:" prefix
                found.append(f"case {index + 1}: {text}")
    return list(dict.fromkeys(found))


def stress_warnings(results: list, official: list, cases_name: str = "official") -> list:
    """One line per stress case that failed, or whose error is far above the official cases' (in reference-noise
    multiples); the 5% rule is left to the official cases (an a16w16 kernel meets it often on sharp attention)."""
    usual = max([(r.accuracy or {}).get("noise_multiple") or 0.0 for r in official] + [1.0])
    found = []
    for result in results:
        name = f"stress case {result.spec.get('stress')} {result.spec['batchsize']}x{result.spec['kvseqlen']}"
        multiple = (result.accuracy or {}).get("noise_multiple")
        if result.status != "pass":
            found.append(f"{name} {result.status}s (the {cases_name} cases pass): "
                         + (result.message.strip().splitlines() or [""])[0])
        elif multiple is not None and multiple > STRESS_ERROR_FACTOR * usual:
            found.append(f"{name}: error {multiple:.1f} x the reference's noise, against at most {usual:.1f} x on "
                         f"the {cases_name} cases (a shortcut that randn data hides?)")
    return found


def syntax_error(submission: Submission) -> str:
    """'SyntaxError: ... (submission line 9)' when the file does not parse, as the worker would say; else ''."""
    try:
        ast.parse(submission.path.read_bytes(), filename=str(submission.path))
    except SyntaxError as error:
        return f"SyntaxError: {error.msg} (submission line {error.lineno})"
    except (OSError, ValueError):
        return ""
    return ""


def log_file_for(submission: Submission, mode: str, log_dir: Path | None = None) -> Path:
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path(log_dir or paths.log_dir()) / f"{submission.label}-{mode}-{stamp}-{os.getpid()}.log"


def evaluate(submission: Submission, platform: Platform, mode: str, specs: list, *, cases_name: str,
             flush: str, timeout_s: float, case_timeout_s: float | None = None, secret: int | None = None,
             budgets: Budgets = OFFICIAL_BUDGETS, log_dir: Path | None = None, progress=_no_progress,
             on_case=_no_case_report, stress_specs: list | None = None, jail=None, say=None) -> RunResult:
    """Run every case of one submission in `mode` in its own worker; never raises for the submission's faults.

    timeout_s bounds the whole run (the official limit); case_timeout_s, when given, each case too.
    on_case(index, total, result) is called as each case finishes. stress_specs (test mode): structured cases
    run after the official ones pass; what they find becomes warnings, never the verdict. `jail`
    (harness/sandbox/guard.py) is where the child runs, None for unprotected. say(line), when given, gets the
    gfx950 emulator's progress lines (harness/emulator/progress.py) as a case runs, the submission named first.
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}: use one of {', '.join(MODES)}")
    if not specs:
        raise ValueError("no cases to run")
    started = records.now_iso()
    flush = flush if platform.is_gpu else "none"
    rejections = lint.server_rejections(submission.path)  # attached to every run, so the table and the ledger show them
    runnable, note = can_run(submission, platform)
    if not runnable:
        results = [CaseResult(spec=dict(spec), status="skip", message=note) for spec in specs]
        return RunResult(submission, mode, cases_name, flush, platform, "skip", note, results, rejections,
                         started, records.now_iso())
    unparsed = syntax_error(submission)
    if unparsed:  # no worker needed to know every case would fail the same way
        results = [CaseResult(spec=dict(spec), status="error", message=unparsed) for spec in specs]
        return RunResult(submission, mode, cases_name, flush, platform, "error",
                         f"case 1 ({spec_line(specs[0])}): {unparsed}", results, rejections, started,
                         records.now_iso())

    warnings = ([note] if note else []) + rejections + invalid_limits()
    if secret is not None:
        warnings.append("case seeds combined with POPCORN_SEED (reports show the public seeds)")
    cases = make_cases(specs, secret)
    log_path = log_file_for(submission, mode, log_dir)
    interpret = interprets_triton(submission, platform)
    emulate = emulates(submission, platform)  # HIP, or Triton under --device gfx950
    limit = TimeLimit(timeout_s, case_timeout_s)
    if interpret or emulate:
        budgets = interpreter_budgets(budgets)
    elif standin_serves_aiter(submission, platform):
        budgets = interpreter_budgets(budgets, STANDIN_REPEATS)  # the stand-in will serve it: correctness only
    def starting():  # the child's 1-2 s start, within the current step (None keeps its count)
        progress(None, None, "starting the worker")

    relay = (lambda line: say(f"{submission.label}: {line}")) if say else None
    with Worker(submission.path, platform.torch_device, log_path, triton_interpreter=interpret, jail=jail,
                on_start=starting, emulator=emulator_environment(submission, platform) if emulate else None,
                on_progress=relay) as worker:
        stressed = []
        if mode in ("benchmark", "leaderboard") and emulate:  # an emulator's times mean nothing: one checked call
            warnings.append(f"{mode} mode on the gfx950 emulator: one checked call per case, no timed calls "
                            "(correctness only, never a time)")
            results = run_tests(worker, cases, limit, progress, on_case)
        elif mode == "test":
            results = run_tests(worker, cases, limit, progress, on_case)
            if emulate:  # minutes a case on the emulator: the stress kinds on the short cases only
                short = [s for s in stress_specs or [] if s["kvseqlen"] <= EMULATED_STRESS_MAX_KV]
                if len(short) < len(stress_specs or []):
                    warnings.append(f"stress cases past {EMULATED_STRESS_MAX_KV} KV rows not run on the gfx950 "
                                    "emulator")
                stress_specs = short
            if stress_specs and summarize(results)[0] == "pass":
                stressed = run_tests(worker, make_cases(stress_specs, secret), TimeLimit(timeout_s, case_timeout_s),
                                     lambda done, total, label: progress(done, total, f"stress: {label}"))
        elif mode == "benchmark":
            results = run_benchmarks(worker, cases, limit, flush, budgets, progress, warnings, on_case)
        elif mode == "leaderboard":
            results = run_leaderboard(worker, cases, limit, flush, budgets, progress, warnings, on_case)
        else:
            results = run_profile(worker, cases, limit, progress, on_case)
        standin, emulator = worker.standin, worker.emulated if emulate else None
    if emulate:
        platform = emulated(platform)  # the record names the emulator, never MI355X
    if standin and not any(AITER_STANDIN_MARK in warning for warning in warnings):
        warnings.insert(0, AITER_STANDIN)  # served although the file's text did not show it needs aiter
    warnings.extend(case_warnings(results) + stress_warnings(stressed, results, cases_name))
    status, reason = summarize(results)
    if status == "pass" and rejections:  # never a plain pass: a ranked run of it would be refused
        status, reason = "rejected", f"{records.REJECTED_PREFIX}: {rejections[0].split(': ', 1)[1]}"
    return RunResult(submission, mode, cases_name, flush, platform, status, reason, results, warnings,
                     started, records.now_iso(), log_path, interpreter=interpret, standin=standin,
                     emulator=emulator)


def geomean_ns(run: RunResult) -> float | None:
    """Geometric mean of the per-case means (the leaderboard's ranking), when every case has timings."""
    means = [r.stats.mean for r in run.results if r.stats is not None]
    return geomean(means) if len(means) == len(run.results) else None


def record(run: RunResult, checkout: dict | None = None, protection: str | None = None) -> records.Record:
    """The ledger record of one run (its shape: harness/results/records.py); `checkout` is the git commit that ran it,
    `protection` what kept the submission from changing files on disk."""
    sub = run.submission
    return records.new_record(
        source="local",
        submission=records.submission_info(sub),
        mode=run.mode, cases=run.cases, flush=run.flush, device=run.platform.record_device(),
        versions=run.platform.versions, status=run.status, reason=run.reason,
        results=[result.record() for result in run.results], warnings=run.warnings,
        started=run.started, finished=run.finished, interpreter=run.interpreter, standin=run.standin, git=checkout,
        protection=protection, emulator=run.emulator)
