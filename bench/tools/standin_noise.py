"""The reference's own computation through the aiter stand-in against the reference, on every official shape.

Prints per shape: the official check, the norm-wise relative error, the reference's noise floor (a8w8 against
exact attention), their ratio (the brief asks < 1.5), and the stand-in call's wall time (correctness only: it
says nothing about MI355X). Usage: python bench/tools/standin_noise.py [cpu|cuda] [small]
"""
import sys
import time

import torch

sys.path.insert(0, ".")
from harness.aiter_standin import journal, loader  # noqa: E402
from harness.run import accuracy, cases  # noqa: E402

import reference  # noqa: E402


def main() -> int:
    device = sys.argv[1] if len(sys.argv) > 1 else ("cuda" if torch.cuda.is_available() else "cpu")
    loader.install()
    specs = cases.SMALL if "small" in sys.argv else cases.official("test") + cases.official("benchmark")
    worst = 0.0
    print(f"{'case':<22} {'check':<5} {'rel err':>9} {'noise':>8} {'x noise':>8} {'standin ms':>10}  kernel")
    for spec in specs:
        data = reference.generate_input(**spec, device=device)
        q, kv_data, qo_indptr, kv_indptr, config = data
        kv8, kv_scale = kv_data["fp8"]
        q8, q_scale = reference.quantize_fp8(q, dtype=kv8.dtype)
        with journal.recording() as calls:
            if device != "cpu":
                torch.cuda.synchronize()
            started = time.perf_counter()
            out = reference._aiter_a8w8_decode(q8, q_scale, kv8, kv_scale, qo_indptr, kv_indptr, config)
            if device != "cpu":
                torch.cuda.synchronize()
            elapsed = (time.perf_counter() - started) * 1e3
        expected = reference.ref_kernel(data)
        ok, _ = reference.check_implementation(data, out)
        rel = accuracy.relative_error(out, expected)
        noise = accuracy.noise_floor(data, expected)
        worst = max(worst, rel / noise)
        name = f"{spec['batchsize']}x{spec['kvseqlen']} s{spec['seed']}"
        print(f"{name:<22} {'pass' if ok else 'FAIL':<5} {rel:>9.2e} {noise:>8.4f} {rel / noise:>8.4f} {elapsed:>10.1f}"
              f"  {calls[-1]['kernel']}")
    print(f"worst: {worst:.4f} x the reference's own noise (limit 1.5)")
    return 0 if worst < 1.5 else 1


if __name__ == "__main__":
    sys.exit(main())
