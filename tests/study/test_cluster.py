"""A study on more than one machine: Ray's own multi-node test cluster on this machine (a head and
a worker node of one CPU each). The study runs on both nodes, survives losing the worker mid-run
(the lost cell continues from its checkpoint on the head), and reports; a node that cannot run
the study is named before anything runs; trials ask Ray for a share of a GPU."""

import json
import socket
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from test_smoke_study import SMOKE, _study

from yahtzee_lightning.commands.study import main
from yahtzee_lightning.study.model import StudyError
from yahtzee_lightning.study.results import _history as kept_history
from yahtzee_lightning.study.results import load_plan
from yahtzee_lightning.study.running import cluster as cluster_module
from yahtzee_lightning.study.running.runner import run_study, trainable
from yahtzee_lightning.study.running.trial import trial_config
from yahtzee_lightning.study.spec import load_study

ROOT = Path(__file__).resolve().parents[2]


def _write_study(tmp_path: Path, **changes) -> Path:
    """Two cells (an ensemble of two seeds each: one trial a cell) at the smoke budget, four evaluations."""
    tiny = yaml.safe_load(SMOKE.read_text())["profiles"]["smoke"]["set"]
    study = {
        "name": "two_nodes",
        "base": str(ROOT / "conf" / "a2c_cpu.yaml"),
        "seeds": [0, 1],
        "profiles": {"smoke": {"set": {**tiny, "model.init_args.total_games": 256, "model.init_args.evaluations": 4}}},
        "ablations": {"width": {"axes": {"model.init_args.d_h": [8, 16]}}},
        "exhibits": {"F7": "width", "T1": "all"},
        **changes,
    }
    path = tmp_path / "two_nodes.yaml"
    path.write_text(yaml.safe_dump(study))
    return path


@pytest.fixture(scope="module")
def two_nodes():
    """A head and a worker node, one CPU each, with their own raylets (as on two machines)."""
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    worker = cluster.add_node(num_cpus=1)
    yield cluster, worker
    import ray

    ray.shutdown()  # the checks below connect this process as a driver
    cluster.shutdown()


def _history(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines() if line.strip()]


def test_an_address_that_does_not_answer_is_refused_at_once(tmp_path, capsys):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for address, expected in [(f"127.0.0.1:{port}", "no Ray cluster answers there"), ("nohost", "expected HOST:PORT")]:
        code = main(["run", str(_write_study(tmp_path)), "--out", str(tmp_path / "out"), "--address", address])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and f"--address {address}: {expected}" in err
    assert not (tmp_path / "out" / "runs").exists()


def test_trials_ask_ray_for_a_share_of_a_gpu_and_train_on_it(tmp_path, capsys):
    from ray.tune.registry import get_trainable_cls, register_trainable

    one_cell = {"ablations": {"base": {}}, "exhibits": {"T1": "all"}}
    path = _write_study(tmp_path, gpus_per_trial=0.25, **one_cell)
    study, cli_study = load_study(path), load_study(path, gpus_per_trial=0.5)  # the command line's wins
    cpu_study = load_study(_write_study(tmp_path, **one_cell))
    assert (study.gpus_per_trial, cli_study.gpus_per_trial, cpu_study.gpus_per_trial) == (0.25, 0.5, 0.0)
    for s, share in ((study, 0.25), (cli_study, 0.5)):
        register_trainable(f"gpu_share_{share}", trainable(s, {}))
        request = get_trainable_cls(f"gpu_share_{share}").default_resource_request({})  # what Tune asks Ray for
        assert request.bundles == [{"CPU": 1.0, "GPU": share}]
    register_trainable("cpu_only", trainable(cpu_study, {}))
    assert get_trainable_cls("cpu_only").default_resource_request({}).bundles == [{"CPU": 1.0}]
    cell = next(iter(study.cells.values()))
    trainer = trial_config(cell, [0, 1], tmp_path / "run", {}, gpus=0.25)["trainer"]
    assert (trainer["accelerator"], trainer["devices"]) == ("gpu", 1)
    assert trial_config(cell, [0, 1], tmp_path / "run", {}, gpus=0)["trainer"]["accelerator"] == "cpu"
    for bad in (1.5, -0.1, "half", True):
        with pytest.raises(StudyError, match="gpus_per_trial: must be a number from 0 to 1"):
            load_study(_write_study(tmp_path, gpus_per_trial=bad))
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--gpus-per-trial", "2"]) == 2
    assert "--gpus-per-trial: must be a number from 0 to 1" in capsys.readouterr().err


FAULTS = {
    "not_installed": "yahtzee_lightning does not import there",
    "other_version": "has yahtzee_lightning 0.0.1",
    "config_missing": "lacks the study's config file",
    "folder_unseen": "does not see the study folder",
    "folder_unwritable": "cannot write to the study folder",
}


