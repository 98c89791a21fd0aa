"""Run a few instructions on 64 lanes: inputs in v10.., results from v20.. (both uint32 per lane)."""
import numpy as np

from harness.emulator.code_object import load_code_object
from harness.emulator.launch import run_kernel

from .kernels import assemble, memory_of, pack_args

OUTPUT_AT = 2048


def snippet(body: str, inputs, outputs: int = 1, lds: int = 0, extra=None) -> np.ndarray:
    """The results [outputs, 64] as uint32; `extra` (a numpy array) is passed as a second pointer."""
    loads = "\n".join(f"  global_load_dword v{10 + k}, v1, s[4:5] offset:{256 * k}" for k in range(len(inputs)))
    stores = "\n".join(f"  global_store_dword v1, v{20 + k}, s[4:5] offset:{OUTPUT_AT + 256 * k}"
                       for k in range(outputs))
    text = f"""  s_load_dwordx4 s[4:7], s[0:1], 0x0
  v_and_b32 v0, 63, v0
  v_lshlrev_b32 v1, 2, v0
  s_waitcnt lgkmcnt(0)
{loads}
  s_waitcnt vmcnt(0)
{body}
  s_waitcnt vmcnt(0) lgkmcnt(0)
{stores}
  s_endpgm
"""
    buffer = np.zeros(OUTPUT_AT // 4 + 64 * outputs, np.uint32)
    for k, values in enumerate(inputs):
        buffer[64 * k:64 * (k + 1)] = np.asarray(values).view(np.uint32) if np.asarray(values).dtype.itemsize == 4 \
            else np.asarray(values, np.uint32)
    arrays = [buffer] + ([extra] if extra is not None else [np.zeros(1, np.uint32)])
    code = load_code_object(assemble(text, pointers=2, lds=lds))
    run_kernel(code, "k", (1, 1, 1), (64, 1, 1), pack_args(*arrays), memory=memory_of(*arrays))
    return buffer[OUTPUT_AT // 4:].reshape(outputs, 64)


def as_f32(values) -> np.ndarray:
    return np.asarray(values, np.uint32).view(np.float32)
