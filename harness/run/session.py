"""One `harness run`: the settings this machine implies, each submission evaluated and recorded, the exit code.

The decisions a run takes before and after the protocol itself: which cases (official on a GPU, small
on a CPU), whether the requested flush can work here, the secret seed, the time limits, whether the
results folder can be written; then per submission protocol.evaluate and its record appended to the
ledger (with the git commit that ran it); last, the exit code.
"""
import contextlib
import dataclasses
import subprocess
import tempfile

from harness import paths
from harness.run import cases
from harness.results import ledger
from harness.run import protocol
from harness.run.worker import Worker
from harness.sandbox import guard
from harness import platform as platforms
from harness.submission import Submission

TIMED_MODES = ("benchmark", "leaderboard")
# A run on the gfx950 emulator takes minutes a case (120's official four: 6-11 min on 2 cores): unless --timeout
# says otherwise, its limit is task.yml's this many times, which still stops a hang.
EMULATED_LIMIT_FACTOR = 4


class ResultsError(ValueError):
    """The results folder or the ledger cannot be written (message is one line for the user)."""


@dataclasses.dataclass
class Settings:
    platform: platforms.Platform
    mode: str
    specs: list
    cases_name: str
    flush: str
    timeout_s: float             # bounds each submission's whole run, as the official runner's limit does
    case_timeout_s: float | None  # optional cap on each case
    secret: int | None
    checkout: dict | None        # {"commit", "dirty"} of this checkout, None outside git
    notices: list                # one line each, for the user: what was chosen for them
    stress_specs: list = dataclasses.field(default_factory=list)  # default test mode: stress cases, warnings only
    protection: guard.Protection = guard.Protection("off", "")  # what keeps the child from changing files on disk
    emulated_timeout_s: float | None = None  # the run limit of a submission the emulator runs; None: timeout_s

    def limit_for(self, submission: Submission) -> float:
        """The time limit of this submission's whole run: longer on the gfx950 emulator unless --timeout gave one."""
        if self.emulated_timeout_s and runs_emulated(submission, self.platform):
            return self.emulated_timeout_s
        return self.timeout_s


def runs_emulated(submission: Submission, platform) -> bool:
    """Some of its work runs on the gfx950 emulator here: HIP, Triton under --device gfx950, or aiter's kernels."""
    return platforms.emulates(submission, platform) or platforms.emulates_aiter(submission, platform)


# What the harness itself rewrites in a checkout: its own writes never make the checkout dirty.
HARNESS_WRITES = ("results/ledger.jsonl", "scoreboard.md", "results/scoreboard.png")


def git_checkout(root=paths.REPO_ROOT) -> dict | None:
    """The commit of the checkout and whether it has uncommitted changes (the harness's own ledger and scoreboard
    left out); None when it is not a git checkout."""
    ignored = [f":(exclude){name}" for name in HARNESS_WRITES]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=20)
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", *ignored],
                                cwd=root, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    if commit.returncode != 0 or status.returncode != 0:
        return None
    return {"commit": commit.stdout.strip(), "dirty": bool(status.stdout.strip())}


def check_results_writable() -> None:
    """The worker logs and the ledger must be writable before anything runs; ResultsError says why not."""
    for folder in (paths.log_dir(), paths.ledger_file().parent):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(dir=folder):
                pass
        except OSError as error:
            raise ResultsError(f"cannot write results to {paths.shown(folder)}: {error.strerror or error}") from None
    target = paths.ledger_file()
    if target.is_dir():
        raise ResultsError(f"cannot write results to {paths.shown(target)}: it is a folder")


@dataclasses.dataclass
class Guarded:
    """One submission's workers under a command's protection; `problems` is filled when the block ends."""
    submission: Submission
    platform: platforms.Platform
    jail: guard.Jail | None
    problems: list = dataclasses.field(default_factory=list)

    def ask(self, op: str, limit_s: float, **args) -> dict:
        """One request to a worker of its own (no interpreter), started for it and closed after: the reply."""
        with self.start_worker(op) as worker:
            return worker.call(op, limit_s, **args)

    def start_worker(self, purpose: str, interpret: bool = False) -> Worker:
        """A worker for this submission in the jail, logging to its own file (used in a `with`)."""
        log = protocol.log_file_for(self.submission, purpose)
        return Worker(self.submission.path, self.platform.torch_device, log, triton_interpreter=interpret,
                      jail=self.jail)

    def start_emulated_worker(self, purpose: str) -> Worker:
        """A worker as `harness run --device gfx950` starts one, in the jail: on the CPU, its HIP and Triton kernels
        on the gfx950 emulator, torch reporting ROCm."""
        on_emulator = dataclasses.replace(self.platform, backend="cpu", emulate_gfx950=True, emulate_triton=True)
        log = protocol.log_file_for(self.submission, purpose)
        return Worker(self.submission.path, "cpu", log, jail=self.jail,
                      emulator=platforms.emulator_environment(self.submission, on_emulator))


