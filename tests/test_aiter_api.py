"""The aiter API check: our files pass, the bad samples fail on the right line, and the data file's extractor."""
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.checks import aiter_api

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "tests" / "samples" / "aiter"


def expected(path: Path) -> set[tuple[int, str, bool]]:
    """(line, rule, blocking) from `# EXPECT RULE [warning]` markers."""
    found = set()
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        for rule, warning in re.findall(r"# EXPECT (AITER_\w+)( warning)?", line):
            found.add((number, rule, not warning))
    return found


@pytest.mark.parametrize("path", ["submissions/014_aiter_persistent.py", "submissions/013_hip_mxfp4_fused.py",
                                  "reference.py", "tests/samples/aiter_decode.py"])
def test_our_aiter_calls_match_aiter_at_the_pinned_commit(path):
    assert aiter_api.check_file(REPO / path) == []


@pytest.mark.parametrize("path", sorted(SAMPLES.glob("*.py")), ids=lambda p: p.name)
def test_sample_findings(path):
    found = {(f.line, f.rule, f.blocking) for f in aiter_api.check_file(path)}
    assert found == expected(path)


def test_at_least_the_asked_for_bad_samples_fail():
    failing = {p.name for p in SAMPLES.glob("*.py") if any(f.blocking for f in aiter_api.check_file(p))}
    assert {"bad_name.py", "bad_kwargs.py", "too_many_positional.py"} <= failing


def test_findings_name_the_commit_and_the_reason():
    finding = aiter_api.check_file(SAMPLES / "bad_kwargs.py")[0]
    assert "f3be04a12a" in finding.message and "softmax_scale" in finding.message
    assert finding.format("x.py").startswith("x.py:16: AITER_BAD_CALL error:")


def test_data_file_names_the_commit_and_the_functions_submissions_use():
    data = aiter_api.load_api()
    assert data["source"]["repository"] == "ROCm/aiter" and data["source"]["commit"].startswith("f3be04a12a")
    top = data["namespaces"]["aiter"]
    for name in ("get_mla_metadata_info_v1", "get_mla_metadata_v1", "per_tensor_quant_hip"):
        assert top[name]["kind"] == "function"
    assert top["dtypes"] == {"kind": "module", "target": "aiter.utility.dtypes"}
    assert {"fp8", "bf16", "fp32"} <= set(data["namespaces"]["aiter.utility.dtypes"])
    params = data["namespaces"]["aiter.mla"]["mla_decode_fwd"]["params"]
    assert params[:3] == ["q", "kv_buffer", "o"] and "intra_batch_mode=" in params


def test_signature_notation_round_trips():
    sig = aiter_api.signature(["a", "/", "b", "c=", "*args", "d", "e=", "**kw"])
    assert str(sig) == "(a, /, b, c=None, *args, d, e=None, **kw)"
    assert str(aiter_api.signature(["x", "*", "y="])) == "(x, *, y=None)"


def test_extractor_follows_star_imports_aliases_and_defaults(tmp_path):
    files = {
        "aiter/__init__.py": "from .ops.quant import *\nfrom .utility import dtypes as dtypes\nfrom . import mla\n"
                             "try:\n    from .ops.extra import late\nexcept ImportError:\n    LATE = False\n",
        "aiter/ops/__init__.py": "",
        "aiter/ops/quant.py": "__all__ = ['quant']\ndef quant(x, scale=None, *, dtype=1, **kw):\n    pass\n"
                              "def hidden(y):\n    pass\n",
        "aiter/ops/extra.py": "def late(a, b, /, c):\n    pass\n",
        "aiter/utility/__init__.py": "",
        "aiter/utility/dtypes.py": "fp8 = 1\nbf16 = 2\n",
        "aiter/mla.py": "class Plan:\n    def __init__(self, size, splits=4):\n        pass\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    for command in (["init", "-q"], ["add", "."], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(tmp_path), *command], check=True)
    out = tmp_path / "api.json"
    subprocess.run([sys.executable, str(REPO / "bench" / "tools" / "extract_aiter_api.py"), "--repo", str(tmp_path),
                    "--commit", "HEAD", "--out", str(out)], check=True, capture_output=True)
    data = json.loads(out.read_text())
    top = data["namespaces"]["aiter"]
    assert top["quant"]["params"] == ["x", "scale=", "*", "dtype=", "**kw"] and "hidden" not in top
    assert top["late"]["params"] == ["a", "b", "/", "c"] and top["LATE"]["kind"] == "variable"
    assert top["mla"] == {"kind": "module", "target": "aiter.mla"}
    assert data["namespaces"]["aiter.mla"]["Plan"]["params"] == ["size", "splits="]
    assert "aiter.ops.quant" in data["modules"]
