"""Static checks a submission must pass before the official server (and its KernelGuard) sees it.

Six families of rules, each finding carrying a rule name, a line and whether it blocks:
- the server's own rejections (docs/REMOTE.md, "The local gate"): the forbidden word anywhere, files over
  1,000,000 bytes, empty or non-UTF-8 files, `#!POPCORN` directives outside the first comment block,
  a leaderboard other than amd-mixed-mla;
- KernelGuard's "hard" (auto-filter) rules that can be seen in the source: timer and evaluator
  monkeypatching, outputs replayed from a cache, obfuscated exec, token-pasted CUDA names,
  run-time package installs;
- KernelGuard's flag-only rules (CUDA graphs, torch.compile, plain exec/eval, threads, ...): warnings;
- HIP sources: an MFMA issued through inline asm, which LLVM's hazard recognizer cannot see (harness/checks/hip_hazards.py);
- aiter: names and calls checked against the runner's pinned aiter (harness/checks/aiter_api.py); a call that cannot
  bind fails on the runner, so it blocks unless the import is guarded;
- the MLA board's shortcuts (harness/checks/mla_hacks.py): page size > 1, fixed Q scale, data_ptr caches, a
  constant sm_scale, FNUZ fp8 in a gfx950 file.

The checks are heuristics over Python's ast plus a few text patterns. The replay rules only look at
what `custom_kernel` returns (following module-level helpers it returns from), so a workspace or
metadata cache keyed on shape is fine as long as the cached value is not handed back as the output.
"""
import ast
import re
from pathlib import Path

from harness.checks import aiter_api
from harness.checks import directives
from harness.checks import hip_hazards
from harness.checks import mla_hacks
from harness.checks.directives import GPU, LEADERBOARD
from harness.checks.findings import FORBIDDEN_WORD, MAX_BYTES, Finding
from harness.checks.kernelguard import AstRules


def lint_file(path) -> list[Finding]:
    """Lint one submission file. Raises OSError when it cannot be read."""
    data = Path(path).read_bytes()
    return lint_source(data, str(path))


def lint_source(text: str | bytes, path: str = "<submission>") -> list[Finding]:
    """Every finding for one submission's source (bytes as read from disk, or already-decoded text)."""
    findings: list[Finding] = []
    if isinstance(text, bytes):
        findings += _size_rules(len(text))
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as error:
            line = text[: error.start].count(b"\n") + 1
            findings.append(Finding("NOT_UTF8", line, f"byte {error.start} is not UTF-8; the server rejects the file", True))
            text = text.decode("utf-8", errors="replace")
    else:
        findings += _size_rules(len(text.encode("utf-8", errors="replace")))
    if not text.strip():
        if not any(f.rule == "EMPTY_FILE" for f in findings):
            findings.append(Finding("EMPTY_FILE", 1, "the file has no code; the server rejects empty files", True))
        return findings
    findings += _forbidden_word(text)
    findings += _directives(text)
    findings += _text_rules(text)
    findings += hip_hazards.inline_asm_mfma(text)  # HIP sources: MFMA hidden from LLVM's hazard recognizer
    findings += aiter_api.check_source(text)  # aiter names and calls against the runner's pinned aiter
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as error:
        findings.append(Finding("SYNTAX_ERROR", error.lineno or 1, f"does not parse: {error.msg}", True))
        return _sorted(findings)
    except (ValueError, RecursionError, MemoryError) as error:  # null bytes, absurd nesting
        findings.append(Finding("SYNTAX_ERROR", 1, f"does not parse: {error}", True))
        return _sorted(findings)
    findings += mla_hacks.check(tree, text)  # the shortcuts of the real board: page size, fixed Q scale, ...
    try:
        findings += AstRules(tree).run()
    except RecursionError:
        findings.append(Finding("LINT_INCOMPLETE", 1, "expressions nested too deeply to check; the AST rules were skipped", False))
    if any(f.rule == "POINTER_REPLAY" for f in findings):  # the output itself cached by pointer: that rule says it all
        findings = [f for f in findings if f.rule != "MLA_DATA_PTR_CACHE"]
    return _sorted(findings)


def _sorted(findings: list[Finding]) -> list[Finding]:
    unique = list(dict.fromkeys(findings))  # the same rule may fire twice on one node; keep one
    return sorted(unique, key=lambda f: (f.line, not f.blocking, f.rule))


# ---------------------------------------------------------------------------
# The server's rejections
# ---------------------------------------------------------------------------

def _size_rules(size: int) -> list[Finding]:
    if size == 0:
        return [Finding("EMPTY_FILE", 1, "the file is empty; the server rejects empty files", True)]
    if size > MAX_BYTES:
        return [Finding("FILE_TOO_LARGE", 1, f"{size:,} bytes; the server rejects files over {MAX_BYTES:,} bytes", True)]
    return []


