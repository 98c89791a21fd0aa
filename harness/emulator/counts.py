"""What a launch executed: wave instructions by class, MFMA by name, bytes moved, and the rate."""
from dataclasses import dataclass, field

LABEL = "gfx950 emulated (CPU): correctness only"


def add_launches(total: dict, more: dict) -> None:
    """Per kernel, the launches, seconds and counts of `more` added to `total` ({kernel: {launches, seconds,
    counts}}); waves per workgroup is a launch's shape, not an amount: the largest is kept."""
    for kernel, part in more.items():
        entry = total.setdefault(kernel, {"launches": 0, "seconds": 0.0, "counts": {}})
        entry["launches"] += part.get("launches", 0)
        entry["seconds"] += part.get("seconds", 0.0)
        for key, value in (part.get("counts") or {}).items():
            merge = max if key == "waves_per_workgroup" else lambda a, b: a + b
            entry["counts"][key] = merge(entry["counts"].get(key, 0), value)


def instruction_class(mnemonic: str) -> str:
    if mnemonic.startswith(("v_mfma", "v_smfmac")):
        return "MFMA"
    if mnemonic.startswith("v_"):
        return "VALU"
    if mnemonic.startswith(("s_load", "s_buffer_load", "s_memtime", "s_memrealtime")):
        return "SMEM"
    if mnemonic.startswith(("s_branch", "s_cbranch", "s_waitcnt", "s_barrier", "s_endpgm", "s_nop",
                            "s_sleep", "s_setprio", "s_setpc", "s_swappc", "s_getpc", "s_trap")):
        return "control"
    if mnemonic.startswith("s_"):
        return "SALU"
    if mnemonic.startswith("ds_"):
        return "LDS"
    family, _, rest = mnemonic.partition("_")
    kind = "load" if rest.startswith("load") else "store" if rest.startswith("store") else "atomic"
    if family in ("global", "flat"):
        return f"global_{kind}"
    if family in ("buffer", "scratch"):
        return f"{family}_{kind}"
    return "other"


@dataclass
class LaunchCounts:
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    waves_per_workgroup: int
    workgroups: int
    instructions: int = 0
    by_class: dict[str, int] = field(default_factory=dict)
    mfma_by_name: dict[str, int] = field(default_factory=dict)
    by_mnemonic: dict[str, int] = field(default_factory=dict)
    bytes: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    label: str = LABEL
    engine: str = "numpy executors"  # or "C fast path (numpy for the rest)": both check bounds and LDS races
    trace: object = None  # a trace.LaunchTrace when run_kernel was asked for one

    @property
    def rate(self) -> float:
        """Wave instructions per second of emulation (a speed of the emulator, not of MI355X)."""
        return self.instructions / self.seconds if self.seconds > 0 else 0.0

    def add_hits(self, instructions, hits) -> None:
        for ins, count in zip(instructions, hits):
            if not count:
                continue
            self.instructions += count
            kind = instruction_class(ins.mnemonic)
            self.by_class[kind] = self.by_class.get(kind, 0) + count
            self.by_mnemonic[ins.mnemonic] = self.by_mnemonic.get(ins.mnemonic, 0) + count
            if kind == "MFMA":
                self.mfma_by_name[ins.mnemonic] = self.mfma_by_name.get(ins.mnemonic, 0) + count

    def as_record(self) -> dict:
        return {"kernel": self.kernel, "label": self.label, "grid": list(self.grid),
                "block": list(self.block), "waves_per_workgroup": self.waves_per_workgroup,
                "workgroups": self.workgroups, "wave_instructions": self.instructions,
                "by_class": dict(self.by_class), "mfma_by_name": dict(self.mfma_by_name),
                "bytes": dict(self.bytes), "seconds": round(self.seconds, 3),
                "wave_instructions_per_second": round(self.rate), "engine": self.engine}

    def summary(self) -> str:
        classes = ", ".join(f"{k} {v}" for k, v in sorted(self.by_class.items()))
        return (f"{self.kernel}: {self.workgroups} workgroups x {self.waves_per_workgroup} waves, "
                f"{self.instructions} wave instructions ({classes}) in {self.seconds:.2f} s, "
                f"{self.rate:,.0f} wave instr/s, {self.engine} [{self.label}]")
