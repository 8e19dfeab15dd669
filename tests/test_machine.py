"""The one description of the machine: what it says, in words, and that benchmarks write it."""

import importlib.util
import json
import os
import platform
from pathlib import Path

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