def _forbidden_word(text: str) -> list[Finding]:
    findings = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = re.search(FORBIDDEN_WORD, line, re.IGNORECASE)
        if match:
            findings.append(Finding(
                "FORBIDDEN_WORD", number,
                f'contains "{match.group(0)}" (column {match.start() + 1}); the server rejects any file '
                f"containing this word anywhere, comments and identifiers included", True))
    return findings


def _directives(text: str) -> list[Finding]:
    """The server reads `#!POPCORN key value` only from the first comment block (KB _get_popcorn_directives)."""
    findings = []
    seen: dict[str, int] = {}
    for directive in directives.parse(text):
        number = directive.line
        if not directive.in_header:
            findings.append(Finding("DIRECTIVE_PLACEMENT", number,
                                    "#!POPCORN directive after the first comment block; the server ignores it "
                                    "(directives must be the very first lines)", True))
            continue
        if not directive.values or directive.key not in ("leaderboard", "gpu", "gpus"):
            findings.append(Finding("BAD_DIRECTIVE", number,
                                    f"malformed directive {directive.text!r}; the server expects "
                                    "`#!POPCORN leaderboard NAME` or `#!POPCORN gpu NAME`", True))
            continue
        key = "gpu" if directive.key == "gpus" else directive.key
        if key in seen:
            findings.append(Finding("BAD_DIRECTIVE", number, f"repeated {key} directive (first on line {seen[key]}); "
                                    "the server rejects the file", True))
            continue
        seen[key] = number
        if key == "leaderboard" and directive.values[0] != LEADERBOARD:
            findings.append(Finding("WRONG_LEADERBOARD", number, f"leaderboard {directive.values[0]!r} does not match "
                                    f"{LEADERBOARD!r}; the server rejects the mismatch", True))
        if key == "gpu" and directive.values != [GPU]:
            findings.append(Finding("WRONG_GPU", number, f"gpu {' '.join(directive.values)!r}; this leaderboard runs "
                                    f"on {GPU} (the CLI's --gpu overrides the directive)", False))
    if "leaderboard" not in seen:
        findings.append(Finding("MISSING_DIRECTIVE", 1, f"no `#!POPCORN leaderboard {LEADERBOARD}` on the first "
                                "lines; popcorn-cli then needs --leaderboard", False))
    if "gpu" not in seen:
        findings.append(Finding("MISSING_DIRECTIVE", 1, f"no `#!POPCORN gpu {GPU}` on the first lines; "
                                "popcorn-cli then needs --gpu", False))
    return findings


# ---------------------------------------------------------------------------
# Text rules: things that live inside strings (C++/HIP sources, printed text)
# ---------------------------------------------------------------------------

# `##` gluing a CUDA/HIP API name together, so the server's word filter never sees it whole.
_TOKEN_PASTE = re.compile(r"\b(cuda|hip|cu)\w*\s*##|##\s*(cuda|hip|str|eam|graph|event)", re.IGNORECASE)
# Lines the official eval.py writes to its result pipe, or the report's ranked header: forging them is a cheat.
_FAKE_REPORT = re.compile(r"Ranked Benchmark|benchmark\.\d+\.(mean|std|err|best|worst|runs)|"
                          r"\bcheck: pass|test\.\d+\.status|\u23f1")


_PASTE_MACRO = re.compile(r"#define\s+(\w+)\s*\([^)]*\)[^\n]*##")
_API_NAME = re.compile(r"^(cuda|hip|cu)[A-Z_]|(?i:" + FORBIDDEN_WORD + ")")


def _text_rules(text: str) -> list[Finding]:
    findings = []
    paste_macros = set(_PASTE_MACRO.findall(text))
    for number, line in enumerate(text.splitlines(), start=1):
        if _TOKEN_PASTE.search(line) or any(_pasted_api_name(macro, line) for macro in paste_macros):
            findings.append(Finding("TOKEN_PASTE_CUDA_API", number,
                                    "`##` token pasting builds a CUDA/HIP API name, dodging the server's word filter", True))
        if _FAKE_REPORT.search(line):
            findings.append(Finding("FAKE_BENCHMARK_EMIT", number,
                                    "text of the evaluator's result lines or ranked report; submissions must not emit it", True))
    return findings


def _pasted_api_name(macro: str, line: str) -> bool:
    """Does this line call a `##` macro whose glued arguments spell a CUDA/HIP API name?"""
    for arguments in re.findall(r"\b" + re.escape(macro) + r"\s*\(([^()]*)\)", line):
        glued = "".join(part.strip() for part in arguments.split(","))
        if _API_NAME.search(glued):
            return True
    return False


def server_rejections(path) -> list:
    """The blocking findings as verdict lines: what the official server or its KernelGuard would refuse the file
    for (every command that runs a submission attaches them)."""
    try:
        findings = lint_file(path)
    except OSError:
        return []
    return [f"{'the runner would fail it' if f.rule.startswith('AITER_') else 'the server would reject it'}: "
            f"line {f.line}: {f.rule} {f.message}" for f in findings if f.blocking]
