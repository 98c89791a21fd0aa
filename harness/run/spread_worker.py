"""One GPU slot of a spread run: a process pinned to one GPU that evaluates the submissions it is handed,
one at a time, and sends each record back to the parent (which alone writes the ledger).

It imports the harness only after the pinning variables are set, so nothing it starts sees another GPU.
Messages on `messages` are tuples (kind, slot, job, ...): start, progress, case, done, crash.
"""
import os
import pickle

PIN_VARIABLES = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")


def pinned_environment(index: str) -> dict:
    """The variables that show a process only GPU `index` (CUDA and ROCm builds of torch)."""
    return {name: index for name in PIN_VARIABLES}


def seen_pinning() -> dict:
    """What this process's environment pins, as the submission's worker will inherit it."""
    return {name: os.environ.get(name) for name in PIN_VARIABLES}


def serve(slot: str, index: str, settings_blob: bytes, jobs, messages) -> None:
    """Evaluate each (job, submission, gpu record) from `jobs` until None arrives (or Ctrl-C: the parent
    says what is lost)."""
    try:
        _serve(slot, index, settings_blob, jobs, messages)
    except KeyboardInterrupt:
        return


def _serve(slot: str, index: str, settings_blob: bytes, jobs, messages) -> None:
    os.environ.update(pinned_environment(index))
    from harness.run import session

    settings = pickle.loads(settings_blob)
    while True:
        job = jobs.get()
        if job is None:
            return
        number, submission, gpu = job
        messages.put(("start", slot, number, os.getpid(), seen_pinning()))

        def progress(completed, total, label, number=number):
            messages.put(("progress", slot, number, completed, total, label))

        def on_case(index, total, result, number=number):
            messages.put(("case", slot, number, index, total, result))

        try:
            run, record = session.evaluate(submission, settings, progress=progress, on_case=on_case)
        except Exception as error:  # a harness bug fails this submission, not the slot's queue
            messages.put(("crash", slot, number, f"{type(error).__name__}: {error}"))
            continue
        record["gpu"] = gpu
        messages.put(("done", slot, number, run, record))
