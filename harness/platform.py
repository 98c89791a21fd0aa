"""What this machine is, and which submissions it can run (DESIGN section 5)."""
import dataclasses
import functools
import importlib.metadata
import importlib.util
import platform as python_platform
from pathlib import Path

from harness import __version__
from harness.results.records import EMULATOR_ARCH, EMULATOR_MARK
from harness.submission import Submission

AITER_STANDIN_MARK = "aiter stand-in: correctness only"  # in every table, record and note a stand-in run touches
AITER_STANDIN = (f"{AITER_STANDIN_MARK} (AMD's aiter is not installed here: the harness's stand-in serves "
                 "`import aiter`; each case's warnings say whether its MLA kernels ran as aiter's own gfx950 code "
                 "objects on the emulator or as a torch model; its times say nothing about MI355X)")
OPTIONAL_AITER_STANDIN = ("aiter (optional): the harness's stand-in serves `import aiter` here, so the file's aiter "
                          "path runs where it imports it (correctness only)")
EMULATOR_COVERS = ("HIP kernels run on the harness's gfx950 emulator (harness/emulator/README.md): scalar, vector, "
                   "packed, DPP/SDWA, LDS, global, buffer, scratch, LDS-DMA and MFMA instructions, with LDS-race and "
                   "bounds checks; Triton kernels only with --device gfx950; an instruction it lacks skips the case "
                   "(\"not emulated: ...\")")
EMULATED_HIP = f"{EMULATOR_MARK} ({EMULATOR_COVERS})"
EMULATED_TRITON = (f"{EMULATOR_MARK}: Triton kernels compiled for gfx950 by Triton's AMD backend and run on the "
                   "emulator with the file's own grid and arguments (torch reports ROCm to the file)")


class PlatformError(ValueError):
    """A device request this machine cannot satisfy (message is one line for the user)."""


@dataclasses.dataclass(frozen=True)
class Platform:
    backend: str  # "cuda" | "rocm" | "cpu"
    device_name: str  # "NVIDIA H200", "AMD Instinct MI355X", "cpu (x86_64)"
    arch: str  # "sm_90", "gfx950", "cpu"
    versions: dict
    emulate_gfx950: bool = False  # --device gfx950: HIP runs on the emulator even where a GPU is
    emulate_triton: bool = False  # --device gfx950 only: Triton kernels compiled for gfx950 run on it too

    @property
    def is_gpu(self) -> bool:
        return self.backend != "cpu"

    @property
    def torch_device(self) -> str:
        """The device string generate_input and submissions use here (ROCm builds call it cuda too)."""
        return "cuda" if self.is_gpu else "cpu"

    def describe(self) -> str:
        """'NVIDIA H200 (sm_90)'."""
        return self.device_name if self.arch == "cpu" else f"{self.device_name} ({self.arch})"

    def record_device(self) -> dict:
        """The ledger's `device` field."""
        return {"name": self.device_name, "arch": self.arch, "backend": self.backend}


def _distribution_version(*names: str) -> str | None:
    for name in names:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def aiter_version() -> str | None:
    """AMD's aiter version when it is installed, else None. PyPI's unrelated `aiter` (async iterators) does not count."""
    try:
        spec = importlib.util.find_spec("aiter")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    # AMD's package ships the MLA kernels; look for them on disk instead of importing (slow, may build kernels).
    if not any((Path(place) / "mla.py").exists() for place in spec.submodule_search_locations):
        return None
    return _distribution_version("amd-aiter", "aiter") or "unknown"


def versions() -> dict:
    return {
        "torch": _distribution_version("torch"),  # read without importing torch (1.3 s a command)
        "triton": _distribution_version("triton", "pytorch-triton-rocm", "pytorch-triton"),
        "aiter": aiter_version(),
        "python": python_platform.python_version(),
        "harness": __version__,
    }


def _gpu_arch() -> str:
    import torch

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    if torch.version.hip:
        return props.gcnArchName.split(":")[0]
    return f"sm_{props.major}{props.minor}"


def _gpu_device_files() -> bool:
    """Whether the kernel shows an NVIDIA or AMD GPU at all (torch can see none without these files)."""
    return any(Path(name).exists() for name in ("/dev/nvidiactl", "/dev/nvidia0", "/dev/kfd", "/dev/dxg"))


def _cpu_platform() -> Platform:
    machine = python_platform.machine() or "unknown"
    return Platform(backend="cpu", device_name=f"cpu ({machine})", arch="cpu", versions=versions())


