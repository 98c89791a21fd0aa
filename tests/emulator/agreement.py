"""Run one file's custom_kernel on one case, either with its Triton kernels on the gfx950 emulator or through the
Triton interpreter, and save the output (python -m tests.emulator.agreement emulator|interpreter FILE B KV OUT).

Both see torch report ROCm, so the file takes the same path. Two faults of the interpreter (Triton 3.9) are
mended here first: its float -> fp8 conversion drops the carry of a round-up into the exponent (1.987 -> 1.0
instead of 2.0), so it rounds to nearest even through torch, as gfx950's v_cvt_pk_fp8_f32 does; and its bf16
dot multiplies the raw 16-bit patterns, so bf16 operands are widened to fp32 first."""
import importlib.util
import sys

import numpy as np
import torch

import reference


def mend_the_interpreter() -> None:
    import triton.language as tl
    from triton.runtime import interpreter
    convert, dot = interpreter._convert_float, interpreter.InterpreterBuilder.create_dot
    targets = {tl.float8e4nv: torch.float8_e4m3fn, tl.float8e5: torch.float8_e5m2}

    def rounded(values, from_type, to_type, mode):
        if to_type in targets and values.dtype in (np.float32, np.float16):
            narrow = torch.from_numpy(np.ascontiguousarray(values)).to(targets[to_type])
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


def main(how: str, path: str, batch: int, kv: int, out: str) -> None:
    if how == "emulator":
        from harness.emulator import launch_triton
        launch_triton.install()
    else:
        torch.version.hip = "interpreter, as ROCm"
        mend_the_interpreter()
    spec = importlib.util.spec_from_file_location("submission", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    data = reference.generate_input(batchsize=batch, qseqlen=1, kvseqlen=kv, seed=7)
    torch.save(module.custom_kernel(data), out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
