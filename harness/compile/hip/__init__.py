"""HIP without ROCm: the clang-22 toolchain, the sources read from a file, the build and its report."""
