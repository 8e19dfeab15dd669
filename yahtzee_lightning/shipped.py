"""The recipes (``conf/``) and the small shipped agents (``checkpoints/``) by name, from a checkout or
from an installed package.

In a checkout they are the repository's own folders; the wheel carries copies inside the package
(``yahtzee_lightning/_shipped/``, written by ``setup.py``'s build step), so that
``yahtzee-lightning fit --config quickstart`` and ``--agent distilled-128x2`` work from any folder.
A path that exists is always itself: a name is looked up only where no such file or folder is.

``YahtzeeAgent.from_pretrained(NAME)`` and every verb that takes an agent look a name up here
before asking a hub; ``yahtzee-lightning agents`` lists what there is (``agent_summary``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .untrusted import read_yaml

PACKAGE = Path(__file__).resolve().parent
RECIPES, AGENTS = "conf", "checkpoints"


def checkout() -> Path | None:
    """The source checkout this package runs from (the folder above it, whose ``pyproject.toml``
    names yahtzee_lightning), or None for an installed package: the folder above an installed one
    is ``site-packages``, whose ``benchmarks/`` or ``conf/`` belong to other packages (TorchRL
    installs a ``benchmarks/`` there), never to us."""
    root = PACKAGE.parent
    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8")
    except (OSError, UnicodeError):
        return None
    return root if 'name = "yahtzee_lightning"' in text else None


def _roots(kind: str) -> list[Path]:
    """Where ``kind`` lives: the checkout's folder beside the package, then the wheel's copy."""
    root = checkout()
    return [p for p in (root and root / kind, PACKAGE / "_shipped" / kind) if p is not None and p.is_dir()]


def _strip(name: str, kind: str) -> str:
    return name[len(kind) + 1 :] if name.startswith(f"{kind}/") else name


def recipe(name: str) -> Path | None:
    """The recipe ``name`` names (``quickstart``, ``quickstart.yaml``, ``conf/quickstart.yaml``,
    ``study/paper_faithful``), or None where there is none of that name."""
    rel = _strip(name, RECIPES)
    for root in _roots(RECIPES):
        for candidate in (root / rel, root / f"{rel}.yaml"):
            if candidate.is_file():
                return candidate
    return None


def agent(name: str) -> Path | None:
    """The shipped agent folder ``name`` names (``distilled-128x2``, ``checkpoints/distilled-128x2``)."""
    rel = _strip(name, AGENTS)
    for root in _roots(AGENTS):
        if (root / rel / "config.json").is_file():
            return root / rel
    return None


def recipe_names() -> list[str]:
    return sorted({p.relative_to(r).with_suffix("").as_posix() for r in _roots(RECIPES) for p in r.rglob("*.yaml")})


def agent_names() -> list[str]:
    return sorted({p.parent.name for r in _roots(AGENTS) for p in r.glob("*/config.json")})


def agent_summary(name: str) -> dict[str, Any]:
    """What ``yahtzee-lightning agents`` shows of the shipped agent ``name``, read from its
    ``config.json`` (bounded JSON) and its weights' safetensors header (shapes only): nothing is
    unpickled, built or run, so listing costs no torch import. A missing entry is None."""
    import math

    from safetensors import safe_open

    from .untrusted import printable, read_json

    folder = agent(name)
    if folder is None:
        raise ValueError(f"{name}: no shipped agent of that name; shipped agents: {', '.join(agent_names())}")
    config = read_json(folder / "config.json")
    if not isinstance(config, dict):
        raise ValueError(f"{folder / 'config.json'}: not an agent config (a JSON object is expected)")
    weights = folder / "model.safetensors"
    with safe_open(str(weights), framework="numpy") as f:
        parameters = sum(math.prod(f.get_slice(k).get_shape()) for k in f.keys())  # noqa: SIM118

    def get(*keys: str) -> Any:
        value = config
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        return value if isinstance(value, (int, float, str)) and not isinstance(value, bool) else None

    algorithm = get("training", "algorithm")
    return {
        "name": folder.name,
        "parameters": parameters,
        "bytes": weights.stat().st_size,
        "games": get("evaluation", "summary", "games"),
        "score": get("evaluation", "summary", "score", "mean"),
        "optimal": get("evaluation", "optimal", "score", "mean"),
        "regret": get("evaluation", "summary", "regret", "per_game_mean"),
        "algorithm": printable(algorithm) if algorithm is not None else None,
        "turn_value": isinstance(config.get("turn_value"), dict),
    }


def config_path(value: str) -> str:
    """A ``--config`` value as a path: as given where it exists, else the shipped recipe of that name;
    an unknown one is a ``ValueError`` listing the names there are."""
    if Path(value).exists():
        return value
    found = recipe(value)
    if found is None:
        raise ValueError(f"--config {value}: no such file, nor a shipped recipe; recipes: {', '.join(recipe_names())}")
    return str(found)


#: A recipe's key naming the recipe it starts from: ``base: a2c_cpu`` takes every setting of
#: ``conf/a2c_cpu.yaml`` and then this file's, so that a variant holds only what it changes.
BASE_KEY = "base"
_MAX_BASES = 16


def merge_recipes(base: dict, over: dict) -> dict:
    """``over`` on top of ``base``: mappings merge key by key (a new ``class_path`` keeps the base's
    ``init_args`` it does not set), anything else (a value, a list of callbacks) is replaced whole."""
    out = dict(base)
    for key, value in over.items():
        out[key] = (
            merge_recipes(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
        )
    return out


def expand_base(config: dict, where: Path | None, seen: tuple[Path, ...] = ()) -> dict:
    """A recipe's settings with its ``base:`` chain applied, the nearest file last. ``base`` is a path
    (relative to the recipe's folder) or a shipped recipe's name; a missing one or a loop is a
    ``ValueError`` naming the recipe."""

    if not isinstance(config, dict) or BASE_KEY not in config:
        return config
    config = dict(config)
    name, label = config.pop(BASE_KEY), str(where or "the recipe")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{label}: {BASE_KEY} must name a recipe (a path or a name such as a2c_cpu), got {name!r}")
    local = (where.parent if where else Path.cwd()) / name
    path = local if local.is_file() else recipe(name)
    if path is None:
        raise ValueError(
            f"{label}: {BASE_KEY}: {name}: no such file, nor a shipped recipe; recipes: {', '.join(recipe_names())}"
        )
    path = path.resolve()
    if path in seen or len(seen) >= _MAX_BASES:
        chain = " -> ".join(str(p) for p in (*seen, path))
        raise ValueError(f"{label}: {BASE_KEY}: the recipes name each other in a loop ({chain})")
    parent = read_yaml(path) or {}
    return merge_recipes(expand_base(parent, path, (*seen, path)), config)


def expanded_config_path(value: str) -> str:
    """A ``--config`` value as a file ``fit`` can read: the recipe itself, or, where it names a
    ``base:``, its settings merged into a file of the same name in a private temporary folder
    (removed at exit), so that fit's parser sees one whole recipe."""
    import atexit
    import shutil
    import tempfile

    import yaml

    path = Path(config_path(value))
    config = read_yaml(path)  # every --config is checked here (aliases, tags, size) before fit's parser walks it
    if BASE_KEY not in path.read_text(encoding="utf-8"):
        return str(path)
    if not isinstance(config, dict) or BASE_KEY not in config:
        return str(path)
    merged = expand_base(config, path.resolve())
    folder = Path(tempfile.mkdtemp(prefix="yahtzee-lightning-recipe-"))
    atexit.register(shutil.rmtree, folder, True)
    out = folder / path.name
    out.write_text(
        f"# {path} with its {BASE_KEY}: chain merged\n" + yaml.safe_dump(merged, sort_keys=False), encoding="utf-8"
    )
    return str(out)
