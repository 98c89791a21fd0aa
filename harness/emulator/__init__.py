"""gfx950 (MI355X, CDNA4) on the CPU: runs a code object's kernel over a grid, correctness only.

Instructions are decoded by llvm-objdump-22 (`-d --mcpu=gfx950`): it is upstream LLVM's own
decoder for exactly this target, installed by `make setup`, so no encoding table of ours can
drift from the assembler that produced the code. Each instruction's text is turned once into
a cached executor (a closure over numpy arrays of 64 lanes). This is an emulator, never the
MI355X: what it runs is "gfx950 emulated (CPU): correctness only"; its times are not timings.
"""
