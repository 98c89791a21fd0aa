"""The stage-1 kernels' argument block, grid and block, as the wheel's csrc/py_itfs_cu/asm_mla.cu builds them.

KernelArgs is packed: every pointer is followed by 8 pad bytes and
every 32-bit scalar by 12 (aiter_hip_common.h's p2 / p3), so field k
sits at byte 16 * k. Facts only, no code taken from the sources.
"""
import struct

FIELDS = ("R", "LSE", "Q", "KV", "LTP", "LTD", "LTL", "scalar", "s_MQA", "s_kv_split", "s_Q_Bs",
          "s_Bs", "s_log2_plen", "QTP", "STP", "RP", "QSCALE", "KVSCALE", "out_16_nosplit")
POINTERS = {"R", "LSE", "Q", "KV", "LTP", "LTD", "LTL", "QTP", "STP", "RP", "QSCALE", "KVSCALE"}
BLOCK = (256, 1, 1)  # 4 waves of 64: asm_mla.cu's bdx
PS_META_ENTRIES = 10  # the host code's uint64 block [work_indptr, work_info_set, 0 ...]


def pack(values: dict) -> bytes:
    """The 304-byte block; a field not given is 0 (a null pointer)."""
    out = bytearray(16 * len(FIELDS))
    for k, name in enumerate(FIELDS):
        value = values.get(name, 0)
        if name in POINTERS:
            struct.pack_into("<Q", out, 16 * k, value)
        elif name == "scalar":
            struct.pack_into("<f", out, 16 * k, value)
        else:
            struct.pack_into("<I", out, 16 * k, value)
    return bytes(out)


def grid(sub_q: int, gqa_ratio: int, max_seqlen_q: int, batch: int, splits: int,
         work_groups: int | None) -> tuple[int, int, int]:
    """Non-persistent: (q tiles, batch, splits); persistent: one workgroup per work_indptr slot."""
    if work_groups is not None:
        return (work_groups, 1, 1)
    return (-(-max_seqlen_q * gqa_ratio // sub_q), batch, splits)


def values(Q, KV, qo_indptr, kv_indptr, kv_page_indices, kv_last_page_lens, steering: int,
           max_seqlen_q: int, softmax_scale: float, splitData, splitLse, output, q_scale, kv_scale) -> dict:
    """The fields asm_mla.cu sets; `steering` is STP (splits indptr, or the persistent metadata)."""
    splits = splitData.shape[1]
    found = {"R": splitData.data_ptr(), "LSE": splitLse.data_ptr(), "Q": Q.data_ptr(),
             "KV": KV.data_ptr(), "LTP": kv_indptr.data_ptr(), "LTD": kv_page_indices.data_ptr(),
             "LTL": kv_last_page_lens.data_ptr(), "scalar": float(softmax_scale),
             "s_MQA": Q.shape[1] // KV.shape[2] * max_seqlen_q, "s_kv_split": splits,
             "s_Q_Bs": Q.stride(0) * Q.element_size() * max_seqlen_q,
             "s_Bs": KV.stride(0) * KV.element_size(),
             "s_log2_plen": KV.shape[1].bit_length() - 1, "QTP": qo_indptr.data_ptr(),
             "STP": steering, "RP": output.data_ptr(), "out_16_nosplit": splits}
    if Q.element_size() == 1 and q_scale is not None:  # fp8 Q: both scales
        found["QSCALE"] = q_scale.data_ptr()
    if KV.element_size() == 1 and kv_scale is not None:  # fp8 KV (a8w8, a16w8)
        found["KVSCALE"] = kv_scale.data_ptr()
    return found
