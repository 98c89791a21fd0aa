"""The sharper verdict: how close an output is, beyond the official pass/fail.

The official check passes an output when every element is within atol + rtol |ref|, or when at most 5%
are not. With rtol = atol = 0.1 and outputs of magnitude ~0.03 (long KV), that passes an all-zeros output.
So besides the verdict we measure the norm-wise relative error ||out - ref|| / ||ref|| and compare it with
the reference's own noise: how far the a8w8 reference (fp8 Q and KV) is from exact attention on the bf16
KV. A kernel whose error is many times that noise is wrong even when it passes.

Pure functions of tensors; torch only (reference.py is imported only to compute a reference not given).
"""
import dataclasses

import torch

NOISE_MULTIPLE_LIMIT = 10.0  # an error above this many times the reference's own noise is warned about
FIVE_PERCENT_RULE = 0.05  # reference.MISMATCH_RATIO_LIMIT (tests/test_accuracy.py checks they agree)


@dataclasses.dataclass(frozen=True)
class Accuracy:
    relative_error: float  # ||out - ref|| / ||ref||, in float64
    outside_share: float  # share of elements with |out - ref| > atol + rtol |ref| (NaN counts as outside)
    noise_floor: float | None  # the reference's own relative error against exact attention, when known
    warnings: tuple[str, ...]

    @property
    def noise_multiple(self) -> float | None:
        """relative_error / noise_floor, when the floor is known and positive."""
        if not self.noise_floor:
            return None
        return self.relative_error / self.noise_floor


def relative_error(output: torch.Tensor, expected: torch.Tensor) -> float:
    """||output - expected|| / ||expected|| in float64 (inf when expected is all zeros and output is not)."""
    out, ref = output.to(torch.float64), expected.to(torch.float64)
    reference_norm = float(torch.linalg.vector_norm(ref))
    error_norm = float(torch.linalg.vector_norm(out - ref))
    if reference_norm == 0.0:
        return 0.0 if error_norm == 0.0 else float("inf")
    return error_norm / reference_norm


def outside_share(output: torch.Tensor, expected: torch.Tensor, rtol: float, atol: float,
                  dtype: torch.dtype = torch.float32) -> float:
    """Share of elements with |out - ref| > atol + rtol |ref|, computed in dtype (NaN is never close)."""
    close = torch.isclose(output.to(dtype), expected.to(dtype), rtol=rtol, atol=atol)
    return float((~close).sum()) / max(1, output.numel())


def exact_attention(data, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Attention of the bf16 Q over the bf16 KV (no quantization) in `dtype`, one sequence at a time."""
    q, kv_data, qo_indptr, kv_indptr, config = data
    kv = kv_data["bf16"].reshape(kv_data["bf16"].shape[0], -1)
    v_dim = config["v_head_dim"]
    out = torch.empty((q.shape[0], q.shape[1], v_dim), dtype=dtype, device=q.device)
    q_starts, kv_starts = qo_indptr.tolist(), kv_indptr.tolist()
    for b in range(len(q_starts) - 1):
        q0, q1, k0, k1 = q_starts[b], q_starts[b + 1], kv_starts[b], kv_starts[b + 1]
        if q1 == q0:
            continue
        keys = kv[k0:k1].to(dtype)
        queries = q[q0:q1].to(dtype).reshape(-1, q.shape[-1])
        probs = torch.softmax(queries @ keys.T * config["sm_scale"], dim=-1)
        out[q0:q1] = (probs @ keys[:, :v_dim]).reshape(q1 - q0, q.shape[1], v_dim)
    return out


def noise_floor(data, expected: torch.Tensor | None = None) -> float:
    """The reference's own quantization noise for this case: relative error of the a8w8 reference
    (expected, or reference.ref_kernel(data)) against exact attention on the bf16 KV. Compute once per case."""
    if expected is None:
        import reference  # the repository root is on sys.path wherever a case is run

        expected = reference.ref_kernel(data)
    return relative_error(expected, exact_attention(data))


def assess(output: torch.Tensor, expected: torch.Tensor, *, rtol: float, atol: float,
           noise: float | None = None, five_percent_rule: float = FIVE_PERCENT_RULE) -> Accuracy:
    """Error measures of output against the reference, with a warning for each way a pass can mislead."""
    rel = relative_error(output, expected)
    share = outside_share(output, expected, rtol, atol)
    # The official 5% rule counts in the reference's dtype (bf16), so its ratio differs a little from share.
    official_ratio = outside_share(output, expected, rtol, atol, dtype=expected.dtype)
    warnings = []
    if share > 0.0 and official_ratio <= five_percent_rule:
        warnings.append(f"passes only through the 5% rule: {share:.2%} of elements are outside "
                        f"atol {atol:g} + rtol {rtol:g} |ref|")
    if noise is not None and noise > 0 and rel > NOISE_MULTIPLE_LIMIT * noise:
        warnings.append(f"error {rel / noise:.0f} x the reference's own quantization noise "
                        f"(norm-wise relative error {rel:.3g}; the a8w8 reference is {noise:.3g} from exact attention)")
    return Accuracy(relative_error=rel, outside_share=share, noise_floor=noise, warnings=tuple(warnings))
