"""A study's weights through the hub (a dataset repo on the loopback hub): pushed with a card and every
file's sha256, pulled back into the study folder the repository keeps (its weights removed) or a new
one, byte for byte; a folder of other runs, a revision that does not exist, a repo that is not a
study, a file of the user's and a lying hub each refused in one line, nothing of the user's touched."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from yahtzee_lightning.cli import main
from yahtzee_lightning.study.records import digested_text
from yahtzee_lightning.study.weights import CARD, FILES, study_record

#: Each argv of ``sys.argv[1]`` (a JSON list) through the CLI in one process: its exit code and stderr.
VERBS = """
import contextlib, io, json, sys
from yahtzee_lightning.cli import main
done = []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code
    done.append([code, err.getvalue()])
print(json.dumps(done))
"""


def _verbs(argvs: list[list[str]], env: dict, cwd: Path) -> list[tuple[int, str]]:
    run = subprocess.run(
        [sys.executable, "-c", VERBS, json.dumps(argvs)], env=env, cwd=cwd, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return [tuple(r) for r in json.loads(run.stdout.strip().splitlines()[-1])]


def _files(root: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and "hf_home" not in p.parts}


def _weights(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*.ckpt")}


def test_a_study_pushed_and_pulled_back_is_byte_identical_and_reports_and_resumes(
    finished_study, tmp_path, hub, hub_env, capsys
):
    study = tmp_path / "study"
    shutil.copytree(finished_study, study)
    kept = tmp_path / "kept"  # as the repository keeps it: records, no weights, a note of the user's
    shutil.copytree(finished_study, kept)
    for p in kept.rglob("*.ckpt"):
        p.unlink()
    (kept / "runs" / "notes.txt").write_text("mine")
    fresh = tmp_path / "fresh"
    pushed, kept_pull, fresh_pull = _verbs(
        [
            ["study", "push", str(study), "--repo-id", "alice/tiny-study"],
            ["study", "pull", "alice/tiny-study", str(kept)],
            ["study", "pull", "alice/tiny-study", str(fresh)],
        ],
        hub_env,
        tmp_path,
    )
    assert pushed[0] == kept_pull[0] == fresh_pull[0] == 0, (pushed, kept_pull, fresh_pull)
    repo = hub.state.files("datasets/alice/tiny-study")
    weights = _weights(study)
    assert weights and all(repo[n] == b for n, b in weights.items())  # the weights went as they are
    record = json.loads(repo[FILES])
    assert record["study"] == "tiny" and set(record["files"]) <= set(repo) and "runs/notes.txt" not in repo
    card = repo[CARD].decode()
    assert record["commit"] in card and record["study_file"] in card and "study pull alice/tiny-study" in card
    assert _weights(kept) == weights and (kept / "runs" / "notes.txt").read_text() == "mine"
    assert _weights(fresh) == weights
    for name in record["files"]:
        assert (fresh / name).read_bytes() == (study / name).read_bytes(), name
    # The pulled folder is the study: its report draws T1 as the pushed one did, and a run of its
    # study file resumes it (every run finished: nothing to train, no Ray).
    assert main(["study", "report", str(fresh)]) == 0
    assert (fresh / "report" / "T1.md").read_text() == (finished_study / "report" / "T1.md").read_text()
    assert main(["study", "run", str(finished_study.parent / "tiny.yaml"), "--out", str(fresh)]) == 0
    assert "nothing to train" in capsys.readouterr().err


def _served(finished_study: Path, hub, name: str = "alice/tiny-study", **changes: bytes) -> Path:
    names, record = study_record(finished_study)
    files = {n: (finished_study / n).read_bytes() for n in names} | {FILES: digested_text(record).encode()}
    hub.state.serve(f"datasets/{name}", files | changes)
    return finished_study


def test_a_pull_that_cannot_be_is_one_line_and_touches_nothing_of_the_users(finished_study, tmp_path, hub, hub_env):
    _served(finished_study, hub)
    ckpt = next(n for n in _weights(finished_study))
    _served(finished_study, hub, "alice/tampered", **{ckpt: b"not the weights"})
    hub.state.serve("datasets/alice/notes", {"README.md": b"# notes", "runs/a/seed0/fit.log": b"x"})
    other = tmp_path / "other"  # a folder of another study's runs
    (other / "runs" / "c0" / "seed0").mkdir(parents=True)
    (other / "runs" / "c0" / "seed0" / "history.jsonl").write_text("{}")
    edited = tmp_path / "edited"  # the study's folder, a run's history changed here since
    shutil.copytree(finished_study, edited)
    history = next(edited.glob("runs/*/*/history.jsonl"))
    history.write_text(history.read_text() + "\n")
    for p in edited.rglob("*.ckpt"):
        p.unlink()
    new = str(tmp_path / "new")
    cases = {
        "holds runs that are not in": ["alice/tiny-study", str(other)],
        "has no revision 'v9'": ["alice/tiny-study", new, "--revision", "v9"],
        f"holds no {FILES}, so it is not a study": ["alice/notes", new],
        "does not match its sha256": ["alice/tampered", new],
        "would be overwritten but differ": ["alice/tiny-study", str(edited)],
        "no hub repo by that id": ["alice/nobody", new],
    }
    before = _files(tmp_path)
    done = _verbs([["study", "pull", *argv] for argv in cases.values()], hub_env, tmp_path)
    for (says, argv), (code, err) in zip(cases.items(), done, strict=True):
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and says in lines[0] and "Traceback" not in err, (argv, err)
    assert _files(tmp_path) == before  # nothing of the user's changed, nothing new outside the cache
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("lie", [{"listed": {"runs/../../evil.yaml": 10}}, {"sha": "../../../../x/config"}])
def test_a_lying_hub_is_refused_in_one_line(finished_study, tmp_path, hub, hub_env, lie):
    _served(finished_study, hub)
    hub.state.hostile = lie
    before = _files(tmp_path)
    [(code, err)] = _verbs([["study", "pull", "alice/tiny-study", str(tmp_path / "new")]], hub_env, tmp_path)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "alice/tiny-study" in err, err
    assert _files(tmp_path) == before and not (tmp_path / "new").exists()
