"""The one description of the machine: what it says, in words, and that benchmarks write it."""

import importlib.util
import json
import os
import platform
from pathlib import Path

import pytest
import torch

from yahtzee_lightning.machine import describe_machine, machine

ROOT = Path(__file__).resolve().parents[1]


def test_machine_says_what_this_machine_is():
    info = machine()
    assert set(info) == {"processor", "cores", "memory_gib", "accelerator", "os", "versions"}
    assert info["processor"] and info["cores"] == os.cpu_count()
    assert info["memory_gib"] is None or info["memory_gib"] > 0
    assert (info["accelerator"] is None) == (not torch.cuda.is_available() and not torch.backends.mps.is_available())
    versions = info["versions"]
    assert versions["python"] == platform.python_version() and versions["torch"] == torch.__version__
    assert versions["yahtzee_lightning"] is not None and versions["lightning"] is not None
    assert json.loads(json.dumps(info)) == info  # it goes into JSON as it is


def test_describe_machine_in_words():
    info = {
        "processor": "Some CPU",
        "cores": 4,
        "memory_gib": 15.5,
        "accelerator": None,
        "os": "Linux 6.1",
        "versions": {"python": "3.11.7", "torch": "2.13.0", "torchrl": None},
    }
    assert describe_machine(info) == "Some CPU, 4 cores, 15.5 GiB, no GPU; Python 3.11.7, torch 2.13.0"
    gpu = {**info, "memory_gib": None, "accelerator": "NVIDIA H100"}
    assert describe_machine(gpu).startswith("Some CPU, 4 cores, NVIDIA H100; ")
    assert describe_machine().startswith(f"{machine()['processor']}, {os.cpu_count()} cores")
    assert f"yahtzee_lightning {machine()['versions']['yahtzee_lightning']}" in describe_machine()


def test_benchmarks_write_the_machine(tmp_path):
    spec = importlib.util.spec_from_file_location("_common", ROOT / "benchmarks" / "_common.py")
    common = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(common)
    common.write_json(str(tmp_path / "out.json"), "example", [{"x": 1}], seeds=2)
    written = json.loads((tmp_path / "out.json").read_text())
    assert written["machine"] == machine() and written["rows"] == [{"x": 1}] and written["seeds"] == 2


def test_the_thread_rule_shares_the_idle_cores_between_processes():
    from yahtzee_lightning.machine import thread_rule

    assert thread_rule(1, cores=2, load=0.0) == 2  # a quiet box: every core
    assert thread_rule(2, cores=2, load=0.0) == 1  # two DDP ranks: one core each
    assert thread_rule(1, cores=2, load=1.2) == 1  # another program holds a core
    assert thread_rule(1, cores=2, load=3.0) == 1  # never fewer than one
    assert thread_rule(4, cores=16, load=2.0) == 4


def test_the_project_chooses_threads_unless_the_user_did(monkeypatch):
    from yahtzee_lightning import machine

    monkeypatch.setattr(machine, "thread_rule", lambda processes=1, **kw: 2 if processes == 1 else 1)
    monkeypatch.setattr(machine, "usable_cores", lambda: 2)
    monkeypatch.delenv(machine._CHOSEN_BY_US, raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # the user's: it stands, torch's threads untouched
    before = torch.get_num_threads()
    assert machine.apply_thread_rule() is None and os.environ["OMP_NUM_THREADS"] == "1"
    monkeypatch.delenv("OMP_NUM_THREADS")
    try:
        assert machine.apply_thread_rule() == 2 and torch.get_num_threads() == 2
        assert machine.apply_thread_rule(processes=2) == 1  # ours: chosen again knowing the ranks
        assert os.environ["OMP_NUM_THREADS"] == "1" and torch.get_num_threads() == 1
        monkeypatch.setenv("OMP_NUM_THREADS", "2")  # changed by someone else (a study's trial): it stands
        assert machine.apply_thread_rule() is None
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("bad", ["0", "3", "two", "-1"])
def test_a_thread_count_the_machine_lacks_is_refused_naming_the_setting(bad, monkeypatch, capsys):
    from yahtzee_lightning import machine
    from yahtzee_lightning.cli import main

    monkeypatch.setattr(machine, "usable_cores", lambda: 2)
    monkeypatch.delenv(machine._CHOSEN_BY_US, raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", bad)
    assert main(["solve", "--help"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"yahtzee-lightning: OMP_NUM_THREADS={bad!r}: must be a whole number in 1..2 (the usable cores)"]


def test_a_checkout_on_the_path_still_names_its_version(monkeypatch):
    """Run from a checkout (PYTHONPATH, as on a lent GPU machine) the package has no installed
    metadata; the machine's description names the package's own version all the same."""
    from importlib import metadata

    from yahtzee_lightning import machine as machine_module
    from yahtzee_lightning._version import __version__

    real = metadata.version

    def not_installed(name: str) -> str:
        if name == "yahtzee_lightning":
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(machine_module.metadata, "version", not_installed)
    assert machine()["versions"]["yahtzee_lightning"] == __version__
