"""Poisoned output memory: an output nobody wrote cannot pass for a right answer.

Before an untimed, checked call the worker fills the free memory an output could land in with a NaN
pattern no arithmetic produces; an output still holding it was returned unwritten (torch.empty).
"""
# A bfloat16 NaN with a payload no arithmetic produces: memory holding it was never written by the submission.
POISON_BITS = 0x7FA5
POISON_COPIES = 4  # exact output-size requests poisoned: the output's own, or after a temporary or two
# What a CPU worker's fresh allocations hold (MALLOC_PERTURB_=128 fills them with 0x7F bytes; see run/worker.py).
MALLOC_POISON_BITS = 0x7F7F


def poison_output_memory(q, device: str) -> None:
    """On a GPU, fill free output-sized memory with POISON_BITS, so torch.empty cannot return a stale answer.

    Without this, benchmark mode's checked call could get the block that held the warm-up's reference
    output for the very same seed. Only before untimed calls: emptying the GPU cache slows the next call.
    """
    import torch

    import reference

    if device == "cpu":
        return  # the CPU worker's malloc fills every allocation with MALLOC_POISON_BITS already
    output_bytes = q.shape[0] * q.shape[1] * reference.V_HEAD_DIM * 2  # a (total_q, heads, 512) bfloat16 output
    torch.cuda.empty_cache()  # wholly free segments go back to the driver; what is left is poisoned below
    # The caching allocator carves a request from the start of a free block: poison the start of every
    # free block big enough to hold an output, by allocating each one at its exact size.
    device_index = q.device.index if q.device.index is not None else torch.cuda.current_device()
    free_sizes = sorted((block["size"] for segment in torch.cuda.memory_snapshot()
                         if segment.get("device", device_index) == device_index for block in segment["blocks"]
                         if block["state"] == "inactive" and block["size"] >= output_bytes), reverse=True)
    held = []
    for size in free_sizes:
        block = torch.empty(size, dtype=torch.uint8, device=q.device)
        block[: min(size, 2 * output_bytes) // 2 * 2].view(torch.int16).fill_(POISON_BITS)
        held.append(block)
    del held
    # An exact-size request lands where the output's will: the pass above can miss it when a block's
    # size sends its request to the other pool (small requests up to 1 MiB, large above), as after
    # the chunked quantization's allocations. A few of them, for outputs after a temporary or two.
    exact = [torch.empty(output_bytes // 2, dtype=torch.int16, device=q.device).fill_(POISON_BITS)
             for _ in range(POISON_COPIES)]
    del exact


def poisoned_share(output) -> float:
    """The share of the output that still holds the poison pattern (0 when it cannot be read)."""
    import torch

    try:
        if output.element_size() not in (2, 4) or output.device.type == "meta":
            return 0.0
        bits = output.detach().contiguous().view(torch.int16)
        poisoned = (bits == POISON_BITS) | (bits == MALLOC_POISON_BITS)
        return float(poisoned.float().mean()) if bits.numel() else 0.0
    except (RuntimeError, TypeError, AttributeError):
        return 0.0
