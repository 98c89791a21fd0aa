"""From a host-side HIP launch to the emulator's core, in the child.

`install()` loads our HIP runtime (hip_runtime/), sets its launch hook,
starts tracking CPU tensor storages, and puts the emulator's load_inline
in torch's place. At each launch the hook finds the kernel's gfx950 code
object in the fat binary clang registered, lays the arguments out by the
kernel's metadata (code object v5 hidden arguments included), registers
every live tensor storage and hipMalloc block for the bounds checker and
calls run_kernel. A NotEmulated or EmulationFault is kept: the runtime
throws into the host code, and `checked()` raises the kept one after the
submission's call, whatever the submission did with the C++ error.
Inside `tracing()` (the estimate's recorded call), or in a child whose
$HARNESS_TRACE_LAUNCHES is 1 (the estimate's emulated calls), every launch
also traces representative workgroups; summary() carries each launch's
trace as .npz bytes (base64) for the parent's timing model.
"""
import base64
import contextlib
import ctypes
import dataclasses
import io
import os
import time

from harness.emulator.counts import add_launches
from harness.emulator.hip_runtime import bundle, extension, library

ENV = "HARNESS_EMULATE_GFX950"  # set by the parent: HIP runs emulated here
MARK = "gfx950 emulated (CPU): correctness only"
TRACES = "traces"  # a summary entry's traced launches (estimate/hip_launches.py)
TRACE_ENV = "HARNESS_TRACE_LAUNCHES"  # "1": every launch of the child is traced

# The explicit arguments' kinds (AMDGPUUsage, code object v5 metadata).
_EXPLICIT = {"by_value", "global_buffer", "dynamic_shared_pointer",
             "image", "pipe", "queue", "sampler"}

_state = {"library": None, "hook": None, "fault": None, "runner": None,
          "tracing": False, "only_traced": False, "workgroups": "representative"}
_codes: dict = {}  # bundle address -> CodeObject
_launches: list = []  # one dict per launch since the last summary
_call_regions: list = []  # (tensor, name) a caller hands its launches beyond the tracked blocks


def requested() -> bool:
    return os.environ.get(ENV) == "1"


def set_runner(run_kernel) -> None:
    """Tests: a stand-in for the core's run_kernel (None: the core)."""
    _state["runner"] = run_kernel


def _runner():
    if _state["runner"] is not None:
        return _state["runner"]
    from harness.emulator.launch import run_kernel
    return run_kernel


def _code_object(fatbin: int):
    if fatbin not in _codes:
        from harness.emulator.code_object import load_code_object
        _codes[fatbin] = load_code_object(bundle.unpack_at(fatbin))
    return _codes[fatbin]


def hidden_value(kind: str, grid, block, shared: int) -> int:
    """A hidden argument's value; those the CPU has no use for are 0."""
    axis = "xyz".find(kind[-1]) if kind[-2:-1] == "_" else -1
    if kind.startswith("hidden_block_count_"):
        return grid[axis]
    if kind.startswith("hidden_group_size_"):
        return block[axis]
    if kind == "hidden_grid_dims":
        return 3 if grid[2] > 1 else 2 if grid[1] > 1 else 1
    if kind == "hidden_dynamic_lds_size":
        return shared
    return 0  # remainders (whole blocks), offsets, queue and heap pointers


def kernarg_bytes(info, args, grid, block, shared: int) -> bytes:
    """The kernarg segment: each explicit argument copied from the
    launch's void** in order, hidden ones filled in."""
    last = max((o + s for o, s, _ in info.args), default=0)
    segment = bytearray(max(info.kernarg_size, last))
    explicit = 0
    for offset, size, kind in info.args:
        if kind in _EXPLICIT:
            source = args[explicit]
            explicit += 1
            segment[offset:offset + size] = ctypes.string_at(source, size)
        elif kind.startswith("hidden_"):
            value = hidden_value(kind, grid, block, shared)
            segment[offset:offset + size] = value.to_bytes(size, "little")
    return bytes(segment)


def host_memory():
    """Every live tensor storage and hipMalloc block, named, and the caller's regions."""
    from harness.emulator.memory import HostMemory
    memory = HostMemory()
    for address, size, kind in library.live_blocks(_state["library"]):
        memory.add_region(address, size, f"{kind} at 0x{address:x} "
                          f"({size} bytes)")
    for tensor, name in _call_regions:
        memory.add_tensor(tensor, name)
    return memory


@contextlib.contextmanager
def regions(tensors: dict, label: str):
    """Launches inside also see these tensors: the runtime tracks only
    storages allocated after it was installed."""
    kept = list(_call_regions)
    _call_regions.extend((tensor, f"{name} ({label})")
                         for name, tensor in tensors.items() if tensor is not None)
    try:
        yield
    finally:
        _call_regions[:] = kept


def _counts(counts) -> dict:
    """The core's LaunchCounts as flat numbers ("by_class.VALU": n)
    that sum over launches; its own rate and seconds are left out."""
    raw = counts.as_record() if hasattr(counts, "as_record") else (
        dataclasses.asdict(counts) if dataclasses.is_dataclass(counts)
        else dict(getattr(counts, "__dict__", {}) or {}))
    flat = {}
    for key, value in raw.items():
        if isinstance(value, dict):
            flat.update({f"{key}.{k}": v for k, v in value.items()
                         if isinstance(v, (int, float))})
        elif isinstance(value, int) and not isinstance(value, bool):
            flat[key] = value
    for key in ("wave_instructions_per_second", "seconds"):
        flat.pop(key, None)
    return flat


