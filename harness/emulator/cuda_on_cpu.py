"""device="cuda" in the child of an emulated run: the emulated gfx950.

Stands in for an MI355X beside a CPU-only torch. On the emulator the
GPU's memory is the CPU's, so a tensor a submission makes on "cuda"
(torch.empty(..., device="cuda"), .cuda(), .to("cuda"), device=0) is
made on the CPU, where the emulated kernels read it. torch's own
mechanism does the mapping: a TorchFunctionMode, as
torch.set_default_device uses.

Every CPU tensor is the emulated GPU's (its memory is the CPU's), so
each answers as a tensor on it: is_cuda True, is_cpu False, device
cuda:0, get_device() 0. A submission takes its GPU path, never a CPU
fallback; its C++ host code gets the same answers
(hip_runtime/emulated_device.h). torch.Generator(device="cuda") is a
CPU generator.

torch.cuda answers as beside one MI355X: one device, named as emulated,
gcnArchName gfx950, and torch.version.hip set. Its streams and events
are correctness-only: work is done when it is issued, so they only
wait for nothing. An event's elapsed_time is the CPU's wall clock
between two records (a submission's own autotuning), never a GPU time;
the harness takes no times on the emulator.

install() happens only in an emulated child (harness/run/child.py);
uninstall() puts everything back (tests).
"""
import time

NAME = "AMD Instinct MI355X (gfx950 emulated on the CPU)"
ARCH = "gfx950"
# torch.version.hip: parses as a ROCm version (cpp_extension splits it
# on dots), and says the GPU is the emulator.
HIP_VERSION = "7.0.0+gfx950.emulated.on.the.cpu"
MI355X_MEMORY = 288 * 10**9  # bytes of HBM3E on one MI355X

_state: dict = {"mode": None, "saved": {}, "hip": None,
                "generator": None}


def is_cuda_device(device) -> bool:
    """'cuda', 'cuda:0', torch.device('cuda') or an index."""
    if isinstance(device, bool):
        return False
    if isinstance(device, int):
        return True
    return str(device).split(":")[0] == "cuda"


def on_cpu(kwargs: dict) -> dict:
    """kwargs with a CUDA device made the CPU, pinning off."""
    mapped = dict(kwargs)
    if is_cuda_device(mapped.get("device", "cpu")):
        mapped["device"] = "cpu"
    if mapped.get("pin_memory"):
        mapped["pin_memory"] = False  # pinned: a CUDA host feature
    return mapped


def _mode_class():
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.overrides import _get_current_function_mode_stack
    from torch.utils._device import DeviceContext, _device_constructors

    tensor = torch.Tensor
    # Calls whose answer is the tensor itself: it is already there.
    already_there = {tensor.cuda, tensor.pin_memory}
    # What a tensor on the emulated GPU answers, where its CPU
    # storage would say otherwise.
    as_on_gpu = {tensor.is_cuda.__get__: True,
                 tensor.is_cpu.__get__: False,
                 tensor.device.__get__: torch.device("cuda", 0),
                 tensor.get_device: 0}
    # set_default_device's mode sits below ours: give its device here.
    constructors = _device_constructors()

    def default_is_cuda() -> bool:
        contexts = [mode for mode in _get_current_function_mode_stack()
                    if isinstance(mode, DeviceContext)]
        return bool(contexts) and is_cuda_device(contexts[-1].device)

    class CudaOnCpu(TorchFunctionMode):
        """Every CUDA device a torch call names becomes the CPU."""

        def __torch_function__(self, func, types_, args=(),
                               kwargs=None):
            if func in already_there:
                return args[0]
            if func in as_on_gpu and args[0].device.type == "cpu":
                return as_on_gpu[func]
            kwargs = on_cpu(kwargs or {})
            if func in constructors and "device" not in kwargs \
                    and default_is_cuda():
                kwargs["device"] = "cpu"
            if func == tensor.to and len(args) > 1 \
                    and is_cuda_device(args[1]) \
                    and not isinstance(args[1], torch.Tensor):
                args = (args[0], "cpu", *args[2:])
            return func(*args, **kwargs)

    return CudaOnCpu