def detect(device: str = "auto") -> Platform:
    """The platform for `device`: "auto" (the GPU when there is one), "cuda" (a GPU, ROCm included), "cpu", or
    "gfx950" (the CPU, with HIP and Triton kernels on the gfx950 emulator)."""
    if device not in ("auto", "cuda", "cpu", "gfx950"):
        raise PlatformError(f"unknown device {device!r}: use auto, cuda, cpu or gfx950")
    if device == "gfx950":
        problem = emulator_missing()
        if problem:
            raise PlatformError(f"--device gfx950: the gfx950 emulator cannot run here: {problem}")
        here = detect("cpu")
        return dataclasses.replace(here, emulate_gfx950=True, emulate_triton=True)
    if device == "cpu" or (device == "auto" and not _gpu_device_files()):  # no torch import: 1.3 s a command
        return _cpu_platform()
    import torch

    has_gpu = torch.cuda.is_available()
    if device == "cuda" and not has_gpu:
        raise PlatformError(f"--device cuda, but this machine has no usable GPU (torch {torch.__version__})")
    if not has_gpu:
        return _cpu_platform()
    return Platform(
        backend="rocm" if torch.version.hip else "cuda",
        device_name=torch.cuda.get_device_name(torch.cuda.current_device()),
        arch=_gpu_arch(),
        versions=versions(),
    )


def can_run(submission: Submission, platform: Platform) -> tuple[bool, str]:
    """(True, note) when this platform can run the submission, else (False, what is missing and what this machine is).

    Only hard requirements stop a run; a missing optional one goes into the note (the file's fallback runs).
    """
    needs = submission.requirements
    here = f"this machine is {platform.describe()}"
    if "hip" in needs and emulates_hip(submission, platform):
        pass
    elif "hip" in needs:
        archs = "/".join(sorted(submission.hip_archs)) or "a ROCm GPU"
        if platform.backend != "rocm":
            why = f"needs ROCm: HIP source compiled with load_inline for {archs}; {here}"
            return False, f"{why}; {hip_elsewhere(submission)}"
        if submission.hip_archs and platform.arch not in submission.hip_archs:
            return False, f"needs a ROCm GPU of arch {archs} for its HIP source; {here}"
    if "triton" in needs and platform.versions.get("triton") is None:
        return False, f"needs Triton, which is not installed; {here}"
    notes = [f"{name} (optional) is not available here: its fallback path runs"
             for name in sorted(submission.optional) if not _available(name, platform)]
    if standin_serves_aiter(submission, platform):
        notes.append(OPTIONAL_AITER_STANDIN if "aiter" in submission.optional else AITER_STANDIN)
    if emulates_hip(submission, platform):
        notes.append(EMULATED_HIP)
    if emulates_triton(submission, platform):
        notes.append(EMULATED_TRITON)
    elif interprets_triton(submission, platform):
        notes.append("Triton kernels run through the interpreter (TRITON_INTERPRET=1; its fp8 rounding and bf16 "
                     "dots mended)")
    return True, "; ".join(notes)


def hip_elsewhere(submission: Submission) -> str:
    """Where else its HIP could run: the gfx950 emulator, if built for gfx950 and the toolchain is here."""
    if submission.hip_archs and "gfx950" not in submission.hip_archs:
        return "the gfx950 emulator runs only gfx950 code"
    missing = emulator_missing()
    if missing:
        return f"the gfx950 emulator would run it, but its toolchain is missing: {missing}"
    return "--device gfx950 runs it on the gfx950 emulator (correctness only)"


def standin_serves_aiter(submission: Submission, platform: Platform) -> bool:
    """The harness's aiter stand-in will serve the file's `import aiter` here: no real aiter is installed."""
    return "aiter" in (submission.requirements | submission.optional) and platform.versions.get("aiter") is None


def emulates_aiter(submission: Submission, platform: Platform) -> bool:
    """The stand-in runs the file's aiter MLA calls as aiter's own gfx950 code on the emulator here (a CPU child,
    the pinned wheel unpacked), as harness/aiter_gfx950/routing.py decides in the child."""
    from harness.aiter_gfx950 import routing

    cpu_child = platform.torch_device == "cpu" or platform.emulate_gfx950
    return standin_serves_aiter(submission, platform) and routing.choose(cpu_child) == "emulate"


def interprets_triton(submission: Submission, platform: Platform) -> bool:
    """Its Triton kernels run through TRITON_INTERPRET here (on a CPU; an optional triton import succeeds wherever
    Triton is installed, so its kernels need the interpreter too)."""
    return (uses_triton(submission, platform) and not platform.is_gpu
            and not emulates_triton(submission, platform))


