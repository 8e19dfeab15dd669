"""Which optional extra of the package holds which import, so that a verb needing one says so in one
line instead of a traceback. The base install (torch, Lightning, TorchRL, TensorDict, the hub client,
safetensors) trains, plays, evaluates, pushes and pulls; nothing it runs imports these."""

from __future__ import annotations

import importlib.util

#: extra -> the top-level modules it installs (``pyproject.toml``'s optional dependencies).
EXTRAS: dict[str, tuple[str, ...]] = {
    "study": ("ray", "pandas", "matplotlib", "scipy"),
    "gym": ("gymnasium", "pettingzoo", "stable_baselines3"),
}


class MissingExtra(ModuleNotFoundError):
    """A module of an extra that is not installed; its message is the one line to show."""


def extra_of(module: str | None) -> str | None:
    """The extra that installs ``module`` (a dotted name is judged by its top level), or None."""
    top = (module or "").partition(".")[0]
    return next((extra for extra, modules in EXTRAS.items() if top in modules), None)


def missing_line(extra: str, module: str, what: str = "") -> str:
    """``[WHAT ]needs the EXTRA extra (MODULE is not installed): pip install 'yahtzee-lightning[EXTRA]'``."""
    needs = f"needs the {extra} extra ({module} is not installed): pip install 'yahtzee-lightning[{extra}]'"
    return f"{what} {needs}" if what else needs


def require(extra: str, what: str = "", modules: tuple[str, ...] | None = None) -> None:
    """Raise ``MissingExtra`` (its line naming ``what``) unless ``modules`` of ``extra`` (default: all)
    are installed: checked before any work starts, so that a run never fails at its end for a plot."""
    for module in EXTRAS[extra] if modules is None else modules:
        if importlib.util.find_spec(module) is None:
            raise MissingExtra(missing_line(extra, module, what), name=module)
