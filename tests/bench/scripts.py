"""The bench scripts, for the tests that run them or use their parts."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "bench"


def load(name: str) -> ModuleType:
    """Import a bench script the way ``python bench/NAME.py`` sees its neighbours."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    module_name = f"bench_{name}"
    spec = importlib.util.spec_from_file_location(module_name, BENCH / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module
