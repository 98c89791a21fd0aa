"""What one call of custom_kernel launches, recorded inside the child for `harness estimate` (child side).

Four sources, one field each in the recording:
  - "aiter": the aiter stand-in's journal (harness/aiter_standin/journal.py), one dict per covered aiter call;
  - "ops": a torch dispatch hook: each aten op that launches a kernel (views and allocations apart), its count
    and the bytes of the tensors it touches;
  - "syncs": host syncs (.item(), .tolist(), .cpu(), .numpy(), int()/float()/bool() of a tensor, copies to the
    host, ops whose output size depends on the data);
  - "triton": each Triton launch with its grid and the bytes of its tensor arguments.
What runs inside the stand-in (it computes the answer with torch) or inside a Triton launch (the interpreter moves
tensors around) is not a launch of the runner's: it is left out. On a CPU every tensor stands for a device one.
On the gfx950 emulator the recorded call's launches are traced too (launch_hip.tracing), and only their traced
workgroups run (recorded_call): the reply's "emulated" summary carries the traces for the timing model.
"""
import contextlib
import os
import sys
from pathlib import Path

from harness.aiter_standin import journal

HARNESS_DIR = Path(__file__).resolve().parent.parent
STANDIN_DIR = str(HARNESS_DIR / "aiter_standin") + os.sep
ALLOCATIONS = {"empty", "empty_strided", "empty_like", "new_empty", "new_empty_strided", "empty_permuted"}
NO_KERNEL = {"detach", "alias", "lift_fresh", "view", "_unsafe_view", "as_strided", "t", "transpose", "permute",
             "expand", "slice", "select", "squeeze", "unsqueeze", "split", "split_with_sizes", "chunk", "unbind",
             "narrow", "diagonal", "unfold", "view_as_real", "view_as_complex", "_reshape_alias", "reshape",
             "flatten", "movedim", "expand_as", "view_as", "set_", "resize_", "_local_scalar_dense", "sym_size",
             "sym_stride", "sym_numel", "is_same_size", "_conj", "_neg_view", "real", "imag"}
DATA_DEPENDENT = {"nonzero", "masked_select", "unique", "_unique2", "unique_consecutive", "unique_dim"}
SYNC_METHODS = ("item", "tolist", "cpu", "numpy")


def _tensors(tree) -> list:
    import torch
    from torch.utils._pytree import tree_flatten

    return [leaf for leaf in tree_flatten(tree)[0] if isinstance(leaf, torch.Tensor)]


def _nbytes(tensors) -> int:
    seen, total = set(), 0
    for tensor in tensors:
        if id(tensor) not in seen:
            seen.add(id(tensor))
            total += tensor.numel() * tensor.element_size()
    return total


class Recorder:
    """Collects one call's launches; `device` is the child's ("cpu" makes every tensor count as a device one)."""

    def __init__(self, device: str):
        self.device = device
        self.ops: dict = {}        # "aten.bmm" -> [count, bytes]
        self.allocations = 0
        self.syncs: dict = {}      # ".tolist()" -> count
        self.triton: list = []
        self.quiet = 0             # > 0 while inside a sync method or a Triton launch

    def outside(self) -> bool:
        """True when the current op comes from the submission, not from the stand-in, Triton or the recorder."""
        if self.quiet:
            return False
        frame = sys._getframe(2)
        while frame is not None:
            if frame.f_code.co_filename.startswith(STANDIN_DIR):
                return False
            frame = frame.f_back
        return True

    def on_device(self, tensors) -> bool:
        return self.device == "cpu" or any(t.device.type != "cpu" for t in tensors)

    def op(self, func, args, kwargs, out) -> None:
        name = func.overloadpacket.__name__
        inputs, outputs = _tensors((args, kwargs)), _tensors(out)
        if name == "_local_scalar_dense":
            self.sync("int()/float()/bool() of a tensor")
            return
        if name in ("_to_copy", "copy_") and self.device != "cpu":
            to_host = any(t.device.type == "cpu" for t in outputs) and any(t.device.type != "cpu" for t in inputs)
            if to_host:
                self.sync("copy to the host")
                return
        if not self.on_device(inputs + outputs):
            return
        if name in ALLOCATIONS:
            self.allocations += 1
            return
        if name in NO_KERNEL or getattr(func, "is_view", False):
            return
        if name in DATA_DEPENDENT:
            self.sync(f"{name} (output size read back)")
        slot = self.ops.setdefault(f"aten.{name}", [0, 0])
        slot[0] += 1
        slot[1] += _nbytes(inputs + outputs)

    def sync(self, what: str) -> None:
        self.syncs[what] = self.syncs.get(what, 0) + 1

    def triton_launch(self, kernel, grid, args, kwargs) -> None:
        if callable(grid):
            try:
                grid = grid(dict(kwargs))
            except Exception:  # a grid that needs the autotuner's meta-parameters: count it as one program set
                grid = None
        size = [int(g) for g in grid] if isinstance(grid, (tuple, list)) else None
        programs = 1
        for g in size or []:
            programs *= max(g, 1)
        name = getattr(getattr(kernel, "fn", None), "__name__", None) or getattr(kernel, "__name__", "triton kernel")
        self.triton.append({"name": name, "grid": size, "programs": programs if size else None,
                            "bytes": _nbytes(_tensors((args, kwargs)))})

    def result(self, aiter_calls: list) -> dict:
        return {"aiter": [dict(call) for call in aiter_calls],
                "ops": {name: {"count": c, "bytes": b} for name, (c, b) in sorted(self.ops.items())},
                "allocations": self.allocations, "syncs": dict(self.syncs), "triton": list(self.triton)}


