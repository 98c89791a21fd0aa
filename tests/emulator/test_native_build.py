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
