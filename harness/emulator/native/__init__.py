"""The emulator's fast path: each code object's instructions translated to C (clang-22), run
on the same wave state as the numpy executors, which stay the reference semantics."""
