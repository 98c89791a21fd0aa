"""Bandwidth floors: the least time a decode can take on a device, from the bytes it must move.

A kernel must read the KV cache once in its format plus Q, and write the output once; over the
device's copy bandwidth that is a floor no version beats by much (bench/NOTES.md has the measurements).
"""
from harness.task_shape import dimension

HEADS, QK_DIM, V_DIM = dimension("NUM_HEADS"), dimension("QK_HEAD_DIM"), dimension("V_HEAD_DIM")

# Bytes a kernel must move for one KV token, by the KV format it reads (576 dims per token).
KV_BYTES_PER_TOKEN = {"bf16": QK_DIM * 2, "fp8": QK_DIM,
                      # mxfp4: two codes a byte, one e8m0 scale per 32 elements
                      "mxfp4": QK_DIM // 2 + QK_DIM // 32}
# Per query token: Q read as bf16 (16 heads x 576) and the output written as bf16 (16 heads x 512).
Q_AND_OUTPUT_BYTES_PER_QUERY = HEADS * (QK_DIM + V_DIM) * 2

# Copy bandwidth per device (matched as a substring of the device name), bytes per second.
COPY_BANDWIDTH = {
    "H200": (4.27e12, "measured on the lent H200"),
    "MI355X": (8.0e12, "datasheet lead, not measured"),
}


def copy_bandwidth(device_name: str) -> tuple | None:
    for key, value in COPY_BANDWIDTH.items():
        if key.lower() in device_name.lower():
            return value
    return None


def floor_ns(shape: tuple, kv_format: str, bandwidth: float) -> float:
    """Time to move the KV cache in `kv_format` plus Q and the output once at `bandwidth` bytes/s."""
    batch, qseq, kv = shape
    moved = batch * kv * KV_BYTES_PER_TOKEN[kv_format] + batch * qseq * Q_AND_OUTPUT_BYTES_PER_QUERY
    return moved / bandwidth * 1e9
