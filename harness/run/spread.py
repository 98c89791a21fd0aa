"""`harness run --gpus`: the same session.evaluate for several submissions at once, one slot per GPU.

Each GPU gets one slot process (harness/run/spread_worker.py) pinned to it, fed from its own queue one
submission at a time, so a submission's whole run stays on one GPU and no two timed runs share one. The
slots send records back; the parent alone writes the ledger. A slot that dies fails only its submission.
HARNESS_FAKE_GPUS=N makes N "GPUs" that are the CPU, so the scheduling is tested where there is no GPU.
"""
import collections
import dataclasses
import multiprocessing
import os
import pickle
import queue
import signal
import subprocess

from harness.platform import PlatformError
from harness.results import records
from harness.run import protocol
from harness.run import session
from harness.run import spread_worker

FAKE_ENV = "HARNESS_FAKE_GPUS"
QUERIES = (["nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader"],
           ["rocm-smi", "--showuniqueid", "--csv"])


class SpreadError(PlatformError):
    """A --gpus request this machine cannot satisfy (one line for the user)."""


@dataclasses.dataclass(frozen=True)
class Gpu:
    index: str  # as CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES take it
    uuid: str

    @property
    def label(self) -> str:
        return f"gpu {self.index}"

    def record(self) -> dict:
        """The ledger's `gpu` field."""
        return {"index": int(self.index) if self.index.isdigit() else self.index, "uuid": self.uuid}


def parse_listing(text: str) -> list:
    """GPUs from nvidia-smi's 'index, uuid' lines or rocm-smi's 'cardN,ID' CSV (its header left out)."""
    found = []
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) < 2 or cells[0].lower() == "device":
            continue
        index = cells[0].removeprefix("card")
        if index.isdigit():
            found.append(Gpu(index, cells[1]))
    return found


