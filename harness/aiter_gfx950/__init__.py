"""aiter's own gfx950 MLA kernels, run on the gfx950 emulator where there is no ROCm (issue 38).

The pinned amd-aiter wheel is kept as data (package.py); its stage-1
code objects run with the argument block, grid and block its
asm_mla.cu builds (kernargs.py, stage1.py); the LDS race checker
names both instructions of a racing pair (races.py); routing.py says
whether a stand-in call runs emulated or in torch, and what ran.
Everything here is correctness only, never an MI355X time.
"""
