"""The gfx950 compiles that the kernel model prices a recorded Triton launch with: one per kernel name per estimate
run, from the submission's AOT_SPECS (harness/compile/aot.py): on first use, or those a plan names up front
together (one worker start and one import of the file for all of them).

A kernel with several specs is compiled from the first whose label says "gfx950" (else the first spec): that is the
launch the file describes for the MI355X. A kernel with no spec, one that does not compile, or one whose assembly has
no loop gets no compile; `why_not` says why, and the launch keeps its byte price.
"""
from __future__ import annotations

import re

from harness.compile import aot
from harness.estimate.executed import Executed
from harness.estimate.kernel_model import CompiledKernel, Costs, load_costs

TARGET = "gfx950"


def choose_spec(specs: list, kernel: str) -> dict | None:
    """The AOT_SPECS entry the model compiles for `kernel`: the first labelled gfx950, else the first."""
    return aot.preferred_spec(specs, kernel, TARGET)


class Gfx950Kernels:
    """Compiles a submission's recorded kernels for gfx950 as they are asked for, each once.

    `compile_reports(names)` gives the aot.KernelReports of those kernels' preferred specs (none for a name
    that is no @triton.jit kernel of the file) or raises CompileError; the estimate runs it in the
    submission's sandboxed worker (harness/run/compiling.py), since importing the file runs its code."""

    def __init__(self, compile_reports, costs: Costs | None = None):
        self.compile_reports = compile_reports
        self.costs = costs or load_costs()
        self._found: dict[str, CompiledKernel | None] = {}
        self._why: dict[str, str] = {}
        # the executed counts of the gfx950 emulator (executed.py), preferred to the static count where there are some
        self.executed = Executed(why="no emulated calls were made")

    def prefetch(self, names) -> None:
        """Compiles the named kernels not compiled yet, all in one call."""
        wanted = [name for name in dict.fromkeys(names) if name not in self._found]
        if wanted:
            self._compile(wanted)

    def get(self, name: str) -> CompiledKernel | None:
        """The gfx950 compile of kernel `name`, or None (why_not says why)."""
        self.prefetch([name])
        return self._found[name]

    def why_not(self, name: str) -> str:
        return self._why.get(name, "")

    def _compile(self, names: list) -> None:
        try:
            reports = self.compile_reports(names)
        except ValueError as error:  # CompileError: the import or the AOT_SPECS
            for name in names:
                self._found[name] = None
                self._why[name] = f"the file cannot be imported for a gfx950 compile: {error}"
            return
        for name in names:
            report = next((found for found in reports if found.kernel == name), None)
            self._found[name] = self._judged(name, report)

    def _judged(self, name: str, report) -> CompiledKernel | None:
        if report is None or report.skipped:
            self._why[name] = f"no gfx950 compile: {name} has no AOT_SPECS entry" + (
                "" if report is not None else " and is not a @triton.jit kernel of the file (a Gluon kernel?)")
            return None
        if report.error:
            self._why[name] = f"its gfx950 compile ('{report.label}') failed: {report.error}"
            return None
        if report.loop is None or not report.loop.load_bytes_per_lane:
            self._why[name] = f"its gfx950 compile ('{report.label}') has no main loop that loads from memory"
            return None
        waves = re.match(r"(\d+)", report.occupancy or "")
        return CompiledKernel(name=name, label=report.label, loop=report.loop, waves=report.num_warps or 4,
                              waves_per_simd=int(waves.group(1)) if waves else None)
