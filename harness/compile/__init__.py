"""Compiling without the hardware: Triton ahead of time, HIP load_inline sources with clang-22."""
