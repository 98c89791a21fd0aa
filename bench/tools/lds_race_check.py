"""Issue 29: is there an s_barrier between the waves' reads of the fp8 P tile and the next LDS writes?

Usage: python bench/tools/lds_race_check.py AITER_GIT_DIR [COMMIT]
Takes aiter's gfx950 MLA code objects at COMMIT (default f3be04a12a, the runner's pin), disassembles each with
llvm-objdump-22 --mcpu=gfx950, and after every P write (the ds_write that follows v_cvt_pk_fp8_f32) prints the
LDS events in order: the barrier, the P reads, then whether a ds_write comes before the next s_barrier.
The byte overlap of those writes with the P tile is worked out by hand in docs/AITER_STANDIN.md.
"""
from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

KERNELS = ("mla_a8w8_qh16_qseqlen1_gqaratio16", "mla_a8w8_qh16_qseqlen1_gqaratio16_ps")
EVENT = re.compile(r"^\s+(ds_\w+|s_barrier|v_cvt_pk_fp8_f32)\b([^/]*)")


def listing(git_dir: str, commit: str, name: str) -> list[str]:
    blob = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{commit}:hsa/gfx950/mla/{name}.co"],
                          capture_output=True, check=True).stdout
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{name}.co"
        path.write_bytes(blob)
        return subprocess.run(["llvm-objdump-22", "-d", "--mcpu=gfx950", str(path)], capture_output=True,
                              text=True, check=True).stdout.splitlines()


def windows(lines: list[str]) -> list[list[str]]:
    """From each P write to the second s_barrier after it: [P write, barrier, reads..., writes?, barrier]."""
    events = [(m[1], m[2].strip()) for m in map(EVENT.match, lines) if m]
    found = []
    for i, (op, _) in enumerate(events):
        if op != "v_cvt_pk_fp8_f32" or (i + 1 < len(events) and events[i + 1][0] == "v_cvt_pk_fp8_f32"):
            continue
        window, barriers = [], 0
        for op2, args in events[i + 1:]:
            if op2 == "v_cvt_pk_fp8_f32":
                break
            window.append(f"{op2} {args}".strip())
            barriers += op2 == "s_barrier"
            if barriers == 2:
                break
        found.append(window)
    return found


def verdict(window: list[str]) -> str:
    """'write before barrier' when a ds_write follows the P reads with no s_barrier between them."""
    first = window.index("s_barrier") if "s_barrier" in window else len(window)
    after = window[first + 1:]
    reads = [i for i, e in enumerate(after) if e.startswith("ds_read")]
    if not reads:
        return "no P read after the barrier"
    for event in after[reads[0]:]:
        if event == "s_barrier":
            return "barrier before the next LDS write"
        if event.startswith("ds_write"):
            return f"write before barrier: {event}"
    return "no LDS write before the window ends"


def main(argv: list[str]) -> int:
    git_dir, commit = argv[1], argv[2] if len(argv) > 2 else "f3be04a12a"
    for name in KERNELS:
        print(f"== {name} @ {commit}")
        for window in windows(listing(git_dir, commit, name)):
            print("  ", verdict(window), "|", " ; ".join(window[:8]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