def visible_gpus() -> list:
    """This machine's GPUs (index and UUID), or the fake ones HARNESS_FAKE_GPUS asks for."""
    fake = os.environ.get(FAKE_ENV)
    if fake:
        if not fake.isdigit() or int(fake) < 1:
            raise SpreadError(f"{FAKE_ENV} must be a count of fake GPUs, not {fake!r}")
        return [Gpu(str(i), f"fake-{i} (the CPU, {FAKE_ENV})") for i in range(int(fake))]
    for query in QUERIES:
        try:
            done = subprocess.run(query, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            continue
        found = parse_listing(done.stdout) if done.returncode == 0 else []
        if found:
            return found
    return []


def choose(request: str, found: list) -> list:
    """The GPUs `--gpus all|N|0,3,5` names among those found (N: the first N; a single index: '3,')."""
    if not found:
        raise SpreadError(f"--gpus {request}: no GPU found here (nvidia-smi and rocm-smi list none)")
    text = request.strip()
    if text == "all":
        return list(found)
    if text.isdigit():
        count = int(text)
        if not 1 <= count <= len(found):
            raise SpreadError(f"--gpus {count}: this machine has {len(found)} GPU(s)")
        return found[:count]
    wanted = [part.strip() for part in text.split(",") if part.strip()]
    by_index = {gpu.index: gpu for gpu in found}
    unknown = [index for index in wanted if index not in by_index]
    if not wanted or unknown:
        raise SpreadError(f"--gpus {request}: takes all, a count or indices like 0,3,5 "
                          f"(found: {', '.join(by_index)})")
    return [by_index[index] for index in dict.fromkeys(wanted)]


class Watcher:
    """What a spread run reports as it goes (the cli shows it); every method may be left as it is."""

    def started(self, gpu, submission, pid: int, pinning: dict) -> None: ...

    def progress(self, gpu, submission, completed, total, label) -> None: ...

    def case(self, gpu, submission, index, total, result) -> None: ...

    def finished(self, gpu, outcome) -> None: ...


def lost_run(submission, settings, reason: str, started: str) -> protocol.RunResult:
    """An error run for a submission whose slot or task died: each case says why, none has a result."""
    results = [protocol.CaseResult(spec=dict(spec), status="error", message=reason) for spec in settings.specs]
    return protocol.RunResult(submission, settings.mode, settings.cases_name, settings.flush, settings.platform,
                              "error", reason, results, [], started, records.now_iso())


def lost_outcome(submission, settings, reason, started, gpu: dict | None) -> session.Outcome:
    """The lost run written to the ledger like any other record (it names the GPU it was on)."""
    run = lost_run(submission, settings, reason, started)
    record = protocol.record(run, settings.checkout, settings.protection.label)
    record["gpu"] = gpu
    return session.write(run, record)


@dataclasses.dataclass
class Slot:
    """One GPU's process and its queue; `job` is the submission it runs now (None: idle)."""
    gpu: Gpu
    process: multiprocessing.Process | None = None
    jobs: object = None
    job: int | None = None
    started: str = ""
    cases_done: int = 0

    def launch(self, context, blob: bytes, messages) -> None:
        self.jobs = context.Queue()
        self.process = context.Process(target=spread_worker.serve, daemon=True,
                                       args=(self.gpu.index, self.gpu.index, blob, self.jobs, messages))
        self.process.start()

    def hand(self, job: int, submission) -> None:
        self.job, self.started, self.cases_done = job, records.now_iso(), 0
        self.jobs.put((job, submission, self.gpu.record()))

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.is_alive() and self.job is None:
            self.jobs.put(None)
        elif self.process.is_alive():  # Ctrl-C: its worker stops as in a serial run (the slot's own cleanup)
            os.kill(self.process.pid, signal.SIGINT)
        self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(timeout=5)


def interrupted_lines(slots, chosen, pending) -> list:
    """What Ctrl-C cost: each running submission's finished cases, and the submissions never started."""
    lines = [f"interrupted on {slot.gpu.label}: {chosen[slot.job].label}'s {slot.cases_done} finished case(s) "
             "are not recorded in the ledger (a partial run is no verdict)"
             for slot in slots if slot.job is not None]
    if pending:
        lines.append(f"not started: {', '.join(chosen[job].label for job in pending)}; the finished "
                     "submissions are recorded")
    return lines


def spread(chosen: list, settings, gpus: list, watcher: Watcher = Watcher(), poll_s: float = 0.5) -> list:
    """Every submission evaluated on one of `gpus`, the records written here; outcomes in `chosen`'s order.
    KeyboardInterrupt stops every slot; its `lines` say what is lost."""
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: pinned before torch is imported
    messages = context.Queue()
    blob = pickle.dumps(settings)
    slots = {gpu.index: Slot(gpu) for gpu in gpus}
    pending = collections.deque(range(len(chosen)))
    outcomes = {}
    try:
        for slot in slots.values():
            slot.launch(context, blob, messages)
        while pending or any(slot.job is not None for slot in slots.values()):
            for slot in slots.values():
                if slot.job is None and pending:
                    job = pending.popleft()
                    slot.hand(job, chosen[job])
            try:
                message = messages.get(timeout=poll_s)
            except queue.Empty:
                for slot in slots.values():
                    if slot.job is not None and not slot.process.is_alive():
                        _settle(slot, chosen, settings, outcomes, watcher, pending, lost=(
                            f"its worker process on {slot.gpu.label} died (exit code {slot.process.exitcode}) "
                            "before it reported"))
                        slot.launch(context, blob, messages)
                continue
            _take(message, slots, chosen, settings, outcomes, watcher, pending)
    except KeyboardInterrupt as interrupt:
        interrupt.lines = interrupted_lines(slots.values(), chosen, pending)
        raise
    finally:
        for slot in slots.values():
            slot.stop()
    return [outcomes[job] for job in sorted(outcomes)]


def _take(message, slots, chosen, settings, outcomes, watcher, pending) -> None:
    """One slot's message: shown, or (done, crash) its record written and the slot made idle."""
    kind, slot_key, job, *rest = message
    slot = slots[slot_key]
    if job != slot.job:
        return  # from a slot already declared lost
    submission = chosen[job]
    if kind == "start":
        watcher.started(slot.gpu, submission, *rest)
    elif kind == "progress":
        watcher.progress(slot.gpu, submission, *rest)
    elif kind == "case":
        slot.cases_done += 1
        watcher.case(slot.gpu, submission, *rest)
    elif kind == "done":
        _settle(slot, chosen, settings, outcomes, watcher, pending, done=session.write(*rest))
    elif kind == "crash":
        _settle(slot, chosen, settings, outcomes, watcher, pending, lost=f"harness error: {rest[0]}")


def _settle(slot, chosen, settings, outcomes, watcher, pending, done=None, lost=None) -> None:
    outcome = done or lost_outcome(chosen[slot.job], settings, lost, slot.started, slot.gpu.record())
    outcomes[slot.job] = outcome
    slot.job = None
    if outcome.ledger_error:  # as a serial run stops at a lost record: nothing more is started
        pending.clear()
    watcher.finished(slot.gpu, outcome)
