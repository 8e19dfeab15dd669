"""The extras split by use: the base install is the framework (it trains, plays, evaluates, pushes and
pulls) without Ray, pandas, matplotlib, SciPy, Gymnasium or PettingZoo; a verb that needs an extra
says which in one line."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pip's own copy of the same parser
    from pip._vendor import tomli as tomllib

from yahtzee_lightning.extras import EXTRAS, extra_of, missing_line

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _names(requirements: list[str]) -> set[str]:
    """Distribution names of requirement strings, normalised (``ray[tune]>=2`` -> ``ray``)."""
    return {re.split(r"[\[<>=!~; ]", r, maxsplit=1)[0].lower().replace("_", "-") for r in requirements}


def test_the_base_install_holds_no_extras_package_and_each_extra_holds_its_own():
    base = _names(PROJECT["dependencies"])
    extras = PROJECT["optional-dependencies"]
    assert {"torch", "lightning", "torchrl", "tensordict", "huggingface-hub", "safetensors"} <= base
    assert "jsonargparse" in base  # LightningCLI (fit) needs it
    for extra, modules in EXTRAS.items():
        wanted = {m.replace("_", "-") for m in modules}
        assert wanted <= _names(extras[extra]), extra
        assert not wanted & base, extra
    assert any(
        r.startswith("yahtzee_lightning[") and {"study", "gym", "docs"} <= set(re.findall(r"\w+", r)[1:])
        for r in extras["test"]
    )


# The base verbs in one process where the extras' packages are not installed: ``sys.modules[name] =
# None`` is what an import and ``importlib.util.find_spec`` see of a missing package, and the
# metadata lookups (Lightning and torchmetrics ask them, then import) find no distribution.
_BASE = """
import importlib.metadata as metadata
import sys

blocked = sys.argv[1].split(",")
for name in blocked:
    sys.modules[name] = None
found = metadata.distribution


def distribution(name):
    if name.lower().replace("-", "_") in blocked:
        raise metadata.PackageNotFoundError(name)
    return found(name)


metadata.distribution = distribution
metadata.version = lambda name: distribution(name).version
from yahtzee_lightning.cli import main

print("agents", main(["agents"]))
print("evaluate", main(["evaluate", "--agent", "greedy", "--games", "20", "--no-optimal", "--no-regret"]))
tiny = ["--config", "reinforce", "--model.init_args.d_h=16", "--model.init_args.n_layers=1",
        "--model.init_args.head_hidden=16", "--model.init_args.games_per_batch=8",
        "--model.init_args.total_games=16", "--model.init_args.evaluations=1",
        "--model.init_args.eval_games=4", "--model.init_args.final_eval_games=0",
        "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"]
print("fit", main(["fit", *tiny]))
print("study", main(["study", "check", "smoke.yaml"]))
print("report", main(["evaluate", "--agent", "greedy", "--games", "20", "--report", "out"]))
"""


@pytest.mark.slow("a fresh process with the extras blocked runs five verbs, a fit among them: about 10 s")
def test_base_verbs_run_without_the_extras_and_one_that_needs_one_says_which(tmp_path):
    blocked = sorted({m for modules in EXTRAS.values() for m in modules})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", _BASE, ",".join(blocked)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    codes = dict(line.split() for line in done.stdout.splitlines() if re.fullmatch(r"[a-z]+ \d+", line))
    assert codes == {"agents": "0", "evaluate": "0", "fit": "0", "study": "2", "report": "2"}, done.stdout[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("yahtzee-lightning ")]
    assert errors == [
        "yahtzee-lightning study: error: " + missing_line("study", "ray"),
        "yahtzee-lightning evaluate: error: " + missing_line("study", "matplotlib", "--report (its plots)"),
    ]
    assert not (tmp_path / "out").exists()  # refused before any game was played


def test_a_missing_module_of_an_extra_is_one_line_naming_the_extra():
    from yahtzee_lightning.cli import failure_line

    assert extra_of("ray.tune.schedulers") == "study" and extra_of("gymnasium") == "gym" and extra_of("torch") is None
    line = failure_line(ModuleNotFoundError("No module named 'pettingzoo'", name="pettingzoo"))
    assert line == "needs the gym extra (pettingzoo is not installed): pip install 'yahtzee-lightning[gym]'"
    assert failure_line(ModuleNotFoundError("No module named 'nothing_of_ours'", name="nothing_of_ours")) is None
