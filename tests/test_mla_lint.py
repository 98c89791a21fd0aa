"""The MLA shortcut rules (harness/checks/mla_hacks.py): each sample trips exactly the rules its EXPECT markers
name, on those lines; the correct samples and the repository's own files trip none."""
import re
from pathlib import Path

import pytest

from harness.checks import lint

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "tests" / "samples" / "mla_lint"
RULES = ("MLA_PAGE_SIZE", "MLA_FIXED_Q_SCALE", "MLA_DATA_PTR_CACHE", "MLA_HARDCODED_SM_SCALE", "MLA_FNUZ_ON_GFX950")


def expected(path: Path) -> set:
    found = set()
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        for rule, warning in re.findall(r"# EXPECT (MLA_\w+)( warning)?", line):
            found.add((number, rule, not warning))
    return found


@pytest.mark.parametrize("path", sorted(SAMPLES.glob("*.py")), ids=lambda p: p.name)
def test_sample_findings(path):
    found = {(f.line, f.rule, f.blocking) for f in lint.lint_file(path) if f.rule.startswith("MLA_")}
    assert found == expected(path)


def test_every_rule_has_a_tripping_sample_and_clean_ones_exist():
    tripped = {rule for path in SAMPLES.glob("*.py") for _, rule, _ in expected(path)}
    assert tripped == set(RULES)
    assert sum(1 for path in SAMPLES.glob("*.py") if not expected(path)) >= 5


@pytest.mark.parametrize("path", sorted((REPO / "submissions").glob("*.py")) + [REPO / "reference.py"],
                         ids=lambda p: p.name)
def test_our_files_trip_no_mla_rule(path):
    assert [f for f in lint.lint_file(path) if f.rule.startswith("MLA_")] == []


def test_page_size_rule_reads_both_arms_and_ignores_the_condition():
    source = ("from aiter.mla import mla_decode_fwd\n"
              "def custom_kernel(data):\n"
              "    pg = 1 if data[4]['kv_seq_len'] <= 1024 else 1\n"
              "    mla_decode_fwd(1, 2, 3, 4, 5, 6, 7, 1, pg)\n")
    assert not [f for f in lint.lint_source(source) if f.rule == "MLA_PAGE_SIZE"]
    flagged = [f for f in lint.lint_source(source.replace("else 1", "else 2")) if f.rule == "MLA_PAGE_SIZE"]
    assert [(f.line, f.blocking) for f in flagged] == [(4, True)] and "page_size 2" in flagged[0].message
