#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# MLA lint sample: FNUZ fp8 decoding in HIP source built for gfx950 (trips MLA_FNUZ_ON_GFX950).
import os

os.environ["PYTORCH_ROCM_ARCH"] = "gfx950"

HIP_SOURCE = r"""
#include <hip/hip_fp8.h>
__device__ float load_fp8(const unsigned char* p) {
    __hip_fp8_e4m3_fnuz v;  // # EXPECT MLA_FNUZ_ON_GFX950
    v.__x = *p;
    return float(v);
}
"""


def custom_kernel(data):
    raise NotImplementedError(HIP_SOURCE)
