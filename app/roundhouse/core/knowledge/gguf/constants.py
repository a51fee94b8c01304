"""gguf's constants module loaded without the rest of the gguf package.

`import gguf.constants` runs the package's `__init__`, which imports its writer, quantiser and
tokenizer tools and with them numpy, PyYAML and mistral_common: about 16 MB in every idle
daemon, for enums and tables the header reader needs. constants.py imports only the standard
library, so it is loaded from the installed package by itself, under its own name: a later
`import gguf` (a test writing a file, the converter) reuses it, and its enums stay one class.
"""

from __future__ import annotations

import importlib.util
import sys
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import TYPE_CHECKING

_NAME = "gguf.constants"


def _load() -> ModuleType:
    loaded = sys.modules.get(_NAME)
    if loaded is not None:
        return loaded
    package = importlib.util.find_spec("gguf")  # finds the package without running it
    if package is None or package.submodule_search_locations is None:
        raise ImportError("The gguf package is not installed: `pip install gguf`.")
    spec = _find_submodule(list(package.submodule_search_locations))
    module = importlib.util.module_from_spec(spec)
    sys.modules[_NAME] = module
    try:
        assert spec.loader is not None
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[_NAME]
        raise
    return module


def _find_submodule(search: list[str]) -> ModuleSpec:
    # What the import system does once the parent is imported, without importing it: ask
    # each finder for the submodule along the parent's path. The finders, not a file path,
    # so it works where the package is not plain files (a frozen build's archive).
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        spec = find(_NAME, search) if find is not None else None
        if isinstance(spec, ModuleSpec) and spec.loader is not None:
            return spec
    raise ImportError(f"gguf's constants module is not found in {search}.")


if TYPE_CHECKING:
    from gguf.constants import (
        GGML_QUANT_SIZES,
        GGMLQuantizationType,
        GGUFValueType,
        Keys,
        LlamaFileType,
    )
else:
    _constants = _load()
    GGML_QUANT_SIZES = _constants.GGML_QUANT_SIZES
    GGMLQuantizationType = _constants.GGMLQuantizationType
    GGUFValueType = _constants.GGUFValueType
    Keys = _constants.Keys
    LlamaFileType = _constants.LlamaFileType

__all__ = ["GGML_QUANT_SIZES", "GGMLQuantizationType", "GGUFValueType", "Keys", "LlamaFileType"]