def uses_triton(submission: Submission, platform: Platform) -> bool:
    return "triton" in submission.requirements or (
        "triton" in submission.optional and _available("triton", platform))


def emulates_triton(submission: Submission, platform: Platform) -> bool:
    """Its Triton kernels are compiled for gfx950 and run on the emulator here (--device gfx950 without a ROCm GPU)."""
    return (uses_triton(submission, platform) and platform.backend != "rocm" and platform.emulate_triton
            and emulator_missing() is None)


def emulates(submission: Submission, platform: Platform) -> bool:
    """Some of its kernels (HIP, or Triton with --device gfx950) run on the gfx950 emulator here."""
    return emulates_hip(submission, platform) or emulates_triton(submission, platform)


def _available(name: str, platform: Platform) -> bool:
    """Whether an optional requirement can work here (its guarded path is the one that runs)."""
    if name == "hip":
        return platform.backend == "rocm" or emulates_hip_anything(platform)
    if name == "aiter":
        return True  # the real aiter, or else the harness's stand-in (harness/aiter_standin)
    return platform.versions.get(name) is not None



@functools.lru_cache(maxsize=1)
def emulator_missing() -> str | None:
    """Why the gfx950 emulator cannot run here (the HIP toolchain, the emulator's core), or None."""
    from harness.compile.hip import toolchain

    try:
        toolchain.find()
    except toolchain.ToolchainMissing as error:
        return str(error)
    if importlib.util.find_spec("harness.emulator.launch") is None:
        return "the emulator's core (harness/emulator/launch.py) is not in this checkout"
    return None


def emulates_hip_anything(platform: Platform) -> bool:
    """HIP goes to the emulator on this platform: --device gfx950, or `harness run`'s default without a GPU."""
    return platform.backend != "rocm" and platform.emulate_gfx950


def run_platform(device: str = "auto") -> Platform:
    """What `harness run` (and list, doctor) use: detect(device), and on a machine without a GPU, by default,
    HIP on the gfx950 emulator where it can run; --device cpu keeps the plain CPU."""
    here = detect(device)
    if device == "auto" and not here.is_gpu and emulator_missing() is None:
        return dataclasses.replace(here, emulate_gfx950=True)
    return here


def emulates_hip(submission: Submission, platform: Platform) -> bool:
    """This file's HIP kernels run on the gfx950 emulator here (it builds HIP for gfx950, or names no arch)."""
    uses_hip = "hip" in (submission.requirements | submission.optional)
    for_gfx950 = not submission.hip_archs or "gfx950" in submission.hip_archs
    return uses_hip and for_gfx950 and emulates_hip_anything(platform)


def emulated(platform: Platform) -> Platform:
    """The platform an emulated run's record names: the CPU, labelled as the emulator, never as MI355X."""
    return dataclasses.replace(platform, device_name=EMULATOR_MARK, arch=EMULATOR_ARCH, emulate_gfx950=True)


def emulator_environment(submission: Submission, platform: Platform) -> dict:
    """What the child of an emulated run is told: emulate (HIP, and Triton with --device gfx950), and where the HIP
    toolchain and the parent's builds are (its own XDG_CACHE_HOME is the run's scratch)."""
    from harness.compile.hip import toolchain

    env = {"HARNESS_EMULATE_GFX950": "1", "HARNESS_HIP_CACHE": str(toolchain.cache_root())}
    if emulates_triton(submission, platform):
        env["HARNESS_EMULATE_TRITON"] = "1"
    return env


def emulator_status(here) -> str:
    """What the gfx950 emulator covers, and whether HIP goes to it here (`harness doctor`)."""
    if getattr(here, "emulate_gfx950", False):
        return f"on: {EMULATED_HIP}"
    missing = emulator_missing()
    return f"off: {missing}" if missing else "off here (--device gfx950, or a machine without a GPU, turns it on)"


def reach(platform: Platform) -> dict:
    """can_run's verdict here for a file of each kind (doctor's table): torch, triton, hip, aiter."""
    examples = {"torch": {"torch"}, "triton": {"torch", "triton"}, "hip": {"torch", "hip"},
                "aiter": {"torch", "aiter"}}
    return {need: can_run(Submission(number=None, slug=need, path=Path(need), requirements=frozenset(needs),
                                     sha256=""), platform)
            for need, needs in examples.items()}
