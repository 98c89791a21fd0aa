"""From a Triton launch to the emulator's core, in the child.

`install()` makes Triton's active driver one that targets gfx950 on this
machine: `kernel[grid](...)` binds, specializes and compiles exactly as on
an MI355X (Triton's own AMD backend builds the code object), and the
launch runs that code object on the emulator with the submission's grid
and arguments. Tensors stay CPU tensors; each tensor argument's storage is
a region for the bounds checker. torch.version.hip is set to PERSONA so a
file that picks its path by platform takes its ROCm one.

Launches and faults go where the HIP ones go (launch_hip's journal), so
the child reports both alike.
"""
import os
import struct
import time

from harness.emulator import launch_hip
from harness.emulator.errors import NotEmulated

ENV = "HARNESS_EMULATE_TRITON"  # set by the parent for --device gfx950
PERSONA = "gfx950 emulated (CPU)"
LDS_LIMIT = 160 * 1024
ARCH = ("hip", "gfx950", 64)

_state = {"installed": False, "codes": {}}


def requested() -> bool:
    return os.environ.get(ENV) == "1"


def explicit_arguments(signature, values) -> list:
    """(type, value) of each argument the kernel takes, in order: tuples flattened, constexprs left out (as Triton's
    launchers do)."""
    pairs = []
    for kind, value in zip(signature, values):
        if isinstance(kind, tuple):
            pairs += explicit_arguments(kind, value)
        elif kind != "constexpr":
            pairs.append((kind, value))
    return pairs


INT_FORMATS = {"i1": "b", "i8": "b", "i16": "h", "i32": "i", "i64": "q", "u1": "B", "u8": "B", "u16": "H",
               "u32": "I", "u64": "Q"}
FLOAT_FORMATS = {"fp32": "f", "f32": "f", "fp64": "d"}


def argument_bytes(kind: str, value, size: int) -> bytes:
    """One explicit argument as the kernel reads it: a pointer's address, an integer or a float."""
    if kind.startswith("*"):
        address = 0 if value is None else value if isinstance(value, int) else value.data_ptr()
        return address.to_bytes(8, "little")
    if kind in INT_FORMATS:
        form = INT_FORMATS[kind]
        value = int(value) & ((1 << 8 * struct.calcsize(form)) - 1) if form.isupper() else int(value)
        return struct.pack("<" + form, value).ljust(size, b"\0")[:size]
    if kind in FLOAT_FORMATS:
        return struct.pack("<" + FLOAT_FORMATS[kind], float(value)).ljust(size, b"\0")[:size]
    if kind in ("fp16", "bf16"):
        import torch
        bits = torch.tensor([float(value)], dtype=getattr(torch, "float16" if kind == "fp16" else "bfloat16"))
        return bits.view(torch.int16).item().to_bytes(2, "little", signed=True).ljust(size, b"\0")
    raise NotEmulated(f"a Triton argument of type {kind}")


def kernarg_bytes(info, kinds: list, values: list) -> bytes:
    """The kernarg segment from the code object's argument list: the explicit ones in order, then hidden ones."""
    explicit = [(offset, size) for offset, size, kind in info.args if not kind.startswith("hidden_")]
    if len(explicit) != len(kinds):
        raise ValueError(f"{info.name}: the code object takes {len(explicit)} arguments, "
                         f"the launch gives {len(kinds)}")
    last = max((offset + size for offset, size, _ in info.args), default=0)
    segment = bytearray(max(info.kernarg_size, last))
    for (offset, size), kind, value in zip(explicit, kinds, values):
        segment[offset:offset + size] = argument_bytes(kind, value, size)[:size]
    return bytes(segment)


def tensor_memory(values: list, scratch: list):
    """Each tensor argument's whole storage and Triton's scratch buffers as regions, and nothing else."""
    from harness.emulator.memory import HostMemory
    memory = HostMemory()
    seen = set()
    named = [(value, f"tensor argument {index}") for index, value in enumerate(values)]
    for value, label in named + [(buffer, "Triton's scratch") for buffer in scratch]:
        if hasattr(value, "untyped_storage"):
            storage = value.untyped_storage()
            if storage.data_ptr() not in seen and storage.nbytes():
                seen.add(storage.data_ptr())
                memory.add_region(storage.data_ptr(), storage.nbytes(),
                                  f"{label} ({tuple(value.shape)}, {value.dtype})")
    return memory


