"""Child side: two faults of the Triton interpreter (Triton 3.9.0) mended before a submission runs through it, so
its CPU verdict is for the computation a GPU does (bench/notes/2026-12-02-triton-on-gfx950.md):
- float -> fp8 drops the carry of a round-up into the exponent (e4m3: 1.987 -> 1.0, not 2.0): rounded to nearest
  even through torch here, as gfx950's v_cvt_pk_fp8_f32 and sm90's cvt.rn do;
- tl.dot on bf16 multiplies the raw 16-bit patterns: bf16 operands are widened to fp32 first."""
import numpy as np
import torch

MENDED = "the interpreter's fp8 rounding and bf16 dots mended (harness/run/interpreter.py)"


def mend() -> None:
    import triton.language as tl
    from triton.runtime import interpreter
    if getattr(interpreter, "_harness_mended", False):
        return
    convert, dot = interpreter._convert_float, interpreter.InterpreterBuilder.create_dot
    narrow_types = {tl.float8e4nv: torch.float8_e4m3fn, tl.float8e5: torch.float8_e5m2}

    def rounded(values, from_type, to_type, mode):
        if to_type in narrow_types and values.dtype in (np.float32, np.float16):
            narrow = torch.from_numpy(np.ascontiguousarray(values)).to(narrow_types[to_type])
            return narrow.view(torch.uint8).numpy().reshape(values.shape)
        return convert(values, from_type, to_type, mode)

    def widened(handle):
        if handle.dtype.scalar == tl.bfloat16:
            return interpreter.TensorHandle((handle.data.astype(np.uint32) << 16).view(np.float32), tl.float32)
        return handle

    def bf16_dot(builder, a, b, d, precision, imprecise):
        return dot(builder, widened(a), widened(b), d, precision, imprecise)

    interpreter._convert_float = rounded
    interpreter.InterpreterBuilder.create_dot = bf16_dot
    interpreter._harness_mended = True