class DeviceProperties:
    """torch.cuda.get_device_properties' answer for one MI355X."""
    name = NAME
    gcnArchName = ARCH
    major, minor = 9, 5
    multi_processor_count = 256
    warp_size = 64
    total_memory = MI355X_MEMORY
    L2_cache_size = 4 * 2**20
    max_threads_per_multi_processor = 2048
    regs_per_multiprocessor = 512 * 64
    is_integrated = False

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{NAME}', "
                f"gcnArchName='{ARCH}', emulated on the CPU)")


class Event:
    """torch.cuda.Event: done when recorded; times are the host's."""

    def __init__(self, enable_timing=False, blocking=False,
                 interprocess=False):
        self.enable_timing = enable_timing
        self.recorded_at = None

    def record(self, stream=None):
        self.recorded_at = time.perf_counter()

    def synchronize(self):
        return None

    def query(self):
        return True

    def wait(self, stream=None):
        return None

    def elapsed_time(self, end_event) -> float:
        """Milliseconds of the CPU's clock: not a GPU time."""
        if None in (self.recorded_at, end_event.recorded_at):
            raise RuntimeError("elapsed_time: an event was never "
                               "recorded")
        return (end_event.recorded_at - self.recorded_at) * 1e3


class Stream:
    """torch.cuda.Stream: every one is the null stream, never busy."""
    cuda_stream = 0

    def __init__(self, device=None, priority=0, **_):
        import torch
        self.device = torch.device("cuda", 0)
        self.priority = priority

    def synchronize(self):
        return None

    def query(self):
        return True

    def wait_event(self, event):
        return None

    def wait_stream(self, stream):
        return None

    def record_event(self, event=None):
        event = event or Event()
        event.record(self)
        return event

    def __enter__(self):
        return self

    def __exit__(self, *_):
        return None


class Nothing:
    """A context that changes nothing: torch.cuda.device(0), stream(s)."""

    def __init__(self, *_, **__):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *_):
        return None


def generator_class():
    """torch.Generator, a CUDA one made on the CPU (the GPU's RNG
    here: what "cuda" random calls draw from)."""
    import torch

    class Generator(torch.Generator):
        def __new__(cls, device="cpu"):
            mapped = "cpu" if is_cuda_device(device) else device
            return super().__new__(cls, device=mapped)

        def __init__(self, device="cpu"):
            pass

    return Generator


def answers() -> dict:
    """The torch.cuda names that answer as beside one MI355X."""
    import torch
    null_stream = Stream()
    return {
        "is_available": lambda: True,
        "device_count": lambda: 1,
        "current_device": lambda: 0,
        "set_device": lambda device: None,
        "device": Nothing,
        "get_device_name": lambda device=None: NAME,
        "get_device_properties": lambda device=None: DeviceProperties(),
        "get_device_capability": lambda device=None: (9, 5),
        "synchronize": lambda device=None: None,
        "Event": Event,
        "Stream": Stream,
        "current_stream": lambda device=None: null_stream,
        "default_stream": lambda device=None: null_stream,
        "stream": Nothing,
        "empty_cache": lambda: None,
        # The CPU's generator is the GPU's (torch.manual_seed calls these).
        "manual_seed": torch.default_generator.manual_seed,
        "manual_seed_all": torch.default_generator.manual_seed,
        "mem_get_info": lambda device=None: (MI355X_MEMORY, MI355X_MEMORY),
    }


def installed() -> bool:
    return _state["mode"] is not None


def install() -> None:
    """Map "cuda" to the CPU and answer torch.cuda; once per process."""
    if installed():
        return
    import torch
    replaced = answers()
    _state["saved"] = {name: getattr(torch.cuda, name)
                       for name in replaced}
    for name, value in replaced.items():
        setattr(torch.cuda, name, value)
    _state["hip"] = torch.version.hip
    torch.version.hip = HIP_VERSION
    _state["generator"] = torch.Generator
    torch.Generator = generator_class()
    mode = _mode_class()()
    mode.__enter__()  # left on: the whole child is the emulated run
    _state["mode"] = mode


def uninstall() -> None:
    """torch as it was (tests)."""
    if not installed():
        return
    import torch
    _state["mode"].__exit__(None, None, None)
    _state["mode"] = None
    for name, value in _state["saved"].items():
        setattr(torch.cuda, name, value)
    torch.version.hip = _state["hip"]
    torch.Generator = _state["generator"]
    _state["saved"] = {}

