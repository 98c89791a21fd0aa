"""The parent's builds of a submission's load_inline extensions, before its run.

The child may not write the toolchain cache, and a build there takes a
minute: the parent (trusted, as for `harness compile`) reads each
load_inline call from the file's text and builds it into the cache, under
the key the child computes from the same arguments. A call whose sources
are made at run time is left to the child, which builds it in its scratch.
"""
from pathlib import Path

from harness.paths import in_repository
from harness.compile.hip import source as hip_source
from harness.compile.hip import toolchain as hip_toolchain
from harness.emulator.hip_runtime import extension, library


def cache_folder() -> Path:
    return hip_toolchain.cache_root() / "emulated"


def specs_of(text: str) -> list:
    """(InlineSpec, its unit with #line directives) of every load_inline
    call read statically."""
    specs = []
    for build in hip_source.find_builds(text):
        if build.problems or not build.cuda_sources:
            continue
        texts = [tuple("".join(p.text for p in source) for source in group)
                 for group in (build.cpp_sources, build.cuda_sources)]
        specs.append((extension.spec_of(
            build.name, texts[0], texts[1], build.functions or None,
            extra_cuda_cflags=build.cuda_flags), build.translation_unit()))
    return specs


def missing(path: Path) -> list:
    """(spec, unit) of each load_inline call of the file not in the cache
    yet; none for a file that cannot be read or parsed."""
    try:
        specs = specs_of(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return []
    folder = cache_folder()
    return [(spec, unit) for spec, unit in specs
            if not (folder / spec.key / f"{spec.name}.so").is_file()]


def prebuild(path: Path) -> list[str]:
    """Build what is missing; one line per build that failed (the child
    then meets the same error, where it is the submission's)."""
    folder = cache_folder()
    folder.mkdir(parents=True, exist_ok=True)
    problems = []
    library.built_path(hip_toolchain.find(), folder)
    shown = in_repository(path)
    for spec, unit in missing(path):
        try:
            extension.build(spec, folder, unit, shown)
        except library.BuildError as error:
            problems.append(f"{spec.name}: {error}")
    return problems
