"""The fast path's builds (native/program.py's built()) when several builders race in one folder:
sandboxed children share their scratch and each is pid 2 in its own namespace, so a file named
by pid was one file for all of them (the second estimate worker ran on numpy, 25x slower)."""
import concurrent.futures
import ctypes

from harness.emulator.native import program

from .native_bench import skip_without_clang

TINY = "int answer(void) { return 42; }\n"


def test_builders_racing_in_one_folder_each_get_the_library(tmp_path, monkeypatch):
    skip_without_clang()
    monkeypatch.setattr(program, "cache_folders", lambda: [])
    monkeypatch.setattr(program, "writable_folder", lambda: tmp_path)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:  # one pid, as sandboxed children have
        built = list(pool.map(lambda _: program.built("tiny", TINY, "-O0"), range(4)))
    assert set(built) == {tmp_path / "tiny.so"}
    assert ctypes.CDLL(str(built[0])).answer() == 42
    assert [p.name for p in tmp_path.iterdir()] == ["tiny.so"]  # no partial left behind


def test_a_kernel_without_its_fast_path_says_so_to_the_terminal(monkeypatch):
    from types import SimpleNamespace

    from harness.emulator import progress

    def no_compiler(*args):
        raise OSError("clang-22 is not installed")
    monkeypatch.setattr(program, "NativeProgram", no_compiler)
    monkeypatch.setenv(program.ENV, "1")
    relayed = []
    progress.relay_to(relayed.append)  # the child's pipe to the parent's terminal
    try:
        assert program.native_program(SimpleNamespace(program=None, blob=b""), 0) is None
    finally:
        progress.relay_to(None)
    assert len(relayed) == 1 and "no C fast path (clang-22 is not installed" in relayed[0]
    assert "numpy executors run this kernel" in relayed[0]
