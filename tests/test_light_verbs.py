"""Every verb answers ``--help`` before it imports torch, TorchRL, Lightning, Ray or the solver: the
heavy parts load after the arguments parse (the verbs' room, yahtzee_lightning/commands/)."""

from __future__ import annotations

import json
import subprocess
import sys

from yahtzee_lightning.cli import VERBS

HEAVY = ("torch", "tensordict", "torchrl", "lightning", "ray", "yahtzee_lightning.solver")

PROBE = """
import contextlib, importlib, io, json, sys
from yahtzee_lightning.cli import VERBS
heavy = {heavy!r}
out = {{}}
for verb, (target, _) in VERBS.items():
    if verb in ("fit", "validate"):
        continue  # LightningCLI's help lists every trainer option: it needs Lightning itself
    module_name, func_name = target.split(":")
    with contextlib.redirect_stdout(io.StringIO()) as text, contextlib.suppress(SystemExit):
        getattr(importlib.import_module(module_name), func_name)(["--help"])
    loaded = sorted(h for h in heavy if any(m == h or m.startswith(h + ".") for m in sys.modules))
    out[verb] = [loaded, "usage" in text.getvalue()]
print(json.dumps(out))
"""


def test_every_verb_answers_help_before_loading_anything_heavy():
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY)], capture_output=True, text=True, timeout=120, check=True
    )
    found = json.loads(done.stdout)
    assert set(found) == set(VERBS) - {"fit", "validate"}
    loaded = {verb: modules for verb, (modules, _) in found.items() if modules}
    assert not loaded, f"--help loaded heavy modules: {loaded}"
    assert all(usage for _, usage in found.values()), found
