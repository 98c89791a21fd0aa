"""How long generate_input and the torch ref_kernel take on the largest official shape (issue 2's bounds).

Run on a GPU machine from the repo root: `python bench/tools/reference_speed.py`. Times are wall-clock
around synchronized calls, after one warm-up call of each, median of 5.
"""
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import reference  # noqa: E402


def wall_seconds(fn, repeats=5):
    """Median wall time of fn() with the device synchronized before and after."""
    times = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    shape = (256, 1, 8192)
    data = reference.generate_input(*shape, seed=9826)  # warm-up
    reference.ref_kernel(data)
    gen_s = wall_seconds(lambda: reference.generate_input(*shape, seed=9826))
    ref_s = wall_seconds(lambda: reference.ref_kernel(data))
    peak_gib = torch.cuda.max_memory_allocated() / 2**30
    result = {"device": torch.cuda.get_device_name(), "shape": shape, "generate_input_s": gen_s,
              "ref_kernel_s": ref_s, "peak_memory_gib": peak_gib,
              "ref_uses_aiter": reference._aiter_available(data[0].device)}
    print(json.dumps(result))
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "reference_speed.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
