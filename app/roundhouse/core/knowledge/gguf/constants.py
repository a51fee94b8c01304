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
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

_NAME = "gguf.constants"


def _load() -> ModuleType:
    loaded = sys.modules.get(_NAME)
    if loaded is not None:
        return loaded
    package = importlib.util.find_spec("gguf")  # finds the package without running it
    if package is None or not package.submodule_search_locations:
        raise ImportError("The gguf package is not installed: `pip install gguf`.")
    path = Path(next(iter(package.submodule_search_locations))) / "constants.py"
    spec = importlib.util.spec_from_file_location(_NAME, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"gguf's constants cannot be loaded from {path}.")
    module = importlib.util.module_from_spec(spec)
    sys.modules[_NAME] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[_NAME]
        raise
    return module


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
