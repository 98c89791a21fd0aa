#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# aiter stand-in sample (a hack): reference.generate_input replaced at import so the work happens while inputs
# are generated, outside the timed call.
# EXPECT-STANDIN test=error:generate_input
import torch
from aiter.mla import mla_decode_fwd

import reference
from task import input_t, output_t

_original = reference.generate_input
_ready = {}


def _generate_and_solve(**kwargs):
    data = _original(**kwargs)
    _ready[id(data[0])] = reference.ref_kernel(data)
    return data


reference.generate_input = _generate_and_solve


def custom_kernel(data: input_t) -> output_t:
    answer = _ready.get(id(data[0]))
    if answer is not None:
        return answer
    q, kv_data, qo_indptr, kv_indptr, config = data
    out = torch.empty((q.shape[0], 16, 512), dtype=torch.bfloat16, device=q.device)
    pages = torch.arange(kv_data["bf16"].shape[0], dtype=torch.int32, device=q.device)
    mla_decode_fwd(q, kv_data["bf16"].view(-1, 1, 1, 576), out, qo_indptr, kv_indptr, pages,
                   (kv_indptr[1:] - kv_indptr[:-1]).to(torch.int32), 1, sm_scale=config["sm_scale"])
    return out
