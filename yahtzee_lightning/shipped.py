"""The recipes (``conf/``) and the small shipped agents (``checkpoints/``) by name, from a checkout or
from an installed package.

In a checkout they are the repository's own folders; the wheel carries copies inside the package
(``yahtzee_lightning/_shipped/``, written by ``setup.py``'s build step), so that
``yahtzee-lightning fit --config quickstart`` and ``--agent distilled-128x2`` work from any folder.
A path that exists is always itself: a name is looked up only where no such file or folder is.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
RECIPES, AGENTS = "conf", "checkpoints"


def _roots(kind: str) -> list[Path]:
    """Where ``kind`` lives: the checkout's folder beside the package, then the wheel's copy."""
    return [p for p in (PACKAGE.parent / kind, PACKAGE / "_shipped" / kind) if p.is_dir()]


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


def config_path(value: str) -> str:
    """A ``--config`` value as a path: as given where it exists, else the shipped recipe of that name;
    an unknown one is a ``ValueError`` listing the names there are."""
    if Path(value).exists():
        return value
    found = recipe(value)
    if found is None:
        raise ValueError(f"--config {value}: no such file, nor a shipped recipe; recipes: {', '.join(recipe_names())}")
    return str(found)
