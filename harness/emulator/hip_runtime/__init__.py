"""HIP without ROCm, child side: our HIP runtime (runtime.cpp), the offload bundle, and load_inline's CPU build."""