@contextlib.contextmanager
def guarded(submission: Submission, platform: platforms.Platform, protection: guard.Protection):
    """The one protection every command gives a submission it imports or runs (run, estimate, compile, the
    gate): its workers start in the jail, and afterwards what it changed on disk or left running is found."""
    with guard.Watch(protection) as watch:
        held = Guarded(submission, platform, watch.jail)
        yield held
        held.problems = watch.problems()


def prepare(device: str = "auto", protection: str = "auto") -> tuple:
    """(this machine, the protection) for a command that runs a submission outside `run`: refuses up front when
    the results folder cannot be written (ResultsError) or the protection cannot work (ProtectionError)."""
    here = platforms.detect(device)
    check_results_writable()
    return here, guard.choose(protection)


def settle(*, device: str, mode: str, cases_arg: str | None, flush: str, timeout_s: float | None,
           case_timeout_s: float | None = None, protection: str = "auto", submissions: tuple = ()) -> Settings:
    """The run's settings on this machine for these submissions; CaseError / PlatformError / ResultsError (one
    line) for what cannot work."""
    here = platforms.run_platform(device)
    notices = []
    if any(platforms.emulates_hip(sub, here) for sub in submissions):  # a Triton file has none to emulate
        notices.append(f"HIP kernels run on the harness's gfx950 emulator ({platforms.EMULATOR_MARK}; "
                       "--device cpu: the plain CPU).")
    if any(platforms.emulates_triton(sub, here) for sub in submissions):
        notices.append("Triton kernels are compiled for gfx950 and run on the emulator (--device gfx950): minutes "
                       "a case, correctness only.")
    emulated_timeout_s = None
    if timeout_s is None and any(runs_emulated(sub, here) for sub in submissions):
        emulated_timeout_s = EMULATED_LIMIT_FACTOR * cases.case_timeout_s(mode)
        notices.append(f"On the gfx950 emulator a run may take {emulated_timeout_s:g} s ({EMULATED_LIMIT_FACTOR}x "
                       f"task.yml's {cases.case_timeout_s(mode):g} s; --timeout sets it).")
    defaulted = cases_arg is None
    if cases_arg is None:
        cases_arg = "official" if here.is_gpu else "small"
        if not here.is_gpu:
            notices.append("No GPU here: using the small CPU cases (--cases official forces the official shapes).")
    specs = cases.load(cases_arg, mode, gpu=here.is_gpu)
    stress_specs = cases.stress(specs) if defaulted and mode == "test" else []  # the default cases, structured
    if not here.is_gpu and mode in TIMED_MODES:
        notices.append(f"On the CPU there is no cache flush: --flush {flush} is taken as none, and CPU times swing "
                       "with the machine's load (up to 16x measured on a shared 2-core machine): compare them only "
                       "within one run.")
    if here.is_gpu and flush == "official" and mode in TIMED_MODES:
        from harness.run import timing  # torch: only a GPU run's parent needs it

        if not timing.official_flush_fits():
            raise platforms.PlatformError("--flush official allocates 64 GiB per call, more than this GPU holds; "
                                          "use --flush fast")
    try:
        secret = protocol.secret_seed()
    except ValueError as error:
        raise cases.CaseError(str(error)) from None
    check_results_writable()
    chosen = guard.choose(protection)
    return Settings(protection=chosen, platform=here, mode=mode, specs=specs, cases_name=cases_arg, flush=flush,
                    timeout_s=timeout_s or cases.case_timeout_s(mode), case_timeout_s=case_timeout_s,
                    secret=secret, checkout=git_checkout(), notices=notices, stress_specs=stress_specs,
                    emulated_timeout_s=emulated_timeout_s)


@dataclasses.dataclass
class Outcome:
    run: protocol.RunResult
    record: dict
    ledger_error: ResultsError | None  # the record could not be written: the result is lost


def _say_nothing(line: str) -> None:
    pass


