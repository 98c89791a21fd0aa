"""`harness compile` and the submit gate: a file's kernels compiled ahead of time, its Triton kernels inside its
own worker.

Importing a submission runs its code, so the Triton compile happens where `harness run` runs it: in the child,
under the command's protection (session.guarded). HIP sources are read as text and never import the file.
"""
from harness.compile import aot, compiled
from harness.results import records
from harness.run import session
from harness.submission import Submission

COMPILE_LIMIT_S = 1800.0  # 201's eleven variants take ~40 s on two cores; a cold Triton cache more


class ImportFailed(compiled.CompileError):
    """The file's import failed in its worker (the submission's fault: a failed compile, not a usage error)."""


def triton_reports(held: session.Guarded, target: str, kernels: list | None = None,
                   preferred: bool = False) -> list:
    """aot.KernelReport per Triton kernel variant, compiled in the submission's worker; CompileError (one line)
    when the file cannot be imported or its AOT_SPECS are wrong. A variant whose compile kills the worker (LLVM
    exits on some errors) fails with that reason, and the others are compiled in a fresh one."""
    died: dict = {}
    while True:
        reply = held.ask("compile", COMPILE_LIMIT_S, target=target, kernels=kernels, preferred=preferred, died=died)
        dying = _variant_being_built(reply)
        if reply["ok"] or dying is None or dying in died:
            break
        died[dying] = f"the compiler died building it for {target} ({reply['message']})"
    if not reply["ok"]:
        raise ImportFailed(f"cannot import {held.submission.path.name}: {reply['message']}")
    if reply["result"]["error"]:
        raise compiled.CompileError(reply["result"]["error"])
    return [aot.report_from_dict(raw) for raw in reply["result"]["reports"]]


def _variant_being_built(reply: dict) -> str | None:
    """The AOT_SPECS index a worker that died was compiling (its log's last mark), or None."""
    if reply["ok"]:
        return None
    marks = [line.split()[-1] for line in reply.get("log_tail", "").splitlines() if aot.COMPILING_MARK in line]
    return marks[-1] if marks else None


def compile_guarded(submission: Submission, target: str, platform, protection) -> compiled.Compiled:
    """Every kernel of the file for `target`, its import in the jail; what the import changed on disk or left
    running fails the compile, as it fails a run."""
    with session.guarded(submission, platform, protection) as held:
        try:
            outcome = compiled.compile_submission(submission.path, target, lambda: triton_reports(held, target))
        except ImportFailed as failed:
            outcome = compiled.Compiled(triton=[], hip=None, problems=[str(failed)])
    outcome.problems = list(held.problems) + outcome.problems  # what it did on disk first, then the import
    return outcome


def compile_and_record(submission: Submission, target: str, *, device: str = "auto",
                       protection: str = "auto") -> tuple:
    """(Compiled, its ledger record) for `harness compile`; ResultsError up front when nothing could be written."""
    from harness import platform as platforms
    from harness.results import ledger

    here, chosen = session.prepare(device, protection)
    started = records.now_iso()
    outcome = compile_guarded(submission, target, here, chosen)
    record = compiled.record(submission, target, outcome, platforms.versions(), started, records.now_iso(),
                             chosen.label)
    try:
        ledger.append(record)
    except OSError as error:
        raise session.ResultsError("the compile's record could not be written to the ledger: "
                                   f"{ledger.why_unwritten(error)}") from None
    return outcome, record