def _dispatch_mode(recorder: Recorder):
    from torch.utils._python_dispatch import TorchDispatchMode

    class Launches(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if recorder.outside():
                recorder.op(func, args, kwargs or {}, out)
            return out

    return Launches()


@contextlib.contextmanager
def _patched(owner, name: str, wrap):
    """owner.name replaced by wrap(original) for the block (an inherited method is shadowed, then unshadowed)."""
    original = getattr(owner, name, None)
    if original is None:
        yield
        return
    own = name in owner.__dict__
    setattr(owner, name, wrap(original))
    try:
        yield
    finally:
        if own:
            setattr(owner, name, original)
        else:
            delattr(owner, name)


def _sync_method(recorder: Recorder, name: str):
    def wrap(original):
        def method(tensor, *args, **kwargs):
            counts = recorder.outside()
            if counts and (recorder.device == "cpu" or tensor.device.type != "cpu"):
                recorder.sync(f".{name}()")
            recorder.quiet += 1
            try:
                return original(tensor, *args, **kwargs)
            finally:
                recorder.quiet -= 1
        return method
    return wrap


def _triton_run(recorder: Recorder):
    def wrap(original):
        def run(kernel, *args, grid, warmup, **kwargs):
            if not warmup and not recorder.quiet and recorder.outside():
                recorder.triton_launch(kernel, grid, args, kwargs)
            recorder.quiet += 1
            try:
                return original(kernel, *args, grid=grid, warmup=warmup, **kwargs)
            finally:
                recorder.quiet -= 1
        return run
    return wrap


def _traced_launches(only_traced: bool):
    """Tracing of every emulated launch in the block, where the gfx950 emulator runs them."""
    from harness.emulator import launch_hip, launch_triton

    if launch_hip.requested() or launch_triton.requested():
        return launch_hip.tracing(only_traced)
    return contextlib.nullcontext()


@contextlib.contextmanager
def recording(device: str, only_traced: bool = False):
    """Records everything the block launches; yields a function that returns the recording (a JSON-safe dict).
    only_traced: on the gfx950 emulator only the traced workgroups of each launch run (launch_hip.tracing)."""
    import torch

    recorder = Recorder(device)
    with contextlib.ExitStack() as stack:
        calls = stack.enter_context(journal.recording())
        for name in SYNC_METHODS:
            stack.enter_context(_patched(torch.Tensor, name, _sync_method(recorder, name)))
        if "triton" in sys.modules:
            from triton.runtime import interpreter, jit
            for owner in (jit.JITFunction, interpreter.InterpretedFunction):
                stack.enter_context(_patched(owner, "run", _triton_run(recorder)))
        stack.enter_context(_dispatch_mode(recorder))
        stack.enter_context(_traced_launches(only_traced))
        yield lambda: recorder.result(calls)


def recorded_call(custom_kernel, data, device: str, synchronize) -> dict:
    """The estimate's recorded call (after its checked one). On the gfx950 emulator only each launch's
    traced workgroups run: the checked call ran them all, and the timing model reads only traces. A stop
    there (a workgroup waiting on one that did not run, an index another did not write) runs it again whole."""
    from harness.emulator import launch_hip, launch_triton
    from harness.emulator.errors import EmulationFault

    emulated = launch_hip.requested() or launch_triton.requested()
    mark = launch_hip.launches_so_far()
    try:
        with recording(device, only_traced=emulated) as recorded:
            custom_kernel(data)
        synchronize(device)
        return recorded()
    except EmulationFault:
        if not emulated:
            raise
        launch_hip.forget_since(mark)
    with recording(device) as recorded:
        custom_kernel(data)
    synchronize(device)
    return recorded()



def traced_calls(custom_kernel, data, device: str, synchronize) -> str:
    """A HIP file at a shape it was checked shorter than, on the gfx950 emulator: a first call whose launches
    run no workgroup (what a first call sets up is then not priced), then one running each launch's traced
    workgroups alone (the timing model's input: the launches and grids the file picks at the shape itself),
    unchecked. "" or why it stopped: a workgroup waiting on one that did not run gives no traces (the
    shorter calls price the shape), as does a file that raises reading what the others did not write."""
    from harness.emulator import launch_hip
    from harness.emulator.errors import EmulationFault

    mark = launch_hip.launches_so_far()
    try:
        for workgroups in ([], "representative"):
            with launch_hip.tracing(only_traced=True, workgroups=workgroups):
                custom_kernel(data)
            synchronize(device)
    except EmulationFault as error:
        launch_hip.forget_since(mark)
        return f"stopped on the gfx950 emulator: {error}"
    return ""
