"""Package exports imported on first use (PEP 562), so that ``--help`` does not load torch or TorchRL;
and the old paths of modules that moved, kept importable."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any


def lazy_exports(package: str, exports: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``exports`` maps a public name to its (relative) submodule."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(exports[name], package), name)

    return __getattr__


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Old dotted paths of modules that moved: importing one gives the module where it lives now."""

    def __init__(self, moves: dict[str, str]) -> None:
        self.moves = moves
        self.specs: dict[str, Any] = {}

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        return importlib.util.spec_from_loader(fullname, self) if fullname in self.moves else None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.moves[spec.name])
        self.specs[spec.name] = module.__spec__  # the import system sets the old path's; put it back
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self.specs[module.__spec__.name]


def moved_modules(package: str, moves: dict[str, str]) -> None:
    """Keep ``package.OLD`` importable (a config's ``class_path``, a pickle) for each module of
    ``moves`` (old name under ``package`` -> its absolute new path): ``import package.OLD`` is the
    moved module itself, the same object, imported on first use."""
    sys.meta_path.append(_MovedModules({f"{package}.{old}": new for old, new in moves.items()}))
