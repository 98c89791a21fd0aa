"""What a file that picks its path by platform would launch on the MI355X, when this machine cannot show it.

A recording shows the path the file takes here: 201 runs its sm90 Gluon kernel on an H200 and its Triton
path with a CPU's split count on a CPU, neither of which the MI355X would run. Files that name the platform
in their source (torch.version.hip, device capability or properties, gcnArchName, device.type) are found by
their text; each estimate then says so. For a file that states its launch options as
`platform_defaults(device)` and its split count as `choose_splits(...)` (201's convention), the MI355X path
is worked out: its ROCm options (torch.version.hip set while `platform_defaults` runs), the split count for
256 CUs, and the launches 201's `mla_decode` makes with them (the split kernel on grid (splits, batch), the
merge kernel when there is more than one split and the merge is not fused). Those launches replace the
recorded Triton and Gluon ones; the kernel model then prices them from their gfx950 compiles.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from harness.estimate.calibration import Launch
from harness.results.floors import HEADS, QK_DIM, V_DIM

MARKERS = {"torch.version.hip": r"torch\.version\.hip", "device capability": r"get_device_capability",
           "device properties": r"get_device_properties", "gcnArchName": r"gcnArchName",
           "device.type": r"device\.type\s*==", "is_hip": r"\bis_hip\b"}
SPLIT_KERNEL, MERGE_KERNEL = "mla_fp8_kernel", "mla_merge_kernel"  # 201's fp8 path (harness/run/persona.py)
EFFECTS = {"torch_compile": r"torch\.compile\s*\(|@torch\.compile", "tunableop": r"PYTORCH_TUNABLEOP_ENABLED"}


@dataclass
class PathPlan:
    """How this run's recordings relate to the MI355X path of one file."""
    markers: list = field(default_factory=list)   # what in the source picks the path by platform
    options: dict | None = None    # the file's ROCm launch options, when it states them (201's convention)
    split_counts: dict = field(default_factory=dict)  # "B,KV" -> its split count on 256 CUs
    merges: bool = False           # the file has 201's merge kernel
    why_not: str = ""              # why the MI355X path is not worked out, when markers were found
    effects: tuple = ()            # torch.compile / TunableOp turned on in the source

    def worked_out(self) -> bool:
        return self.options is not None

    def warnings(self, recorded_on: str) -> list[str]:
        if not self.markers:
            return []
        found = ", ".join(self.markers)
        if self.worked_out():
            return [f"the file picks its path by platform ({found}): recorded on {recorded_on}, which cannot show "
                    f"the MI355X path, so its Triton launches are the ones its ROCm options and 256 CUs give "
                    f"({SPLIT_KERNEL} on (splits, batch){' and ' + MERGE_KERNEL if self.merges else ''}), "
                    "priced from their gfx950 compiles"]
        return [f"the file picks its path by platform ({found}): recorded on {recorded_on}, which cannot show "
                f"the MI355X path; this estimate prices the path taken here ({self.why_not})"]

    def splits(self, batch: int, kv: int) -> int:
        return self.split_counts[f"{batch},{kv}"]

    def launches(self, recorded: list, batch: int, kv: int) -> list:
        """The recorded launches with the Triton ones replaced by the MI355X path's (unchanged when not worked out)."""
        if not self.worked_out():
            return recorded
        kept = [launch for launch in recorded if launch.kind != "triton"]
        splits = self.splits(batch, kv)
        partials = batch * splits * HEADS * (V_DIM + 1) * 4 if splits > 1 else 0
        q_and_out = batch * HEADS * QK_DIM * 2 + (partials or batch * HEADS * V_DIM * 2)
        found = [Launch("triton", f"{SPLIT_KERNEL} grid ({splits}, {batch}) [gfx950 plan]",
                        bytes=batch * kv * QK_DIM + q_and_out, programs=splits * batch, kernel=SPLIT_KERNEL,
                        splits=splits)]
        if splits > 1 and not self.options["fused"] and self.merges:
            found.append(Launch("triton", f"{MERGE_KERNEL} grid ({batch}, {HEADS}) [gfx950 plan]",
                                bytes=partials + batch * HEADS * V_DIM * 2, programs=batch * HEADS,
                                kernel=MERGE_KERNEL, splits=splits))
        return kept + found


def read(path: str | Path, recorded_on_gfx950: bool, ask_rocm_plan) -> PathPlan:
    """The plan for one file: its platform markers, and its MI355X launch options where it states them.
    `ask_rocm_plan()` is harness/run/persona.py's rocm_plan, asked in the submission's worker."""
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    plan = PathPlan(markers=[name for name, pattern in MARKERS.items() if re.search(pattern, text)],
                    effects=tuple(name for name, pattern in EFFECTS.items() if re.search(pattern, text)))
    if not plan.markers or recorded_on_gfx950:
        plan.markers = [] if recorded_on_gfx950 else plan.markers
        return plan
    answer = ask_rocm_plan()
    plan.why_not, plan.merges = answer["why_not"], answer["has_merge"]
    options = answer["options"]
    if options is not None and (options.get("gluon") or options.get("mxfp4")):
        plan.why_not = "its ROCm options take a path this plan does not reproduce (Gluon or MXFP4)"
    elif options is not None:
        plan.options, plan.split_counts = options, answer["splits"]
    return plan