class EmulatorLauncher:
    """Triton's launcher_cls: called with the grid, the metadata and every bound argument."""

    def __init__(self, src, metadata):
        self.signature = list(src.signature.values())
        self.block = (metadata.num_warps * metadata.warp_size, 1, 1)
        self.scratch = [(metadata.global_scratch_size, metadata.global_scratch_align),
                        (getattr(metadata, "profile_scratch_size", 0), getattr(metadata, "profile_scratch_align", 1))]
        self.shared = metadata.shared

    def __call__(self, grid_x, grid_y, grid_z, stream, function, kernel_metadata, launch_metadata, enter_hook,
                 exit_hook, *args):
        import torch
        code, name = function
        pairs = explicit_arguments(self.signature, args)
        kinds, values = [kind for kind, _ in pairs], [value for _, value in pairs]
        grid = (grid_x, grid_y, grid_z)
        programs = grid_x * grid_y * grid_z
        if programs == 0:
            return
        buffers = [torch.zeros(size * programs + align, dtype=torch.uint8) if size else None
                   for size, align in self.scratch]
        scratch = [None if buffer is None else -(-buffer.data_ptr() // align) * align  # aligned as Triton asks
                   for buffer, (_, align) in zip(buffers, self.scratch)]
        info = code.kernels[name]
        explicit = sum(not kind.startswith("hidden_") for _, _, kind in info.args)
        extra = explicit - len(kinds)  # Triton's own trailing pointers: global and profile scratch
        kinds, values = kinds + ["*u8"] * extra, values + (scratch + [None] * extra)[:extra]
        try:
            try:
                kernarg = kernarg_bytes(info, kinds, values)
            except NotEmulated as missing:
                raise missing.in_kernel(name) from None
            started = time.monotonic()
            counts = launch_hip._runner()(code, name, grid, self.block, kernarg, dynamic_lds=self.shared,
                                          memory=tensor_memory(values, buffers),
                                          **launch_hip.trace_option())
            launch_hip.record_launch(name, grid, self.block, time.monotonic() - started, counts)
        except BaseException as error:  # noqa: BLE001 - kept: checked() raises it even if the file catches it
            launch_hip.keep_fault(error)
            raise


class EmulatorUtils:
    """What Triton asks of a driver's utils: load a binary, a device's limits."""

    def load_binary(self, name, kernel, shared, device):
        from harness.emulator.code_object import load_code_object
        key = hash(kernel)
        if key not in _state["codes"]:
            _state["codes"][key] = load_code_object(bytes(kernel))
        code = _state["codes"][key]
        return None, (code, name), 0, 0, 1024

    def get_device_properties(self, device):
        return {"max_shared_mem": LDS_LIMIT, "multiprocessor_count": 256, "warpSize": 64, "arch": "gfx950",
                "max_num_regs": 512, "mem_clock_rate": 0, "mem_bus_width": 0}


def make_driver():
    from triton.backends.driver import DriverBase
    from triton.backends.compiler import GPUTarget

    class EmulatedGfx950Driver(DriverBase):
        """Triton's driver for an MI355X that is this CPU running the emulator."""

        def __init__(self):
            self.utils = EmulatorUtils()
            self.launcher_cls = EmulatorLauncher

        @classmethod
        def is_active(cls):
            return False  # only ever set by install(), never picked by Triton itself

        def map_python_to_cpp_type(self, ty):
            return ty

        def get_current_target(self):
            return GPUTarget(*ARCH)

        def get_active_torch_device(self):
            import torch
            return torch.device("cpu")

        def get_current_device(self):
            return 0

        def set_current_device(self, device):
            return None

        def get_current_stream(self, device=None):
            return 0

        def get_device_interface(self):
            import torch
            return torch.cpu

        def get_benchmarker(self):
            raise RuntimeError("no timing on the gfx950 emulator: it checks correctness only")

    return EmulatedGfx950Driver()


def install() -> None:
    """Triton's active driver becomes the emulator's, and torch reports ROCm; once per process."""
    if _state["installed"]:
        return
    import torch
    from triton.runtime import driver
    driver.set_active(make_driver())
    _state["hip"], torch.version.hip = torch.version.hip, PERSONA
    _state["installed"] = True


def uninstall() -> None:
    """Back to Triton's own driver choice and torch's own version, compiled kernels forgotten (tests)."""
    if not _state["installed"]:
        return
    import torch
    from triton.runtime import driver
    driver.reset_active() if driver._default is not None else setattr(driver, "_active", None)
    torch.version.hip = _state["hip"]
    _state["codes"].clear()
    _state["installed"] = False
