#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# Test sample: submission 201 with its option mxfp4=1 (the MXFP4-KV kernel, scaled MFMA scores), so
# `harness run FILE --device gfx950` runs that kernel's gfx950 code. Loads 201 from submissions/.
import importlib.util
from pathlib import Path

import triton  # noqa: F401  (201 launches Triton kernels: the harness reads a file's needs from its imports)

from task import input_t, output_t

_PATH = Path(__file__).resolve().parents[3] / "submissions" / "201_triton_fp8kv.py"
_SPEC = importlib.util.spec_from_file_location("mla201", _PATH)
mla201 = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(mla201)


def custom_kernel(data: input_t) -> output_t:
    return mla201.mla_decode(data, mxfp4=1)