@contextlib.contextmanager
def tracing(only_traced: bool = False, workgroups="representative"):
    """Launches inside trace `workgroups` (run_kernel's trace option,
    TraceRequest's): the timing model's input, kept by summary().
    only_traced: those workgroups alone run (the estimate's recorded
    call, after a checked call ran them all; with workgroups=[] none
    does: a warm-up call); their counts are not summed, their traces
    are kept."""
    _state["tracing"], _state["only_traced"] = True, only_traced
    _state["workgroups"] = workgroups
    try:
        yield
    finally:
        _state["tracing"], _state["only_traced"] = False, False
        _state["workgroups"] = "representative"


def trace_option() -> dict:
    """run_kernel's keyword for a launch now: a trace request or none."""
    if not (_state["tracing"] or os.environ.get(TRACE_ENV) == "1"):
        return {}
    from harness.emulator.trace import TraceRequest
    return {"trace": TraceRequest(_state["workgroups"], only_traced=_state["only_traced"])}


def trace_bytes(trace) -> str:
    """A LaunchTrace as its .npz file's bytes, base64 (a JSON reply)."""
    buffer = io.BytesIO()
    trace.save(buffer)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def record_launch(kernel: str, grid, block, seconds: float, counts) -> None:
    """One emulated launch (HIP or Triton), for summary()."""
    launch = {"kernel": kernel, "grid": grid, "block": block,
              "seconds": seconds, "counts": _counts(counts)}
    if getattr(counts, "trace", None) is not None:
        launch["trace"] = trace_bytes(counts.trace)
        launch["only_traced"] = counts.trace.only_traced
    _launches.append(launch)


def launches_so_far() -> int:
    return len(_launches)


def forget_since(mark: int) -> None:
    """The launches after `mark` dropped, and the runtime's last error
    read (it is sticky, as HIP's): a recorded call run again."""
    del _launches[mark:]
    take_fault()
    if _state["library"] is not None:
        _state["library"].hipGetLastError()


def keep_fault(error: BaseException) -> None:
    """The first emulator stop of a call, raised by checked() after it."""
    if _state["fault"] is None:
        _state["fault"] = error


def _launch(fatbin, name, grid_p, block_p, args, shared) -> int:
    kernel = name.decode()
    grid = tuple(grid_p[i] for i in range(3))
    block = tuple(block_p[i] for i in range(3))
    try:
        code = _code_object(fatbin)
        info = code.kernels[kernel]
        kernarg = kernarg_bytes(info, args, grid, block, shared)
        started = time.monotonic()
        counts = _runner()(code, kernel, grid, block, kernarg,
                           dynamic_lds=shared, memory=host_memory(),
                           **trace_option())
        record_launch(kernel, grid, block, time.monotonic() - started, counts)
        return 0
    except BaseException as error:  # noqa: BLE001 - kept, raised after the call
        keep_fault(error)
        library_fault = f"{type(error).__name__}: {error}"
        _state["library"].harness_set_fault(library_fault.encode()[:2000])
        return 1


def emulated_load_inline(name, cpp_sources, cuda_sources=None,
                         functions=None, **options):
    """torch.utils.cpp_extension.load_inline for this machine."""
    return extension.load(extension.spec_of(
        name, cpp_sources, cuda_sources, functions, **options))


def install() -> None:
    """Our runtime and load_inline, once per process."""
    if _state["library"] is not None:
        return
    runtime = library.load()
    _state["hook"] = library.LAUNCH_HOOK(_launch)  # kept alive here
    runtime.harness_set_launch_hook(_state["hook"])
    runtime.harness_track_tensors()
    _state["library"] = runtime
    import torch.utils.cpp_extension as cpp_extension
    cpp_extension.load_inline = emulated_load_inline


def take_fault():
    fault, _state["fault"] = _state["fault"], None
    return fault


def checked(function):
    """`function` whose calls raise the fault a launch kept."""
    def call(*args, **kwargs):
        take_fault()
        try:
            result = function(*args, **kwargs)
        except Exception as error:
            fault = take_fault()
            if fault is not None:
                raise fault from error
            raise
        fault = take_fault()
        if fault is not None:
            raise fault
        return result
    return call


def summary() -> dict:
    """Launches since the last summary, by kernel, with the traces of
    the traced ones in launch order ("traces"); then forgotten.
    "counted": the launches whose counts are summed (not an
    only_traced one's: its untraced workgroups did not run)."""
    kernels: dict = {}
    for launch in _launches:
        counted = not launch.get("only_traced")
        add_launches(kernels, {launch["kernel"]: {
            "launches": 1, "seconds": launch["seconds"],
            "counts": launch["counts"] if counted else {}}})
        entry = kernels[launch["kernel"]]
        entry["counted"] = entry.get("counted", 0) + counted
        if "trace" in launch:
            entry.setdefault(TRACES, []).append(launch["trace"])
    _launches.clear()
    return kernels


def fault_status(error: BaseException) -> str | None:
    """The case's status for an emulator stop: skip or fail."""
    from harness.emulator.errors import EmulationFault, NotEmulated
    if isinstance(error, NotEmulated):
        return "skip"
    if isinstance(error, EmulationFault):
        return "fail"
    return None


