"""Resume (docs/guide.md, "Resuming a run"): no lost work, no silently changed settings, no stale last.ckpt."""

import shutil
from pathlib import Path

import pytest
import torch

from yahtzee_lightning.cli import main
from yahtzee_lightning.loop.resume import checkpoint_problem, last_checkpoint

ROOT = Path(__file__).resolve().parents[2]
# Two boxes in play: 6 steps a game, and the optimal table behind the final evaluation solves in a blink.
TINY = [
    "--model.init_args.d_h=16",
    "--model.init_args.n_layers=1",
    "--model.init_args.head_hidden=16",
    "--model.init_args.boxes=[0, 12]",
    "--model.init_args.games_per_batch=8",
    "--model.init_args.total_games=48",
    "--model.init_args.evaluations=3",
    "--model.init_args.eval_games=20",
    "--model.init_args.final_eval_games=0",
    "--trainer.enable_progress_bar=false",
    "--trainer.enable_model_summary=false",
]


@pytest.fixture(autouse=True)
def _crash_callbacks(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    monkeypatch.chdir(tmp_path)


def _fit(run: Path, *extra: str) -> int:
    logs = [
        f"--trainer.logger.init_args.save_dir={run}",
        f"--trainer.callbacks.init_args.dirpath={run / 'checkpoints'}",
    ]
    return main(["fit", "--config", str(ROOT / "conf" / "reinforce.yaml"), *TINY, *logs, *extra])


def _load(path: Path) -> dict:
    return torch.load(path, map_location="cpu", weights_only=True)


def test_a_kill_before_the_first_interval_leaves_a_checkpoint_that_resumes(tmp_path, caplog):
    run, kill = tmp_path / "run", "--trainer.callbacks+=crash.CrashAfterUpdate"
    with pytest.raises(RuntimeError, match="killed after update 1"):
        _fit(run, kill)  # (save_every_minutes: 5 in the config)
    assert not list(run.rglob("*.ckpt"))  # without a timed checkpoint the kill loses everything
    # Asked to resume, with nothing to resume: said plainly, a new run starts (and is killed again).
    minutes = "--trainer.callbacks.init_args.save_every_minutes=0"  # a timed last.ckpt after every update
    with pytest.raises(RuntimeError, match="killed after update 1"):
        _fit(run, minutes, kill, "--ckpt_path=last")
    assert "nothing to resume in" in caplog.text
    [folder] = (run / "checkpoints").iterdir()  # the new run's own folder
    assert [p.name for p in folder.glob("*.ckpt")] == ["last.ckpt"]  # before any interval's checkpoint
    part = _load(folder / "last.ckpt")
    assert int(part["state_dict"]["updates_done"]) == 1 and part["epoch"] == 0
    assert _fit(run, minutes, "--ckpt_path=last") == 0
    assert list((run / "checkpoints").iterdir()) == [folder]  # resumed in its folder
    end = _load(folder / "last.ckpt")
    assert int(end["state_dict"]["updates_done"]) == 6 and end["global_step"] == 6 and end["epoch"] == 2


def test_a_run_resumed_with_another_budget_stops_at_that_budget(tmp_path):
    run, minutes = tmp_path / "run", "--trainer.callbacks.init_args.save_every_minutes=0"
    # Started as 12 updates in 2 intervals of 6, killed after 4 (a timed last.ckpt after each update).
    big = ["--model.init_args.total_games=96", "--model.init_args.evaluations=2"]
    kill = ["--trainer.callbacks+=crash.CrashAfterUpdate", "--trainer.callbacks.init_args.updates=4"]
    with pytest.raises(RuntimeError, match="killed after update 4"):
        _fit(run, minutes, *big, *kill)
    assert int(_load(run / "checkpoints" / "version_0" / "last.ckpt")["state_dict"]["updates_done"]) == 4
    # Resumed at 6 updates in intervals of 2: the interrupted interval already holds more than 2.
    assert _fit(run, "--ckpt_path=last") == 0
    assert int(_load(run / "checkpoints" / "version_0" / "last.ckpt")["state_dict"]["updates_done"]) == 6
    # Resumed again at 20 updates in intervals of 10: more intervals than the first budget counted.
    more = ["--model.init_args.total_games=160", "--model.init_args.evaluations=2"]
    assert _fit(run, *more, "--ckpt_path=last") == 0
    assert int(_load(run / "checkpoints" / "version_0" / "last.ckpt")["state_dict"]["updates_done"]) == 20


def test_a_finished_run_resumed_with_a_larger_budget_trains_on_to_it(tmp_path, capsys):
    run = tmp_path / "run"
    assert _fit(run) == 0  # 6 updates in 3 intervals: finished
    last = run / "checkpoints" / "version_0" / "last.ckpt"
    assert int(_load(last)["state_dict"]["updates_done"]) == 6
    capsys.readouterr()
    assert _fit(run, "--model.init_args.total_games=96", "--ckpt_path=last") == 0  # same intervals, twice the games
    assert int(_load(last)["state_dict"]["updates_done"]) == 12
    printed = [
        line.split(": ", 1)[1] for line in capsys.readouterr().out.splitlines() if line.startswith("checkpoint: ")
    ]
    assert printed and all((tmp_path / p).is_file() for p in printed)


HOLD = """
import sys, time
from yahtzee_lightning.manifest import folder_lock
with folder_lock(sys.argv[1], "yahtzee-lightning fit --ckpt_path last"):
    print("held", flush=True)
    time.sleep(60)
"""


def test_one_fit_writes_into_a_run_folder_and_a_killed_one_does_not_block(tmp_path, capsys):
    import subprocess
    import sys

    run = tmp_path / "run"
    assert _fit(run, "--model.init_args.total_games=16") == 0
    folder = run / "checkpoints" / "version_0"
    other = subprocess.Popen([sys.executable, "-c", HOLD, str(folder)], stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout.readline().strip() == "held"
        capsys.readouterr()
        with pytest.raises(SystemExit) as e:
            _fit(run, "--model.init_args.total_games=32", "--ckpt_path=last")
        err = capsys.readouterr().err.strip().splitlines()
        assert e.value.code == 2 and f"pid {other.pid}" in err[-1] and str(folder) in err[-1], err
        assert int(_load(folder / "last.ckpt")["state_dict"]["updates_done"]) == 2  # untouched
    finally:
        other.kill()
        other.wait()
    assert _fit(run, "--model.init_args.total_games=32", "--ckpt_path=last") == 0  # the killed hold is gone
    assert int(_load(folder / "last.ckpt")["state_dict"]["updates_done"]) == 4


def test_a_full_disk_while_writing_a_checkpoint_is_one_line(tmp_path, capsys, monkeypatch):
    import errno

    from lightning.fabric.plugins.io import torch_io

    def full(*args, **kwargs):
        raise OSError(errno.EFBIG, "File too large")

    monkeypatch.setattr(torch_io, "_atomic_save", full)
    with pytest.raises(SystemExit) as e:
        _fit(tmp_path / "run")
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 1 and "Traceback" not in "\n".join(err)
    assert (
        "writing a checkpoint or log into" in err[-1] and "File too large" in err[-1] and "--ckpt_path last" in err[-1]
    )


def test_no_checkpoint_path_is_printed_that_does_not_exist(tmp_path):
    from types import SimpleNamespace

    from yahtzee_lightning.commands.fit import next_steps

    gone = SimpleNamespace(last_model_path=str(tmp_path / "moved" / "last.ckpt"), best_model_path="", dirpath=None)
    assert next_steps(SimpleNamespace(checkpoint_callback=gone), None) == ""
    (tmp_path / "here").mkdir()
    (tmp_path / "here" / "last.ckpt").write_bytes(b"x")
    moved = SimpleNamespace(last_model_path=gone.last_model_path, best_model_path="", dirpath=str(tmp_path / "here"))
    assert next_steps(SimpleNamespace(checkpoint_callback=moved), None).startswith("checkpoint: here/last.ckpt")


def test_a_damaged_last_ckpt_falls_back_and_a_moved_run_keeps_its_last_ckpt(tmp_path, caplog, capsys):
    assert _fit(tmp_path / "a", "--trainer.max_epochs=1") == 0
    shutil.move(tmp_path / "a", tmp_path / "b")  # the run folder moves
    ckpts = tmp_path / "b" / "checkpoints" / "version_0"
    last = ckpts / "last.ckpt"
    truncated = ckpts / "truncated.ckpt"
    truncated.write_bytes(last.read_bytes()[:1000])  # as by a kill while writing
    ckpt = _load(last)  # and a last.ckpt whose weights changed, the zip intact: it still loads
    weight = next(v for k, v in ckpt["state_dict"].items() if k.startswith("net.") and v.is_floating_point())
    weight.view(-1)[0] += 1.0
    torch.save(ckpt, last)
    interval = next(p for p in ckpts.iterdir() if p.name.startswith("epoch="))
    truncated.touch(), last.touch()  # both newer than the interval's checkpoint

    for damaged, why in ((truncated, "it does not load"), (last, "the weights do not match their sha256")):
        with pytest.raises(SystemExit) as e:  # a named file must load and match its sha256
            _fit(tmp_path / "b", f"--ckpt_path={damaged}")
        assert e.value.code == 2 and f"{damaged}: the checkpoint is damaged ({why}" in capsys.readouterr().err
    assert _fit(tmp_path / "b", "--ckpt_path=last") == 0
    assert f"{last} is damaged (the weights do not match their sha256" in caplog.text
    assert f"{truncated} is damaged (it does not load" in caplog.text
    assert f"resuming from {interval}" in capsys.readouterr().err
    truncated.unlink()
    end = _load(last)  # written again in the moved folder, not left stale beside a last-v1.ckpt
    assert int(end["state_dict"]["updates_done"]) == 6 and not list(ckpts.glob("last-v*"))


def test_an_override_the_checkpoint_would_drop_is_refused(tmp_path, capsys):
    assert _fit(tmp_path / "a", "--trainer.max_epochs=1") == 0
    ckpt = tmp_path / "a" / "checkpoints" / "version_0" / "last.ckpt"
    config = (tmp_path / "a").rglob("config.yaml")
    before = {p: p.read_text() for p in config}
    for override, named in (
        ("--model.init_args.lr=0.5", "lr=0.5 (the checkpoint's: 0.001)"),
        ("--model.init_args.d_h=32", "d_h=32 (the checkpoint's: 16)"),
    ):
        for ckpt_path in (str(ckpt), "last"):
            with pytest.raises(SystemExit) as e:
                _fit(tmp_path / "a", override, f"--ckpt_path={ckpt_path}")
            err = capsys.readouterr().err
            assert e.value.code == 2 and named in err and "init_from=" in err, err
    assert {p: p.read_text() for p in before} == before  # the refused run recorded nothing
    # Settings the checkpoint does not fix apply: here the budget, extended.
    assert _fit(tmp_path / "a", "--model.init_args.total_games=64", "--ckpt_path=last") == 0
    assert int(_load(ckpt)["state_dict"]["updates_done"]) == 8


def test_a_kill_before_the_final_evaluation_does_not_lose_it(tmp_path, capsys):
    final = "--model.init_args.final_eval_games=30"
    with pytest.raises(RuntimeError, match="killed before the final evaluation"):
        _fit(tmp_path / "a", final, "--trainer.callbacks+=crash.CrashAtTrainEnd")
    assert "mean score" not in capsys.readouterr().out
    assert _fit(tmp_path / "a", final, "--ckpt_path=last") == 0  # training is done: only the evaluation runs
    out = capsys.readouterr().out
    assert "mean score" in out and "30" in out


def test_bad_settings_end_in_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        _fit(tmp_path / "a", "--model.init_args.total_games=4")
    err = capsys.readouterr().err
    assert e.value.code == 2 and "total_games (4) must be at least games_per_batch (8)" in err
    assert "Traceback" not in err and err.count("\n  ") == 0  # one line: no traceback, no wrapped config dump
    with pytest.raises(SystemExit) as e:
        _fit(tmp_path / "a", f"--ckpt_path={tmp_path / 'absent.ckpt'}")
    assert e.value.code == 2 and "no such checkpoint file" in capsys.readouterr().err


def _updates(path: Path) -> int:
    return int(_load(path)["state_dict"]["updates_done"])


def test_each_run_keeps_its_checkpoints_apart_and_last_resumes_the_newest_run(tmp_path, capsys):
    run, ckpts = tmp_path / "run", tmp_path / "run" / "checkpoints"
    for _ in range(2):  # the same config twice, each stopped after its first interval
        assert _fit(run, "--trainer.max_epochs=1") == 0
    assert sorted(p.name for p in ckpts.iterdir()) == ["version_0", "version_1"]  # no last-v1.ckpt beside last.ckpt
    assert sorted(p.name for p in (run / "lightning_logs").iterdir()) == ["version_0", "version_1"]
    older, newer = ckpts / "version_0" / "last.ckpt", ckpts / "version_1" / "last.ckpt"
    older.touch()  # the older run's file written last: still the newest run is resumed
    capsys.readouterr()
    assert _fit(run, "--ckpt_path=last") == 0
    assert f"resuming from {newer}" in capsys.readouterr().err
    assert _updates(newer) == 6 and _updates(older) == 2  # the newest run went on, in its own folder
    assert sorted(p.name for p in ckpts.iterdir()) == ["version_0", "version_1"]


def test_a_run_in_the_flat_layout_of_older_versions_resumes_there(tmp_path, capsys):
    run, ckpts = tmp_path / "run", tmp_path / "run" / "checkpoints"
    assert _fit(run, "--trainer.max_epochs=1") == 0
    for f in (ckpts / "version_0").iterdir():  # as runs were kept before each had its own folder
        f.rename(ckpts / f.name)
    (ckpts / "version_0").rmdir()
    capsys.readouterr()
    assert _fit(run, "--ckpt_path=last") == 0
    assert f"resuming from {ckpts / 'last.ckpt'}" in capsys.readouterr().err
    assert _updates(ckpts / "last.ckpt") == 6 and not [p for p in ckpts.iterdir() if p.is_dir()]  # went on there
    # A new run of the config beside it gets a folder of its own, and is the newest run from then on.
    assert _fit(run, "--trainer.max_epochs=1") == 0
    [new] = [p for p in ckpts.iterdir() if p.is_dir()]
    assert not list(ckpts.glob("last-v*")) and _updates(new / "last.ckpt") == 2
    assert _fit(run, "--ckpt_path=last") == 0
    assert f"resuming from {new / 'last.ckpt'}" in capsys.readouterr().err
    assert _updates(new / "last.ckpt") == 6 and _updates(ckpts / "last.ckpt") == 6


def test_the_newest_runs_last_ckpt_is_found_in_either_layout(tmp_path):
    assert last_checkpoint(tmp_path) is None
    (tmp_path / "last.ckpt").write_bytes(b"")  # the flat layout (a study's trial, or an older run)
    assert last_checkpoint(tmp_path) == tmp_path / "last.ckpt"
    for k in (1, 10, 2):
        (tmp_path / f"version_{k}").mkdir()
    (tmp_path / "version_2" / "last.ckpt").write_bytes(b"")
    assert last_checkpoint(tmp_path) == tmp_path / "version_2" / "last.ckpt"  # by number; version_10 holds none
    (tmp_path / "version_10" / "last.ckpt").write_bytes(b"")
    assert last_checkpoint(tmp_path) == tmp_path / "version_10" / "last.ckpt"


def test_a_checkpoint_written_before_digests_loads_with_one_warning_however_often_it_is_read(tmp_path, caplog):
    """The study's report reads a checkpoint once per ensemble member: one warning a file, not one a read."""
    old = {"state_dict": {"members.0.w": torch.ones(2), "members.1.w": torch.zeros(2)}, "yahtzee_lightning": {}}
    with caplog.at_level("WARNING"):
        for path in (tmp_path / "a.ckpt", tmp_path / "a.ckpt", tmp_path / "b.ckpt"):
            assert checkpoint_problem(old, path) is None
    assert [r.getMessage().split(" carries")[0] for r in caplog.records] == [
        f"warning: {tmp_path / 'a.ckpt'}",
        f"warning: {tmp_path / 'b.ckpt'}",
    ]
    assert "carries no sha256 of its weights" in caplog.text
    broken = {**old, "state_dict": {"w": torch.tensor([float("nan")])}}
    assert "not finite" in checkpoint_problem(broken, tmp_path / "a.ckpt")  # warned before, still checked
