"""Child side: what a submission that states its launch options by platform would choose on the MI355X.

201's convention: `platform_defaults(device)` gives its launch options (read with torch.version.hip set, so
its ROCm branch answers) and `choose_splits(batch, kv, cus, block_n, programs_per_cu, min_tokens, fused,
interpreted)` its split count. Both run here, in the submission's worker, since calling them runs its code;
harness/estimate/mi355x_path.py turns the answer into the launches it prices.
"""
import json

import torch

PERSONA = "7.1 (harness estimate: MI355X persona)"
SPLIT_KERNEL, MERGE_KERNEL = "mla_fp8_kernel", "mla_merge_kernel"  # 201's fp8 path


def _rocm_options(module) -> dict:
    """platform_defaults of a ROCm device: torch.version.hip set for the call, a "cuda" device handed in."""
    saved = torch.version.hip
    torch.version.hip = PERSONA
    try:
        return dict(module.platform_defaults(torch.device("cuda", 0)))
    finally:
        torch.version.hip = saved


def rocm_plan(module, shapes: list, cus: int) -> dict:
    """{"options", "has_merge", "splits": {"B,KV": n}, "why_not"}: the ROCm options and split counts of each
    (batch, kv) shape on `cus` CUs, or why they cannot be worked out."""
    found = {"options": None, "has_merge": hasattr(module, MERGE_KERNEL), "splits": {}, "why_not": ""}
    if not (callable(getattr(module, "platform_defaults", None)) and callable(getattr(module, "choose_splits", None))
            and hasattr(module, SPLIT_KERNEL)):
        found["why_not"] = (f"it states no platform_defaults(device) / choose_splits(...) with a {SPLIT_KERNEL} "
                            "to work the MI355X launches out from")
        return found
    try:
        options = _rocm_options(module)
        for batch, kv in shapes:
            found["splits"][f"{batch},{kv}"] = int(options["splits"] or module.choose_splits(
                batch, max(1, kv), cus, options["block_n"], options["programs_per_cu"], options["min_tokens"],
                bool(options["fused"]), False))
    except Exception as error:  # the user's file: report, never crash
        found["why_not"] = f"its platform_defaults failed under the ROCm persona: {type(error).__name__}: {error}"
        return found
    found["options"] = json.loads(json.dumps(options, default=str))
    return found
