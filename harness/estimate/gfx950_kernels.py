"""The gfx950 compiles that the kernel model prices a recorded Triton launch with: one per kernel name per estimate
run, on first use, from the submission's AOT_SPECS (harness/compile/aot.py).

A kernel with several specs is compiled from the first whose label says "gfx950" (else the first spec): that is the
launch the file describes for the MI355X. A kernel with no spec, one that does not compile, or one whose assembly has
no loop gets no compile; `why_not` says why, and the launch keeps its byte price.
"""
from __future__ import annotations

import re
from pathlib import Path

from harness.compile import aot
from harness.estimate.kernel_model import CompiledKernel, Costs, load_costs

TARGET = "gfx950"


def choose_spec(specs: list, kernel: str) -> dict | None:
    """The AOT_SPECS entry the model compiles for `kernel`: the first labelled gfx950, else the first."""
    own = [spec for spec in specs if spec.get("kernel") == kernel]
    labelled = [spec for spec in own if TARGET in str(spec.get("label", "")).lower()]
    return (labelled or own or [None])[0]


class Gfx950Kernels:
    """Compiles a submission's recorded kernels for gfx950 as they are asked for, each once."""

    def __init__(self, path: str | Path, costs: Costs | None = None):
        self.path = Path(path)
        self.costs = costs or load_costs()
        self._module = None
        self._import_error = ""
        self._found: dict[str, CompiledKernel | None] = {}
        self._why: dict[str, str] = {}

    def _load(self) -> None:
        if self._module is None and not self._import_error:
            try:
                self._module = aot.load_module(self.path)
            except aot.AotError as error:
                self._import_error = f"the file cannot be imported for a gfx950 compile: {error}"

    def get(self, name: str) -> CompiledKernel | None:
        """The gfx950 compile of kernel `name`, or None (why_not says why)."""
        if name not in self._found:
            self._found[name] = self._compile(name)
        return self._found[name]

    def why_not(self, name: str) -> str:
        return self._why.get(name, "")

    def _compile(self, name: str) -> CompiledKernel | None:
        self._load()
        if self._import_error:
            self._why[name] = self._import_error
            return None
        kernel = aot.find_kernels(self._module).get(name)
        specs = getattr(self._module, "AOT_SPECS", [])
        spec = choose_spec(specs if isinstance(specs, (list, tuple)) else [], name)
        if kernel is None or spec is None:
            self._why[name] = f"no gfx950 compile: {name} has no AOT_SPECS entry" + (
                "" if kernel is not None else " and is not a @triton.jit kernel of the file (a Gluon kernel?)")
            return None
        report = aot.compile_kernel(kernel, spec, TARGET)
        if report.error:
            self._why[name] = f"its gfx950 compile ('{report.label}') failed: {report.error}"
            return None
        if report.loop is None or not report.loop.load_bytes_per_lane:
            self._why[name] = f"its gfx950 compile ('{report.label}') has no main loop that loads from memory"
            return None
        waves = re.match(r"(\d+)", report.occupancy or "")
        return CompiledKernel(name=name, label=report.label, loop=report.loop, waves=report.num_warps or 4,
                              waves_per_simd=int(waves.group(1)) if waves else None)
