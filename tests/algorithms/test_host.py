"""The parts of OnPolicyAlgorithm say what they use of the module in ``loop/host.py``: each list
is read against the part's source (``ast``), so it can neither miss a need nor keep a stale one."""

from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Protocol

import pytest

from yahtzee_lightning.algorithms import A2C
from yahtzee_lightning.algorithms.policy_gradient import PolicyGradient
from yahtzee_lightning.loop import host
from yahtzee_lightning.loop.collection import Collection, _Updates
from yahtzee_lightning.loop.diagnosis import Diagnosis
from yahtzee_lightning.loop.ensemble import Ensemble
from yahtzee_lightning.loop.evaluation import Evaluation
from yahtzee_lightning.loop.packed import PackedUpdate
from yahtzee_lightning.loop.settings import Settings

#: Each part (and the loader that reads the module as ``self.module``) with its list.
PARTS = [
    (Settings, "self", host.SettingsHost),
    (Collection, "self", host.CollectionHost),
    (_Updates, "self.module", host.CollectionHost),
    (PolicyGradient, "self", host.PolicyGradientHost),
    (Diagnosis, "self", host.DiagnosisHost),
    (Evaluation, "self", host.EvaluationHost),
    (Ensemble, "self", host.EnsembleHost),
    (PackedUpdate, "self", host.PackedHost),
]


class _Bare(Protocol):
    pass


_PROTOCOL_INTERNALS = set(vars(_Bare))


def members(protocol: type) -> set[str]:
    """The names a Protocol lists, its bases' included."""
    names: set[str] = set()
    for cls in protocol.__mro__:
        if cls is Protocol or not getattr(cls, "_is_protocol", False):
            continue
        names |= set(cls.__dict__.get("__annotations__", {}))
        names |= {n for n in vars(cls) if n not in _PROTOCOL_INTERNALS and not n.startswith("__")}
    return names


def uses(cls: type, root: str) -> tuple[set[str], set[str]]:
    """The attributes ``cls`` reads and writes on the module (``root``: how its methods reach it), its
    own names (methods, class attributes) left out. A local bound to the module counts as the module."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0]
    own = {n.name for n in body.body if isinstance(n, ast.FunctionDef)}
    own |= {n.target.id for n in body.body if isinstance(n, ast.AnnAssign)}
    own |= {t.id for n in body.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    reads: set[str] = set()
    writes: set[str] = set()
    for function in (n for n in body.body if isinstance(n, ast.FunctionDef)):
        aliases = {root}
        for node in ast.walk(function):  # ``m, done = self.module, 0``
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                pairs = [(node.targets[0], node.value)]
                if isinstance(node.targets[0], ast.Tuple) and isinstance(node.value, ast.Tuple):
                    pairs = list(zip(node.targets[0].elts, node.value.elts, strict=False))
                for target, value in pairs:
                    if isinstance(target, ast.Name) and ast.unparse(value) == root:
                        aliases.add(target.id)
        for node in ast.walk(function):
            if isinstance(node, ast.Attribute) and ast.unparse(node.value) in aliases:
                (writes if isinstance(node.ctx, ast.Store) else reads).add(node.attr)
            elif isinstance(node, ast.Call) and ast.unparse(node.func) in ("setattr", "object.__setattr__"):
                if ast.unparse(node.args[0]) in aliases and isinstance(node.args[1], ast.Constant):
                    writes.add(node.args[1].value)
    dunder = {n for n in reads | writes if n.startswith("__")}
    return reads - own - dunder, writes - own - dunder


@pytest.mark.parametrize("part,root,protocol", PARTS, ids=[p[0].__name__ for p in PARTS])
def test_a_part_lists_what_it_uses_of_the_module(part, root, protocol):
    reads, writes = uses(part, root)
    listed = members(protocol)
    if part is Collection:  # one list for the part and the loader it hands itself to
        listed_uses = {name for p, r, _ in PARTS if p in (Collection, _Updates) for name in set.union(*uses(p, r))}
    else:
        listed_uses = reads | writes
    missing = sorted(reads - writes - listed)
    assert not missing, f"{part.__name__} uses {missing} of the module: list them in {protocol.__name__}"
    if part is not _Updates:
        stale = sorted(listed - listed_uses)
        assert not stale, f"{protocol.__name__} lists {stale}, which {part.__name__} does not use"


def test_the_module_has_everything_listed():
    module = A2C(d_h=16, n_layers=1, head_hidden=16, total_games=16, games_per_batch=8, final_eval_games=0)
    has = set(dir(module))
    for protocol in {p for _, _, p in PARTS}:
        assert members(protocol) <= has, f"{protocol.__name__}: the module has no {sorted(members(protocol) - has)}"


def test_the_reading_sees_what_it_must():
    """Checked on uses known by hand: a method of another part, Lightning's state, a loader's alias."""
    reads, writes = uses(Collection, "self")
    assert {"opponent", "device", "hparams"} <= reads and "_players" in writes and "collect" not in reads
    assert {"total_updates", "_trainer"} <= uses(_Updates, "self.module")[0]
    assert "net" in uses(Ensemble, "self")[1]  # object.__setattr__(self, "net", ...)
    assert {"hparams", "net", "opponent", "total_updates"} <= members(host.CollectionHost)
