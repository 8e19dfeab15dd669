"""Every verb answers ``--help`` before it imports torch, TorchRL, Lightning, Ray or the solver: the
heavy parts load after the arguments parse (the verbs' room, yahtzee_lightning/commands/)."""

from __future__ import annotations

import json
import os
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


HUB_PROBE = """
import contextlib, importlib, io, json, sys
heavy = {heavy!r}
out = {{}}
for verb, target, argv in (
    ("evaluate", "yahtzee_lightning.commands.evaluate:main", ["--agent", "nosuchorg/nosuchmodel"]),
    ("evaluate", "yahtzee_lightning.commands.evaluate:main", ["--agent", "lookahead:nosuchorg/nosuchmodel"]),
    ("play", "yahtzee_lightning.commands.coach:play_main", ["--opponent", "nosuchorg/nosuchmodel"]),
    ("advise", "yahtzee_lightning.commands.coach:advise_main",
     ["--agent", "lookahead:nosuchorg/nosuchmodel", "--dice", "6", "6", "4", "2", "1", "--roll", "1"]),
):
    module_name, func_name = target.split(":")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            code = getattr(importlib.import_module(module_name), func_name)(argv)
        except SystemExit as e:
            code = e.code
    loaded = sorted(h for h in heavy if any(m == h or m.startswith(h + ".") for m in sys.modules))
    out[" ".join([verb, *argv[:2]])] = [code, err.getvalue().strip().splitlines(), loaded]
print(json.dumps(out))
"""


def test_a_hub_id_that_cannot_be_had_is_one_line_before_anything_heavy_loads(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}  # an empty cache, offline
    done = subprocess.run(
        [sys.executable, "-c", HUB_PROBE.format(heavy=HEAVY)], capture_output=True, text=True, timeout=120, env=env
    )
    found = json.loads(done.stdout)
    assert len(found) == 4, done.stderr[-2000:]
    for call, (code, lines, loaded) in found.items():
        assert code == 2 and len(lines) == 1 and "nosuchorg/nosuchmodel" in lines[0], (call, lines)
        assert "not in the local cache" in lines[0], (call, lines)
        assert not loaded, f"{call}: loaded {loaded} before refusing the name"


PLAY_PROBE = """
import contextlib, importlib, io, json, sys
heavy = {heavy!r}
out = {{}}
small = ["--boxes", "0", "12"]
for verb, target, argv in (
    ("demo", "yahtzee_lightning.commands.demo:main", ["--games", "2"]),
    ("evaluate", "yahtzee_lightning.commands.evaluate:main", ["--agent", "optimal", "--games", "4", *small]),
    ("evaluate", "yahtzee_lightning.commands.evaluate:main", ["--agent", "random", "--games", "4", *small]),
    ("advise", "yahtzee_lightning.commands.coach:advise_main",
     ["--dice", "6", "6", "4", "2", "1", "--roll", "1", *small]),
    ("play", "yahtzee_lightning.commands.coach:play_main", [*small, "--seed", "1"]),
):
    module_name, func_name = target.split(":")
    with contextlib.redirect_stdout(io.StringIO()) as text:
        try:
            code = getattr(importlib.import_module(module_name), func_name)(argv)
        except SystemExit as e:
            code = e.code
    loaded = sorted(h for h in heavy if any(m == h or m.startswith(h + ".") for m in sys.modules))
    out[" ".join([verb, *argv[:2]])] = [code, text.getvalue().splitlines()[-1:], loaded]
print(json.dumps(out))
"""


def test_the_verbs_that_only_play_answer_without_tensordict_torchrl_lightning_or_ray():
    """demo, evaluate of a reference player, advise and play step the env's games without TorchRL
    (about 2.6 s of imports on a 2-core box): a start within a second of ``import torch``."""
    heavy = ("tensordict", "torchrl", "lightning", "ray")
    done = subprocess.run(
        [sys.executable, "-c", PLAY_PROBE.format(heavy=heavy)],
        input="all\nall\naces\nall\nall\nchance\n",  # play: the two turns of the small game
        capture_output=True,
        text=True,
        timeout=300,
    )
    found = json.loads(done.stdout) if done.stdout else {}
    assert len(found) == 5, done.stderr[-2000:]
    for call, (code, last, loaded) in found.items():
        assert code in (0, None), (call, last)
        assert not loaded, f"{call} loaded {loaded}"
    assert "mean" in found["demo --games 2"][1][0], found
    assert found["play --boxes 0"][1][0].startswith("your score: "), found
