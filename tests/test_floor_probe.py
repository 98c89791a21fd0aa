"""bench/tools/floor_probe.py (issue 31's floors; the probe itself times on a GPU): its read kernels, run under the
Triton interpreter, fold exactly the words a plain read and 201's (split, sequence) grid assign to each program."""
from pathlib import Path

import pytest

from kernel_loading import run_interpreted

CHECKS = Path(__file__).resolve().parent / "kernel_checks" / "interpret_floor_probe.py"


@pytest.mark.slow  # the interpreter's run: ~13 s
def test_read_kernels_fold_the_words_each_program_owns():
    result = run_interpreted(CHECKS, timeout=300)
    for load in ("", "evict_first", ".cg"):
        assert result[f"read{load}"] == result["read_expected"], load
    assert result["split"] == result["split_expected"]
    assert result["split"][2] == 0 and result["split"][0] != 0  # the empty sequence reads nothing; the others do
