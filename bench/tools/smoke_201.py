"""Checks one 201 variant on two official shapes in its own process: prints one JSON line.

    python bench/tools/smoke_201.py NAME [key:value,...]

An illegal memory access kills the CUDA context of the process that made it, so a variant sweep
(`git show 66ad16a:bench/device_201.sh`) ran every variant through this first (in parallel, each alone)
and timed only those that passed. (4, 1024) takes the split + merge path, (256, 1024) the one-split path,
(3, 257) partial tiles. It also warms Triton's on-disk cache.
"""
import importlib.util
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import reference  # noqa: E402

name = sys.argv[1]
tuning = {k: int(v) for k, _, v in (p.partition(":") for p in filter(None, (sys.argv[2:] or [""])[0].split(",")))}
path = next((REPO / "submissions").glob("201_*.py"))
spec = importlib.util.spec_from_file_location("smoke201", path)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
result = {"name": name, "tuning": tuning, "ok": True, "cases": []}
try:
    for batch, kv_len, seed in [(4, 1024, 4217), (256, 1024, 9823), (3, 257, 12)]:  # 257: partial tiles
        data = reference.generate_input(batch, 1, kv_len, seed, device="cuda")
        for _ in range(2):  # twice: the fused merge's ticket counter keeps growing across calls
            out = module.mla_decode(data, **tuning)
        ok, message = reference.check_implementation(data, out)
        result["cases"].append([batch, kv_len, bool(ok), message.splitlines()[0][:120] if message else ""])
        result["ok"] &= bool(ok)
except Exception as error:  # the result, not a crash of the caller
    result.update(ok=False, error=f"{type(error).__name__}: {str(error).splitlines()[0][:200]}")


def compiled_resources(kernel) -> list:
    """Registers, spills and shared memory of each compiled version of a kernel (what sets programs per SM)."""
    found = []
    for caches in getattr(kernel, "device_caches", {}).values():
        for compiled in (caches[0] if isinstance(caches, tuple) else caches).values():
            found.append({"regs": getattr(compiled, "n_regs", None), "spills": getattr(compiled, "n_spills", None),
                          "shared": getattr(getattr(compiled, "metadata", None), "shared", None)})
    return found


try:
    result["gluon_kernel"] = compiled_resources(module.mla_fp8_gluon_kernel)
except Exception as error:  # resources are a by-product: never fail the smoke on them
    result["gluon_kernel"] = f"{type(error).__name__}: {error}"
print(json.dumps(result))
