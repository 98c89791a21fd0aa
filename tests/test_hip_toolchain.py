"""HIP toolchain set-up: says what it cannot install instead of failing, and finds its cache where told."""
import shutil

from harness.compile.hip import toolchain as hip_toolchain


def test_no_apt_or_no_root_is_a_line_saying_what_is_missing(monkeypatch):
    monkeypatch.setattr(hip_toolchain, "llvm_tool", lambda name: None)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert "no apt-get" in hip_toolchain.install_llvm(say=lambda line: None)
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/" + name)
    monkeypatch.setattr(hip_toolchain.os, "geteuid", lambda: 1000)
    message = hip_toolchain.install_llvm(say=lambda line: None)
    assert "not root" in message and "apt-get install -y clang-22 lld-22 llvm-22" in message


def test_setup_command_reports_missing_pieces_and_still_exits_0(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("HARNESS_HIP_CACHE", str(tmp_path))
    monkeypatch.setattr(hip_toolchain, "setup", lambda say: ["clang-22 lld-22 llvm-22: not root"])
    assert hip_toolchain.main(["setup"]) == 0
    assert "MISSING: clang-22" in capsys.readouterr().out
    assert hip_toolchain.main(["setup", "--strict"]) == 1


def test_cache_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("HARNESS_HIP_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert hip_toolchain.cache_root() == tmp_path / "amd-mixed-mla" / "hip"
    monkeypatch.setenv("HARNESS_HIP_CACHE", str(tmp_path / "elsewhere"))
    assert hip_toolchain.cache_root() == tmp_path / "elsewhere"


def test_missing_cache_is_one_line_naming_make_setup(monkeypatch, tmp_path):
    monkeypatch.setenv("HARNESS_HIP_CACHE", str(tmp_path))
    monkeypatch.setattr(hip_toolchain, "llvm_tool", lambda name: f"/usr/bin/{name}-22")
    try:
        hip_toolchain.find()
    except hip_toolchain.ToolchainMissing as error:
        assert "make setup" in str(error) and "\n" not in str(error)
    else:
        raise AssertionError("an empty cache folder must not count as a toolchain")
