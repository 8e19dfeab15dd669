"""A cell's config as ``fit`` reads it: composed from a base YAML and dotted overrides, named by a
hash of what it comes to, parsed by fit's own parser (the project's LightningCLI) without building
anything, its error in one line as ``fit`` words it, and whether its algorithm trains ensembles.

``.spec`` checks every axis value and every cell of a study with these before anything runs;
the trials compose their run's config with the same ``compose``.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from typing import Any

from ..untrusted import load_yaml


def set_key(config: dict[str, Any], dotted: str, value: Any) -> None:
    """Set ``a.b.c`` in a nested config dict (creating the levels it lacks)."""
    *path, last = dotted.split(".")
    node = config
    for part in path:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[last] = copy.deepcopy(value)


def value_label(value: Any) -> str:
    """An axis value as its cell's label: a list or mapping as JSON, anything else as written."""
    return json.dumps(value) if isinstance(value, (list, dict)) else str(value)


def compose(base_text: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """The config dict of a base YAML (its own ``base:`` recipe merged in) with dotted overrides
    applied in order."""
    from ..shipped import expand_base

    config = expand_base(load_yaml(base_text, "the base config") or {}, None)
    for key, value in overrides.items():
        set_key(config, key, value)
    return config


def cell_id(base_text: str, overrides: dict[str, Any]) -> str:
    """A hash of the composed config: cells that come to the same settings are one cell."""
    composed = json.dumps(compose(base_text, overrides), sort_keys=True, default=str)
    return "c" + hashlib.sha1(composed.encode()).hexdigest()[:10]


def parse_fit_config(config: dict[str, Any]) -> Any:
    """Parse a ``fit`` config dict with the project's LightningCLI, instantiating nothing; a bad key or
    value raises ``ConfigError``, worded in one line as ``fit`` words it. A config parsed before in
    this process is not parsed again: a study names the same config many times (an axis value
    alone, then in its cells; a base in several ablations), and each parse is Lightning's whole
    command-line parser's."""
    known = json.dumps(config, sort_keys=True, default=str)
    if known not in _PARSED:
        import lightning as L

        from ..loop.lightning_cli import TRAINER_DEFAULTS

        cli = _checking_cli()(
            L.LightningModule,
            subclass_mode_model=True,
            trainer_defaults=TRAINER_DEFAULTS,
            run=False,
            args=config,
            parser_kwargs={"exit_on_error": False},
        )
        _PARSED[known] = cli.config
    return _PARSED[known].clone()


#: The configs parsed in this process (``parse_fit_config``), by their JSON.
_PARSED: dict[str, Any] = {}


@functools.cache
def _checking_cli() -> type:
    """The project's LightningCLI, parsing only: one class, so that its parser is built once a process."""
    from ..loop.lightning_cli import _CLI

    class _Check(_CLI):
        def before_instantiate_classes(self) -> None:
            pass

        def instantiate_classes(self) -> None:
            pass

        def _set_seed(self) -> None:
            pass

    return _Check


def model_class(class_path: str) -> type | None:
    """The model class a config's ``class_path`` names (a short name: one of this package's
    algorithms); None where it does not import (the config's parse says why)."""
    import importlib

    module, _, name = class_path.rpartition(".")
    try:
        return getattr(importlib.import_module(module or "yahtzee_lightning.algorithms"), name)
    except (ImportError, AttributeError, ValueError):
        return None


def accepts_ensemble(class_path: str) -> bool:
    """Whether the model class takes an ``ensemble`` argument (K members trained in one process)."""
    import inspect

    cls = model_class(class_path)
    if cls is None:
        return False
    # An algorithm may take it through ``**kwargs`` from the class it extends.
    return any("ensemble" in inspect.signature(c.__init__).parameters for c in cls.__mro__ if "__init__" in vars(c))
