"""Serving `import aiter` from the stand-in, in the child, only where no real aiter can be found.

install() appends a finder to the END of sys.meta_path: Python asks it only after every real finder failed to
find `aiter`, so an installed aiter is never shadowed. The finder serves the covered modules (MODULES); any other
aiter module, and any uncovered name looked up on a served one, raises NotCovered ("not covered: aiter.X
(...)") instead of an AttributeError or a silent wrong answer. served() says whether it was used.
"""
import functools
import importlib.abc
import importlib.machinery
import json
import sys
import types
from pathlib import Path

from harness.aiter_standin import decode, dtypes, fp4_utils, metadata, mla, quant
from harness.aiter_standin.errors import NotCovered

API_DATA = Path(__file__).resolve().parent.parent / "checks" / "data" / "aiter_api.json"
_DTYPE_NAMES = ("fp8", "fp8_e8m0", "fp4x2", "i4x2", "fp16", "bf16", "fp32", "u32", "i32", "i16", "i8", "d_dtypes",
                "get_dtype_fp8")
_ATTENTION = {"mla_decode_stage1_asm_fwd": mla.mla_decode_stage1_asm_fwd, "mla_reduce_v1": mla.mla_reduce_v1,
              "get_mla_metadata_info_v1": metadata.get_mla_metadata_info_v1,
              "get_mla_metadata_v1": metadata.get_mla_metadata_v1}
_QUANT = {"per_tensor_quant": quant.per_tensor_quant, "per_tensor_quant_hip": quant.per_tensor_quant_hip,
          "per_tensor_quant_triton": quant.per_tensor_quant_triton, "get_dtype_max": quant.get_dtype_max,
          "dynamic_per_tensor_quant": quant.dynamic_per_tensor_quant,
          "static_per_tensor_quant": quant.static_per_tensor_quant}
_TRITON_QUANT = {"dynamic_per_tensor_quant_fp8_i8": quant.dynamic_per_tensor_quant_fp8_i8,
                 "static_per_tensor_quant_fp8_i8": quant.static_per_tensor_quant_fp8_i8}
_FP4 = {"dynamic_mxfp4_quant": fp4_utils.dynamic_mxfp4_quant, "mxfp4_to_f32": fp4_utils.mxfp4_to_f32,
        "e8m0_to_f32": fp4_utils.e8m0_to_f32}
_DTYPES = {name: getattr(dtypes, name) for name in _DTYPE_NAMES}
_SUBMODULE = object()  # a name that is a served submodule, filled in when the module is created

# module -> its covered names (functions, values, and submodules marked _SUBMODULE)
MODULES = {
    "aiter": {**_ATTENTION, **_QUANT, "dtypes": _SUBMODULE, "mla": _SUBMODULE, "utility": _SUBMODULE,
              "ops": _SUBMODULE},
    "aiter.mla": {"mla_decode_fwd": decode.mla_decode_fwd, "get_meta_param": decode.get_meta_param,
                  "dtypes": _SUBMODULE},
    "aiter.dtypes": _DTYPES,
    "aiter.utility": {"dtypes": _SUBMODULE, "fp4_utils": _SUBMODULE},
    "aiter.utility.dtypes": _DTYPES,
    "aiter.utility.fp4_utils": _FP4,
    "aiter.ops": {"quant": _SUBMODULE, "attention": _SUBMODULE, "triton": _SUBMODULE},
    "aiter.ops.quant": _QUANT,
    "aiter.ops.attention": _ATTENTION,
    "aiter.ops.triton": {"quant": _SUBMODULE},
    "aiter.ops.triton.quant": {**_TRITON_QUANT, "quant": _SUBMODULE},
    "aiter.ops.triton.quant.quant": _TRITON_QUANT,
}
ALIASES = {"aiter.dtypes": "aiter.utility.dtypes"}  # aiter's own `from .utility import dtypes as dtypes`
_served: list[str] = []


@functools.lru_cache(maxsize=1)
def upstream_api() -> dict:
    """The pinned aiter's modules and namespaces (checks/data/aiter_api.json), read as data; {} when absent."""
    try:
        return json.loads(API_DATA.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def known_upstream(module: str, name: str | None = None) -> bool:
    api = upstream_api()
    if not api:
        return True
    real_module = ALIASES.get(module, module)
    if name is None:
        return real_module in api.get("modules", ())
    space = api.get("namespaces", {}).get(real_module)
    return space is None or name in space or f"{real_module}.{name}" in api.get("modules", ())


class StandInModule(types.ModuleType):
    """A served aiter module: covered names are attributes; any other public name raises NotCovered."""

    def __getattr__(self, name: str):
        if name.startswith("__") or name in ("_is_coroutine",):
            raise AttributeError(name)
        dotted = f"{self.__name__}.{name}"
        if f"{dotted}" in MODULES:
            return importlib.import_module(dotted)
        raise NotCovered(dotted, known_upstream(self.__name__, name))


class _Loader(importlib.abc.Loader):
    def create_module(self, spec):
        return StandInModule(spec.name)

    def exec_module(self, module) -> None:
        module.__standin__ = True
        module.__file__ = __file__
        for name, value in MODULES[module.__name__].items():
            if value is not _SUBMODULE:
                setattr(module, name, value)
        if module.__name__ not in _served:
            _served.append(module.__name__)


class StandInFinder(importlib.abc.MetaPathFinder):
    """Serves aiter and its covered modules; placed last so a real aiter always wins."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "aiter" and not fullname.startswith("aiter."):
            return None
        if fullname != "aiter" and not getattr(sys.modules.get("aiter"), "__standin__", False):
            return None  # a real aiter's missing submodule: its own ModuleNotFoundError, not ours
        if fullname not in MODULES:
            raise NotCovered(fullname, known_upstream(fullname))
        is_package = any(other.startswith(fullname + ".") for other in MODULES)
        return importlib.machinery.ModuleSpec(fullname, _Loader(), is_package=is_package)


def install() -> StandInFinder:
    """Put the finder last on sys.meta_path (once); returns it."""
    for finder in sys.meta_path:
        if isinstance(finder, StandInFinder):
            return finder
    finder = StandInFinder()
    sys.meta_path.append(finder)
    return finder


def served() -> bool:
    """Whether any aiter module was served by the stand-in in this process."""
    return bool(_served)