def evaluate(submission: Submission, settings: Settings, progress=protocol._no_progress,
             on_case=protocol._no_case_report, say=_say_nothing) -> tuple:
    """(the run, its record) of protocol.evaluate for one submission under the run's protection, not yet in the
    ledger. A file changed on disk or a process left running fails the run (harness/sandbox/guard.py). say(line):
    what the user should hear of at once (a HIP build of minutes, the emulator's progress through a long case)."""
    if platforms.emulates_hip(submission, settings.platform):
        prebuild_hip(submission, say)  # before the watch: the parent's builds are not the child's changes
    with guarded(submission, settings.platform, settings.protection) as held:
        run = protocol.evaluate(submission, settings.platform, settings.mode, settings.specs,
                                cases_name=settings.cases_name, flush=settings.flush,
                                timeout_s=settings.limit_for(submission),
                                case_timeout_s=settings.case_timeout_s, secret=settings.secret, progress=progress,
                                on_case=on_case, stress_specs=settings.stress_specs,
                                jail=held.jail, say=say)
    problems = held.problems
    if problems:
        run = dataclasses.replace(run, status="fail", reason=problems[0], warnings=run.warnings + problems[1:])
    return run, protocol.record(run, settings.checkout, settings.protection.label)


def write(run: protocol.RunResult, record: dict) -> Outcome:
    """The record appended to the ledger, or why it could not be (the parent alone writes, spread or not)."""
    try:
        ledger.append(record)
    except OSError as error:
        return Outcome(run, record, ResultsError(
            f"{run.submission.label}: its result could not be written to {paths.shown(paths.ledger_file())} "
            f"({ledger.why_unwritten(error)}), so it is lost"))
    return Outcome(run, record, None)


def emulator_note(runs: list) -> str | None:
    """What the gfx950 emulator ran, with its rate, when any submission's HIP kernels were emulated."""
    parts = []
    for run in runs:
        kernels = run.emulator or {}
        launches = sum(k["launches"] for k in kernels.values())
        executed = sum(k["counts"].get("wave_instructions", 0) for k in kernels.values())
        seconds = sum(k["seconds"] for k in kernels.values())
        if run.emulator is not None:
            rate = f", {executed / seconds:,.0f} wave instructions/s" if seconds > 0 else ""
            parts.append(f"{run.submission.label}: {launches} launches of {len(kernels)} kernels, "
                         f"{executed:,} wave instructions in {seconds:.1f} s{rate}")
    if not parts:
        return None
    return f"kernels run on the gfx950 emulator, {platforms.EMULATOR_MARK} (times never compared): " + "; ".join(parts)


def prebuild_hip(submission: Submission, say=_say_nothing) -> None:
    """Its load_inline extensions built into the HIP toolchain's cache, which the child may read but not write;
    say(line) when a build starts and when it ends, with its seconds (a first build takes minutes)."""
    import time

    from harness.emulator.hip_runtime import prebuild

    building = prebuild.missing(submission.path)  # cached: prebuild only checks, and nothing is said
    if building:
        say(f"building {submission.label}'s HIP sources for gfx950 (first run compiles; cached after) ...")
    started = time.monotonic()
    try:
        failed = prebuild.prebuild(submission.path)
    except Exception as error:  # noqa: BLE001 - the child builds (or fails) on its own, as the submission's fault
        failed = [str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__]
    if building:
        verdict = f"failed ({failed[0][:200]}); the run reports it" if failed else "done"
        say(f"{submission.label}'s HIP build {verdict} in {time.monotonic() - started:.0f} s")


def evaluate_and_record(submission: Submission, settings: Settings, progress=protocol._no_progress,
                        on_case=protocol._no_case_report, say=_say_nothing) -> Outcome:
    """evaluate, then write: one submission's run and its record in the ledger."""
    return write(*evaluate(submission, settings, progress=progress, on_case=on_case, say=say))


def exit_code(runs: list, allow_rejected: bool = False) -> int:
    """0 when everything that could run passed, 1 when a submission failed, errored, ran out of time or would be
    refused by the server (unless allow_rejected: the user asked to take those as passes)."""
    counted = [run for run in runs if not (allow_rejected and run.status == "rejected")]
    return 1 if any(run.failed for run in counted) else 0


def counts_line(runs: list) -> str:
    """'3 pass, 1 fail': a run of several submissions in one line."""
    counts = {status: sum(run.status == status for run in runs)
              for status in ("pass", "rejected", "fail", "error", "timeout", "skip")}
    return ", ".join(f"{n} {status}" for status, n in counts.items() if n)


def interpreter_note(runs: list) -> str | None:
    """What a run through the Triton interpreter did and did not measure, when any submission ran that way."""
    interpreted = [run.submission.label for run in runs if run.interpreter and run.mode in TIMED_MODES]
    if not interpreted:
        return None
    return (f"{', '.join(interpreted)}: correctness checked; their times ran through the Triton interpreter "
            "(TRITON_INTERPRET=1) and say nothing about a GPU, so diff, the scoreboard's timing tables and the "
            "chart leave them out")
