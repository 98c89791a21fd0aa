"""bench/tools/floor_probe.py's read kernels under TRITON_INTERPRET=1: which words each program folds.
Prints one JSON line: the programs' folds and the folds numpy gives for the words they should have read."""
import json
import sys
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench" / "tools"))
sys.path.insert(0, str(REPO))

import floor_probe  # noqa: E402


def fold(words: np.ndarray) -> int:
    return int(np.bitwise_xor.reduce(words)) if words.size else 0


def main() -> None:
    generator = torch.Generator().manual_seed(7)
    tokens = 300
    words = torch.randint(-2**62, 2**62, (tokens * floor_probe.WORDS_PER_TOKEN.value,), generator=generator,
                          dtype=torch.int64)
    plain = words.numpy()
    result = {}
    # the plain read: 5 programs of 2 steps (1024 words each) over 21,600 words, the last program past the end
    for load in ("", "evict_first", ".cg"):  # the policies Triton's loads take (the interpreter ignores them)
        out = torch.zeros(5, dtype=torch.int64)
        floor_probe.read_kernel[(5,)](words, out, words.numel(), 4096, BLOCK=1024, LOAD=load)
        result[f"read{load}"] = out.tolist()
    result["read_expected"] = [fold(plain[p * 4096:(p + 1) * 4096]) for p in range(5)]
    # 201's grid: sequences of 100, 0 and 200 tokens in 2 splits (64-token tiles; the empty one folds nothing)
    indptr = torch.tensor([0, 100, 100, 300], dtype=torch.int32)
    out = torch.zeros(6, dtype=torch.int64)
    floor_probe.split_kernel[(2, 3)](words, indptr, out, out, out, 2, READ=True, MERGE=False, BLOCK=1024,
                                     PARTIAL=2048, SLICE=1024)
    result["split"] = out.tolist()
    spans = [(0, 64), (64, 100), (100, 100), (100, 100), (100, 228), (228, 300)]
    per_token = floor_probe.WORDS_PER_TOKEN.value
    result["split_expected"] = [fold(plain[a * per_token:b * per_token]) for a, b in spans]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
