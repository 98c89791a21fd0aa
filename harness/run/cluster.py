"""`harness run --cluster ADDRESS`: each submission a Ray task with num_gpus=1, running session.evaluate.

Ray places the tasks (no scheduler of ours) and pins each to its GPU. The file's bytes, their sha256 and
the checkout's commit travel with the task, which checks them before it runs; records come back here and
only this process writes the ledger. A lost task or node fails only its submissions, with Ray's reason.
"""
import dataclasses
import hashlib
import os
import pickle
import tempfile
from pathlib import Path

from harness.platform import PlatformError
from harness.results import records
from harness.run import session
from harness.run import spread

NO_RAY = "--cluster needs Ray, which is not installed: pip install '.[cluster]'"


class ClusterError(PlatformError):
    """The cluster cannot be used (one line for the user)."""


@dataclasses.dataclass(frozen=True)
class Parcel:
    """What a task gets of one submission: its bytes and what they must match."""
    name: str
    content: bytes
    sha256: str
    commit: str | None


def ray_module():
    try:
        import ray
    except ImportError:
        raise ClusterError(NO_RAY) from None
    return ray


def node_gpu(ray) -> dict:
    """The GPU Ray gave this task: its index there and the node's address (Ray pins CUDA_VISIBLE_DEVICES)."""
    ids = ray.get_gpu_ids()
    index = str(ids[0]) if ids else "?"
    listed = {gpu.index: gpu.uuid for gpu in spread.visible_gpus()} if os.environ.get(spread.FAKE_ENV) is None else {}
    uuid = listed.get(index) or f"ray node {ray.util.get_node_ip_address()} gpu {index}"
    return {"index": int(index) if index.isdigit() else index, "uuid": uuid}


def refusal(parcel: Parcel) -> str | None:
    """Why this node must not run the parcel: its bytes or this node's checkout differ from the sender's."""
    if hashlib.sha256(parcel.content).hexdigest() != parcel.sha256:
        return f"the bytes of {parcel.name} arrived changed (sha256 differs)"
    here = session.git_checkout()
    if parcel.commit and here and here["commit"] != parcel.commit:
        return f"this node's checkout is at {here['commit'][:12]}, the run's at {parcel.commit[:12]}"
    return None


def run_parcel(parcel: Parcel, settings_blob: bytes) -> tuple:
    """Inside the Ray task: (run, record) of the sent bytes, or (None, the refusal)."""
    import ray

    from harness import submission as subs

    why = refusal(parcel)
    if why:
        return None, why
    settings = pickle.loads(settings_blob)
    with tempfile.TemporaryDirectory(prefix="harness-parcel-") as folder:
        path = Path(folder) / parcel.name
        path.write_bytes(parcel.content)
        run, record = session.evaluate(subs.resolve(str(path)), settings)
    record["gpu"] = node_gpu(ray)
    return run, record


def as_sent(submission, run, record: dict) -> tuple:
    """The task ran a copy: its run and record name the sender's file again (same bytes, checked)."""
    from harness.results import records

    record["submission"] = records.submission_info(submission)
    return dataclasses.replace(run, submission=submission), record


def spread_on_cluster(chosen: list, settings, address: str, watcher=spread.Watcher(), on_queued=None) -> list:
    """Every submission a Ray task; outcomes in `chosen`'s order. on_queued(submission, ref) sees each task."""
    ray = ray_module()
    if not ray.is_initialized():
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        except Exception as error:  # Ray's own errors name the address it could not reach
            raise ClusterError(f"--cluster {address}: {(str(error).splitlines() or [''])[0]}") from None
    if not ray.cluster_resources().get("GPU"):  # each task asks for a GPU: it would wait for ever
        raise ClusterError(f"--cluster {address}: the Ray cluster declares no GPU")
    task = ray.remote(num_gpus=1, max_retries=0)(run_parcel)
    blob = pickle.dumps(settings)
    commit = (settings.checkout or {}).get("commit")
    waiting, started = {}, records.now_iso()
    for job, submission in enumerate(chosen):
        content = submission.path.read_bytes()
        parcel = Parcel(submission.path.name, content, hashlib.sha256(content).hexdigest(), commit)
        ref = task.remote(parcel, blob)
        waiting[ref] = job
        if on_queued:
            on_queued(submission, ref)
    outcomes = {}
    while waiting:
        ready, _ = ray.wait(list(waiting), num_returns=1)
        job = waiting.pop(ready[0])
        outcomes[job] = collect(ray, ready[0], chosen[job], settings, started)
        watcher.finished(None, outcomes[job])
    return [outcomes[job] for job in sorted(outcomes)]


def collect(ray, ref, submission, settings, started) -> session.Outcome:
    """One task's outcome, written to the ledger: its record, or an error record with why it was lost."""
    try:
        run, record = ray.get(ref)
    except ray.exceptions.RayError as error:
        reason = f"its Ray task was lost: {type(error).__name__}: {(str(error).splitlines() or [''])[0]}"
        return spread.lost_outcome(submission, settings, reason, started, None)
    if run is None:
        return spread.lost_outcome(submission, settings, f"refused on its node: {record}", started, None)
    return session.write(*as_sent(submission, run, record))
