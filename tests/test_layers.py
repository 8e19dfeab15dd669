"""The package's imports run one way (CONTRIBUTING.md, Layout): no module imports one above it, and
none imports itself back through others, within a folder or across layers. Read from the source
with ``ast``: every import counts, inside functions, lazy ones (``lazy_exports`` maps) and those
under ``if TYPE_CHECKING:`` (a type hint that names a module ties the two as much as a call does)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import yahtzee_lightning

ROOT = Path(yahtzee_lightning.__file__).parent
PACKAGE = "yahtzee_lightning"

#: Bottom to top. A module belongs to the layer of the longest entry it starts with; it may import
#: its own layer and those below. Commands (the verbs of the console script) sit on top.
LAYERS: list[tuple[str, ...]] = [
    (
        "_lazy",
        "_version",
        "schedules",
        "metrics",
        "progress",
        "machine",
        "digest",
        "untrusted",
        "atomic",
        "png",
        "manifest",
        "replace",
        "shipped",
        "extras",
    ),
    ("game",),
    # The ecosystem's interfaces (Gymnasium, SB3, PettingZoo) on one floor, over the env: they know
    # no player names (resolve, above, turns a name into a player; an SB3 zip too, through gym.policy).
    ("env", "gym.spaces", "gym.single", "gym.vector", "gym.sb3", "gym.policy", "gym.pettingzoo"),
    ("solver", "nn"),
    ("players",),
    ("evaluation",),
    ("hub",),
    ("resolve",),
    # The training loop (collection, packs and ensembles, resume, checkpoints, fit's LightningCLI):
    # it never imports an algorithm; the algorithms, above it, extend its parts.
    ("loop",),
    ("algorithms", "coach"),
    # A study: its file, cells, records and results table first; then running the cells (it runs
    # fit's LightningCLI, loop.lightning_cli, for each) and judging the runs, side by side;
    # then drawing the report from the judged numbers.
    ("study",),
    ("study.running", "study.judging"),
    ("study.drawing",),
    # The verbs' one room (commands/, with the console script's dispatcher), on top: nothing imports it.
    # The package's __init__ (its lazy exports reach any layer) and gym/__init__ (it registers the
    # Gymnasium ids) sit with it.
    ("", "cli", "commands", "gym"),
]


def module_name(path: Path) -> str:
    parts = [PACKAGE, *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def layer(module: str) -> int:
    """The layer of a module: the longest matching entry wins (``env.demo`` over ``env``)."""
    best, best_len = None, -1
    for i, entries in enumerate(LAYERS):
        for entry in entries:
            name = f"{PACKAGE}.{entry}" if entry else PACKAGE
            matches = module == name if not entry else module == name or module.startswith(name + ".")
            if matches and len(name) > best_len:
                best, best_len = i, len(name)
    if best is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS (and to CONTRIBUTING.md's Layout)")
    return best


def _target(package: str, module: str | None, level: int) -> str:
    if not level:
        return module or ""
    base = package.split(".")[: len(package.split(".")) - level + 1]
    return ".".join(base + ([module] if module else []))


def imports(module: str) -> set[str]:
    """The package's modules that ``module`` imports (a submodule named in ``from X import sub`` counts as itself)."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found: set[str] = set()

    def add(name: str) -> None:
        if name == PACKAGE or name.startswith(PACKAGE + "."):
            while name not in MODULES:  # an attribute of a module, not a module
                name = name.rsplit(".", 1)[0]
            found.add(name)

    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            target = _target(package, node.module, node.level)
            for alias in node.names:
                add(f"{target}.{alias.name}" if f"{target}.{alias.name}" in MODULES else target)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "lazy_exports":
            for const in ast.walk(node):  # the submodules a package's __getattr__ imports on first use
                if isinstance(const, ast.Constant) and isinstance(const.value, str) and const.value.startswith("."):
                    add(_target(package, const.value.lstrip("."), len(const.value) - len(const.value.lstrip("."))))
    found.discard(module)
    return found


GRAPH = {m: imports(m) for m in MODULES}


def test_every_module_has_a_layer():
    for module in MODULES:
        layer(module)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_imports_one_above_it(module):
    above = sorted(t for t in GRAPH[module] if layer(t) > layer(module))
    assert not above, f"{module} (layer {layer(module)}) imports modules above it: {above}"


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (its modules in order, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                return path[path.index(target) :] + [target]
            if target not in state and (cycle := visit(target)):
                return cycle
        path.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state and (cycle := visit(module)):
            return cycle
    return None


def test_no_import_cycles():
    """No module imports itself back, directly or through others (within a folder too)."""
    cycle = find_cycle(GRAPH)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_a_cycle_is_found_within_a_folder_and_across_layers():
    within = {"a.base": {"a.part"}, "a.part": {"a.base"}}  # a part typing its host: one folder, one layer
    assert find_cycle(within) == ["a.base", "a.part", "a.base"]
    across = {"game.x": {"env.y"}, "env.y": {"env.z"}, "env.z": {"game.x"}}
    assert find_cycle(across) == ["env.y", "env.z", "game.x", "env.y"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_the_checks_see_what_they_must():
    """The walk resolves relative imports, finds imports inside functions, lazy exports and
    TYPE_CHECKING blocks: checked on modules whose imports are known."""
    assert "yahtzee_lightning.env.player" in GRAPH["yahtzee_lightning.env.multiplayer"]  # relative, top level
    assert "yahtzee_lightning.hub" in GRAPH["yahtzee_lightning.loop.settings"]  # inside a method
    assert "yahtzee_lightning.hub.agent" in GRAPH["yahtzee_lightning.hub"]  # a lazy export
    assert "yahtzee_lightning.players" in GRAPH["yahtzee_lightning.commands.args"]  # under TYPE_CHECKING
    assert "yahtzee_lightning.loop.host" in GRAPH["yahtzee_lightning.loop.collection"]  # the same
    assert layer("yahtzee_lightning.commands.demo") > layer("yahtzee_lightning.study.running.runner")


def test_running_and_judging_a_study_do_not_import_each_other():
    running, judging = f"{PACKAGE}.study.running", f"{PACKAGE}.study.judging"
    crossing = sorted(
        (m, t)
        for m, targets in GRAPH.items()
        for t in targets
        if (m.startswith(running) and t.startswith(judging)) or (m.startswith(judging) and t.startswith(running))
    )
    assert not crossing, f"running and judging a study import each other: {crossing}"


def test_every_verb_lives_in_the_commands_room():
    from yahtzee_lightning.cli import VERBS

    outside = {verb: target for verb, (target, _) in VERBS.items() if not target.startswith(f"{PACKAGE}.commands.")}
    assert not outside, f"verbs outside yahtzee_lightning/commands/: {outside}"
    uses = re.compile(r"^\s*(import argparse|from argparse import)", re.M)
    argparse_users = sorted(m for m, p in MODULES.items() if uses.search(p.read_text()) and ".commands" not in m)
    assert not argparse_users, f"argument parsing outside the commands room: {argparse_users}"


#: CONTRIBUTING.md: a module longer than this holds more than one concern; split it by concern.
MAX_LINES = 400


def test_no_module_is_over_400_lines():
    sizes = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in ROOT.rglob("*.py")}
    long = {path: n for path, n in sizes.items() if n > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split them by concern): {long}"
