"""The task contract, identical in meaning to the official amd-mixed-mla task.py.

Input  (q, kv_data, qo_indptr, kv_indptr, config):
  q          (total_q, 16, 576) bfloat16, the absorbed query
  kv_data    {"bf16": (total_kv, 1, 576) bfloat16,
              "fp8":  (fp8 (total_kv, 1, 576), float32 scale (1,)),
              "mxfp4": (fp4x2 (total_kv, 1, 288), e8m0 scales (cdiv(total_kv, 256) * 256, 24))}
  qo_indptr  (batch + 1,) int32 query segment pointers
  kv_indptr  (batch + 1,) int32 KV segment pointers
  config     dict of MLA parameters (batch_size, num_heads, ..., sm_scale)
Output: (total_q, 16, 512) bfloat16. Keys use all 576 dims, values the first 512.

MXFP4 scales are aiter's dynamic_mxfp4_quant layout: one e8m0 byte per block of 32 values, and only the
corner [:total_kv, :18] is meaningful. Columns 18..23 of the first total_kv rows hold 0x00; rows
total_kv.. are never written (garbage that changes between calls). The row stride is 24: read
scales.stride(0), never assume 18.
"""
from typing import TypedDict, TypeVar

import torch

input_t = TypeVar("input_t", bound=tuple[torch.Tensor, dict, torch.Tensor, torch.Tensor, dict])
output_t = TypeVar("output_t", bound=torch.Tensor)


class TestSpec(TypedDict):
    batchsize: int
    qseqlen: int
    kvseqlen: int
    seed: int
