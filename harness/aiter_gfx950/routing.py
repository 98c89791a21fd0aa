"""Whether a stand-in aiter call runs aiter's own kernel on the emulator or the torch model, and what ran.

Emulated: in a child on the CPU (MLA_DEVICE=cpu), or one told to
emulate gfx950 (HARNESS_EMULATE_GFX950=1, --device gfx950), when the
pinned wheel is unpacked (package.py). Elsewhere the torch stand-in
stays (fast) and says "aiter modelled in torch". HARNESS_AITER=torch
or =emulate overrides the choice. The quantizers are torch everywhere
and say so by name (modelled). Each call's words are kept until
the child takes them (take_lines) for the case's message.
"""
import functools
import os

from harness.aiter_gfx950 import build, package, races, stage1
from harness.emulator.errors import EmulationFault

ENV = "HARNESS_AITER"
MODELLED = "aiter modelled in torch (the harness's stand-in: correctness only)"
# the quantizers' HIP kernels need rocprim/hipcub, their Triton ones aiter's Triton: torch everywhere
FUNCTIONS_MODELLED = "not the wheel's kernels, the stand-in's torch: correctness only"
_seen: dict = {"emulated": [], "modelled": [], "functions": [], "not covered": [], "risks": [],
               "windows": [], "pairs": {}}


def mode() -> str:
    """'emulate' or 'torch' for this process."""
    return choose(_wanted())


def choose(cpu_child: bool) -> str:
    """'emulate' or 'torch' for a child that is (or is not) a CPU / gfx950-emulating one: $HARNESS_AITER
    first, else emulate where the pinned wheel is unpacked (the parent asks it too: platform.emulates_aiter)."""
    forced = os.environ.get(ENV)
    if forced in ("emulate", "torch"):
        return forced
    return "emulate" if cpu_child and package.missing() is None else "torch"


def _wanted() -> bool:
    # a CPU child (--device cpu|gfx950, or no GPU) or one emulating gfx950
    return os.environ.get("MLA_DEVICE") == "cpu" or os.environ.get("HARNESS_EMULATE_GFX950") == "1"


def _why_modelled() -> str:
    """Why this process's MLA kernels ran as the torch model."""
    if os.environ.get(ENV) == "torch":
        return f"{ENV}=torch"
    if _wanted():
        return package.missing() or "emulation not asked for"
    return "a GPU child; --device gfx950 runs aiter's gfx950 code objects on the emulator"


def emulates(kernel: str) -> bool:
    """Whether this call's stage 1 runs on the emulator here (else it is noted as modelled)."""
    if mode() != "emulate":
        _note("modelled", kernel)
        return False
    if not stage1.covered(kernel):
        _note("not covered", kernel)
        return False
    return True


def runs_in_torch(api: str) -> bool:
    """Whether this metadata or reduce call runs the torch model here (then noted as modelled)."""
    if mode() == "emulate":
        return False
    _note("modelled", api)
    return True


def note_risk(text: str | None) -> None:
    """A ranked-mode risk of the call's kernel (harness/aiter_standin/risks.py), for the case's message."""
    if text:
        _note("risks", text)


def modelled(name: str):
    """Decorates a stand-in function that is torch on every machine:
    each call names it (`name`, as the file calls it) in the case's words."""
    def wrap(function):
        @functools.wraps(function)
        def call(*args, **kwargs):
            _note("functions", name)
            return function(*args, **kwargs)
        return call
    return wrap


def _note(kind: str, value: str) -> None:
    if value not in _seen[kind]:
        _seen[kind].append(value)


def run_stage1(kernel: str, *args, **kwargs) -> None:
    """stage1.run; a race stops the call naming the kernel and both instructions."""
    entry = package.pinned()["code_objects"][kernel]
    try:
        launch = stage1.run(kernel, *args, let_through=entry.get("lds_races_let_through"), **kwargs)
    except EmulationFault as fault:
        fault.message = (f"aiter's {kernel}.co (amd-aiter {package.version()}, emulated on gfx950): "
                         f"{fault.message}")
        fault.args = (fault.describe(),)
        raise
    _note("emulated", kernel)
    if launch.windows:
        _note("windows", kernel)
        pairs = _seen["pairs"].setdefault(kernel, [])
        pairs += [pair for pair in launch.windows if pair not in pairs]


def emulated_line() -> str:
    """'aiter emulated (gfx950; amd-aiter <version> code objects; <kernels>): correctness only' + sha256s."""
    objects = package.pinned()["code_objects"]
    names = _seen["emulated"]
    digests = "; ".join(
        f"{name}.co sha256 {objects[name]['package']['sha256'][:16]}"
        + (f" (differs from the runner's pin {objects[name]['pin']['commit'][:10]}: "
           f"{objects[name]['pin']['sha256'][:16]})" if objects[name]["differs_from_pin"]
           else " (as at the runner's pin)")
        for name in names)
    return (f"aiter emulated (gfx950; amd-aiter {package.version()} code objects; {', '.join(names)}): "
            f"correctness only; {digests}")


def take_lines() -> list[str]:
    """The warning lines for what ran since the last take (then forgotten)."""
    lines = []
    if _seen["emulated"]:
        lines.append(emulated_line())
    lines += build.take_lines()  # metadata and reduce from the wheel's sources (build.py), or why not
    objects = package.pinned()["code_objects"]
    for kernel in _seen["windows"]:
        pairs = _seen["pairs"][kernel]
        lines.append(f"LDS races let through in {kernel} ({len(pairs)} instruction pairs, first "
                     f"{pairs[0]}; schedule assumed: {races.SCHEDULE}): "
                     f"{objects[kernel]['lds_races_let_through']}")
    if _seen["modelled"]:
        lines.append(f"{MODELLED}: {', '.join(_seen['modelled'])} ({_why_modelled()})")
    if _seen["functions"]:
        lines.append(f"aiter modelled in torch: {', '.join(_seen['functions'])} ({FUNCTIONS_MODELLED})")
    for kernel in _seen["not covered"]:
        lines.append(f"not covered: {kernel} (no code object of it is emulated; aiter modelled in torch)")
    lines += [f"ranked-mode risk: {text}" for text in _seen["risks"]]
    for kept in _seen.values():
        kept.clear()
    return lines


def annotate(reply: dict) -> None:
    """Add what ran to a child's reply: warning lines under a case's message (the run's warnings and
    record take them from there); a failed call's own message already names the kernel."""
    lines = take_lines()
    result = reply.get("result") if reply.get("ok") else None
    if lines and isinstance(result, dict) and isinstance(result.get("message"), str):
        words = "\n".join(f"warning: {line}" for line in lines)
        result["message"] = f"{result['message']}\n{words}" if result["message"] else words