@pytest.mark.slow("a two-node Ray cluster (started once for this file's slow tests): 15-30 s to start on 2 cores")
@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_node_that_cannot_run_the_study_is_named_before_anything_runs(two_nodes, tmp_path, monkeypatch, fault):
    """The fault is made on one node only, inside its check: Python there is told that the package
    does not exist (``sys.modules``), or reports another version, or the node looks for the config
    files in another checkout, or at a folder of its own disk instead of the study folder, or finds
    its write target taken by a folder."""
    import ray

    cluster, _ = two_nodes
    real = cluster_module.node_probe

    def probe(out: str, token: str, files: list[str]) -> dict:
        import sys as node_sys

        import ray as node_ray

        bad = [n["NodeID"] for n in node_ray.nodes() if n["Alive"]][-1]
        here = node_ray.get_runtime_context().get_node_id()
        if here != bad:
            return real(out, token, files)
        if fault == "not_installed":
            saved, node_sys.modules["yahtzee_lightning"] = node_sys.modules["yahtzee_lightning"], None
            try:
                return real(out, token, files)
            finally:
                node_sys.modules["yahtzee_lightning"] = saved
        if fault == "other_version":
            import yahtzee_lightning

            saved, yahtzee_lightning.__version__ = yahtzee_lightning.__version__, "0.0.1"
            try:
                return real(out, token, files)
            finally:
                yahtzee_lightning.__version__ = saved
        if fault == "config_missing":  # its checkout elsewhere: the cells' base configs are not at that path
            return real(out, token, [f.replace(str(ROOT), str(ROOT) + "-elsewhere") for f in files])
        if fault == "folder_unseen":
            own = Path(out + "-its-own-disk")
            own.mkdir(exist_ok=True)
            return real(str(own), token, files)
        (Path(out) / f"{token}-{here[:12]}").mkdir()
        return real(out, token, files)

    monkeypatch.setattr(cluster_module, "node_probe", probe)
    out = tmp_path / "out"
    with pytest.raises(StudyError) as caught:
        run_study(load_study(_write_study(tmp_path)), out, address=cluster.address)
    bad = [n for n in ray.nodes() if n["Alive"]][-1]["NodeID"]
    message = str(caught.value)
    assert "\n" not in message and f"node {bad[:12]}" in message
    assert FAULTS[fault] in message
    assert not (out / "runs").exists() and not (out / "sessions.jsonl").exists()  # nothing ran
    # the check left no file behind (beside the plan: the manifest of what the study wrote, and its lock)
    files = {p.name for p in out.iterdir() if p.is_file()}
    assert files == {"study.json", "manifest.json", ".yahtzee-lightning.lock"}


@pytest.mark.slow("a two-node Ray cluster that loses a node: about 40 s")
def test_a_study_runs_on_every_node_and_survives_losing_one(two_nodes, tmp_path, default_table):
    """Ordered last: it kills the worker node. Its trial was caught between checkpoints; Tune runs it
    again on the head, where it continues from its newest checkpoint (not from 0)."""
    cluster, worker = two_nodes
    head = cluster.head_node.node_id
    out = tmp_path / "out"
    args = ["run", str(_write_study(tmp_path)), "--out", str(out), "--address", cluster.address, "--report"]
    run = _study(*args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline, caught = time.monotonic() + 300, None
    while caught is None and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
        for history in out.glob("runs/*/*/history.jsonl"):
            folder = history.parent
            on_worker = any(row.get("node") == worker.node_id for row in _history(folder))
            if on_worker and list(folder.glob("checkpoints/*.ckpt")) and not (folder / "final.json").exists():
                caught = folder
    assert caught is not None, "the study ended (or hung) before a trial on the worker node could be caught"
    cluster.remove_node(worker, allow_graceful=False)
    _, err = run.communicate(timeout=240)
    assert run.returncode == 0, err[-3000:]
    assert "2 nodes checked" in err and "retried from its newest checkpoint" in err

    # The lost cell continued on the head from its checkpoint: its first evaluations stay the worker's.
    rows = _history(caught)
    nodes = [row["node"] for row in rows]
    assert nodes[0] == worker.node_id and nodes[-1] == head and set(nodes) == {worker.node_id, head}
    assert "resuming from" in (caught / "fit.log").read_text()
    # An evaluation the worker wrote after its newest checkpoint (the kill fell between the two) is
    # evaluated again on the head: the file keeps both, the study reads the head's, and none is lost.
    kept = kept_history(caught / "history.jsonl")
    assert [(row["member"], row["epoch"]) for row in kept] == [(m, e) for m in (0, 1) for e in range(4)]
    assert {(row["member"], row["epoch"]) for row in rows} == {(row["member"], row["epoch"]) for row in kept}
    for key in {(r["member"], r["epoch"]) for r in rows}:
        twice = [r["node"] for r in rows if (r["member"], r["epoch"]) == key]
        assert len(twice) == 1 or twice == [worker.node_id, head]
    assert json.loads((caught / "final.json").read_text())["node"] == head

    table = pd.read_csv(out / "results.csv")
    study, trials = load_plan(out)
    finals = table[table["stage"] == "final"]
    assert len(finals) == 4 and set(finals["status"]) == {"done"} and set(finals["node"]) <= {head, worker.node_id}
    assert set(table.loc[table["stage"] == "eval", "node"]) == {head, worker.node_id}  # cells ran on both nodes
    assert table[table["stage"] == "eval"].groupby(["run_dir", "seed"]).size().eq(4).all()  # none lost or doubled
    manifest = json.loads((out / "report" / "exhibits.json").read_text())
    drawn = set(study.exhibits) | {"A1", "A2", "A3"}  # median and IQM, P(improvement), profiles: always
    assert set(manifest) == drawn and all(entry["points"] > 0 for entry in manifest.values())
    assert len(trials) == 2 and all((out / t.run_dir / "final.json").exists() for t in trials)
