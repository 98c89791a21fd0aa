"""The documents: every file and path they cite is in the repository."""
import subprocess
from pathlib import Path
import helpers


def _docs() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.md"], cwd=helpers.REPO,
                            capture_output=True, text=True, check=True).stdout.split()
    return [helpers.REPO / name for name in listed]


def test_every_document_and_python_path_the_docs_cite_is_in_the_repository():
    import re

    tracked = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=helpers.REPO,
                             capture_output=True, text=True, check=True).stdout.split()
    names = {Path(name).name for name in tracked}
    missing = []
    for doc in _docs():
        text = doc.read_text(encoding="utf-8")
        for cited in set(re.findall(r"\b([\w-]+\.md)\b", text)):
            if cited not in names:
                missing.append(f"{doc.relative_to(helpers.REPO)} cites {cited}")
        for cited in set(re.findall(r"`((?:[\w.-]+/)+[\w.-]+\.py)`", text)):
            if "NNN" not in cited and not (helpers.REPO / cited).is_file() and not (helpers.REPO / "harness" / cited).is_file():
                missing.append(f"{doc.relative_to(helpers.REPO)} cites {cited}")
    assert not missing, missing


def harness_folders() -> list[str]:
    """Every sub-package of harness/, as its path under harness/ ('run', 'compile/hip', ...)."""
    package = helpers.REPO / "harness"
    return sorted(path.parent.relative_to(package).as_posix()
                  for path in package.rglob("__init__.py") if path.parent != package)


def test_every_harness_folder_is_named_in_the_readme_and_the_architecture():
    import re

    assert {"run", "emulator", "estimate", "compile/hip"} <= set(harness_folders())
    unnamed = []
    for page in ("README.md", "docs/ARCHITECTURE.md"):
        text = (helpers.REPO / page).read_text(encoding="utf-8")
        # 'emulator/' as a word of its own or after a '/', never inside 'bench/notes/'-like names
        unnamed += [f"{page} never names {folder}/" for folder in harness_folders()
                    if not re.search(rf"(?<![\w.-]){re.escape(folder)}/", text)]
    assert not unnamed, unnamed


def test_the_readme_and_the_architecture_point_to_the_emulator_page():
    for page in ("README.md", "docs/ARCHITECTURE.md"):
        text = (helpers.REPO / page).read_text(encoding="utf-8")
        assert "harness/emulator/README.md" in text, page
