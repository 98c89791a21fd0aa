"""Our HIP runtime (runtime.cpp) as a shared library: built, cached, loaded.

The library is built once per (source, torch) into the first writable
build folder, named by its content; it is loaded with RTLD_GLOBAL before
any extension, so every extension's HIP calls resolve to this one copy.
"""
import ctypes
import functools
import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

from harness.compile.hip import toolchain as hip_toolchain

SOURCE = Path(__file__).with_name("runtime.cpp")
STREAMS = Path(__file__).with_name("torch_streams.cpp")  # c10_hip's getters
# Blocks are copied out as (address, size, kind) u64 triples.
BLOCK_KINDS = {0: "a tensor's storage", 1: "a hipMalloc block"}
LAUNCH_HOOK = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p,
    ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint),
    ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t)


class BuildError(RuntimeError):
    """A compile or link of ours failed (one line, the first error)."""


def build_folders() -> list[Path]:
    """Where builds are looked for, the parent's prebuilt cache first.

    The child may not write the toolchain cache (the sandbox mounts it
    read-only, the file checks flag a change): its own builds go to its
    scratch extensions folder."""
    folders = [hip_toolchain.cache_root() / "emulated"]
    scratch = os.environ.get("TORCH_EXTENSIONS_DIR")
    if scratch:
        folders.append(Path(scratch) / "emulated")
    return folders


def writable_folder() -> Path:
    for folder in reversed(build_folders()):
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(folder, os.W_OK):
            return folder
    raise BuildError("no writable folder for emulator builds")


def torch_paths() -> tuple[Path, Path]:
    """(torch's include folder, its lib folder), without importing torch."""
    torch = hip_toolchain.torch_dir()
    if torch is None:
        raise BuildError("torch is not importable: its headers are needed")
    return torch / "include", torch / "lib"


def hip_includes(chain) -> list[str]:
    """The HIP headers the device compile uses, for our host side too."""
    dirs = [*filter(None, [chain.newer_hip]), chain.rocm / "include"]
    return [flag for d in dirs for flag in ("-isystem", str(d))]


def run(command: list[str], what: str) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True,
                              timeout=900)
    except subprocess.TimeoutExpired:
        raise BuildError(f"{what}: clang took more than 900 s") from None
    if done.returncode != 0:
        errors = [line for line in done.stderr.splitlines()
                  if "error" in line] or done.stderr.splitlines()[-1:]
        raise BuildError(f"{what}: {(errors or ['failed'])[0][:400]}")


def soname(chain) -> str:
    digest = hashlib.sha256(SOURCE.read_bytes() + STREAMS.read_bytes()
                            + chain.torch_version.encode()
                            + str(chain.clang).encode()).hexdigest()[:16]
    return f"libharness_hiprt_{digest}.so"


def built_path(chain, into: Path | None = None) -> Path:
    """The library, built now (into `into`, else the first writable
    folder) if no build folder holds it."""
    name = soname(chain)
    for folder in [*filter(None, [into]), *build_folders()]:
        if (folder / "lib" / name).is_file():
            return folder / "lib" / name
    target = (into or writable_folder()) / "lib" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    include, lib = torch_paths()
    # not named by pid: sandboxed children share a scratch folder, each pid 2 in its namespace
    handle, named = tempfile.mkstemp(dir=target.parent, prefix=f".{name}.", suffix=".tmp")
    os.close(handle)
    partial = Path(named)
    try:
        run([str(chain.clang), "-x", "c++", "-std=c++17", "-O2", "-fPIC",
             "-shared", "-D__HIP_PLATFORM_AMD__=1", "-DUSE_ROCM=1",
             "-isystem", str(chain.overlay), *hip_includes(chain),
             "-isystem", str(include), str(SOURCE), str(STREAMS),
             f"-L{lib}", "-lc10",
             f"-Wl,-rpath,{lib}", f"-Wl,-soname,{name}", "-o", str(partial)],
            "building the emulator's HIP runtime")
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


@functools.lru_cache(maxsize=1)
def load() -> ctypes.CDLL:
    """The runtime, loaded once for the whole process."""
    path = built_path(hip_toolchain.find())
    library = ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
    library.harness_set_launch_hook.argtypes = [LAUNCH_HOOK]
    library.harness_set_fault.argtypes = [ctypes.c_char_p]
    library.harness_live_blocks.restype = ctypes.c_size_t
    library.harness_live_blocks.argtypes = [
        ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_size_t]
    return library


def live_blocks(library: ctypes.CDLL) -> list[tuple[int, int, str]]:
    """Every live tensor storage and hipMalloc block: (address, size, kind)."""
    room = 256
    while True:
        out = (ctypes.c_ulonglong * (3 * room))()
        count = library.harness_live_blocks(out, room)
        if count <= room:
            return [(out[3 * i], out[3 * i + 1], BLOCK_KINDS[out[3 * i + 2]])
                    for i in range(count)]
        room = count + 64
