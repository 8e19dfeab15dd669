"""A folder written anew in one step: a writer killed at any step leaves the old folder or the new one
(never a mix), the next writer sweeps what it left, the user's files stay, and two writers of one
folder at once are refused."""

import os
import shutil
from pathlib import Path

import pytest

from yahtzee_lightning import replace
from yahtzee_lightning.manifest import FolderBusy, Manifest
from yahtzee_lightning.replace import replacing

OLD = {"config.json": "old config", "model.safetensors": "old weights", "sub/extra.yaml": "old extra"}
NEW = {"config.json": "new config", "model.safetensors": "new weights", "card.md": "new card"}


def _write(path: Path, files: dict[str, str]) -> None:
    with replacing(path, "test", say=lambda line: None) as tmp:
        for rel, text in files.items():
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / rel).write_text(text)


def _ours(path: Path) -> dict[str, str]:
    return {rel: (path / rel).read_text() for rel in set(OLD) | set(NEW) if (path / rel).is_file()}


def _steps() -> list[str]:
    return ["rename", "replace", "exchange", "link", "rmtree"]


def _killed_at(path: Path, k: int) -> bool:
    """Run a writer in a child process that dies (os._exit, as a kill -9: no cleanup) at its k-th
    step that moves or deletes anything; whether it got that far."""
    pid = os.fork()
    if pid == 0:  # the child: count the steps, die at the k-th
        count = [0]

        def step(real):
            def wrapped(*args, **kwargs):
                count[0] += 1
                if count[0] == k:
                    os._exit(9)
                return real(*args, **kwargs)

            return wrapped

        os.rename, os.replace, os.link = step(os.rename), step(os.replace), step(os.link)
        replace.exchange, replace.shutil.rmtree = step(replace.exchange), step(shutil.rmtree)
        try:
            _write(path, NEW)
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 9


def test_a_writer_killed_at_any_step_leaves_the_old_folder_or_the_new_one(tmp_path):
    steps_seen = 0
    for k in range(1, 40):
        path = tmp_path / f"agent{k}"
        _write(path, OLD)
        (path / "notes.txt").write_text("the user's")
        if not _killed_at(path, k):
            break  # the writer finished before its k-th step: every step has been tried
        steps_seen = k
        state = _ours(path)
        assert state in (OLD, NEW), (k, state)  # whole: the old agent or the new one
        assert (path / "notes.txt").read_text() == "the user's"
        _write(path, NEW)  # the next writer: sweeps the litter and replaces
        assert _ours(path) == NEW and (path / "notes.txt").read_text() == "the user's"
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(f".{path.name}.")] == []
        assert Manifest.read(path).owns("config.json") and not Manifest.read(path).owns("notes.txt")
    assert steps_seen >= 4  # the staging, the swap, moving the old content away, deleting it


def test_a_second_writer_of_the_same_folder_is_refused_in_one_line(tmp_path):
    path = tmp_path / "agent"
    with replacing(path, "first writer", say=lambda line: None) as tmp:
        (tmp / "config.json").write_text("first")
        with pytest.raises(FolderBusy, match=r"in use by pid \d+ .*first writer"), replacing(path, "second"):
            pass
    assert (path / "config.json").read_text() == "first"


def test_the_users_files_and_folders_stay_and_our_old_ones_go(tmp_path):
    path = tmp_path / "agent"
    _write(path, OLD)
    (path / "mine").mkdir()
    (path / "mine" / "notes.md").write_text("keep me")
    (path / "empty").mkdir()
    os.symlink("mine/notes.md", path / "link.md")
    (path / "config.json").write_text("edited by the user")  # no longer provably ours
    said: list[str] = []
    with pytest.raises(RuntimeError), replacing(path, "test", say=said.append) as tmp:
        (tmp / "x").write_text("half")
        raise RuntimeError("the writer failed")  # a failed writer: the folder as it was
    assert (path / "config.json").read_text() == "edited by the user" and not (path / "x").exists()
    with replacing(path, "test", say=said.append) as tmp:
        (tmp / "model.safetensors").write_text("new weights")
    assert (path / "mine" / "notes.md").read_text() == "keep me" and (path / "empty").is_dir()
    assert os.readlink(path / "link.md") == "mine/notes.md"
    assert (path / "config.json").read_text() == "edited by the user"  # the user's now: kept, named
    assert not (path / "sub" / "extra.yaml").exists()  # ours, not in the new content: gone
    assert any("kept" in line and "config.json" in line for line in said)


def test_a_folder_written_anew_keeps_its_mode_and_a_new_one_gets_the_umasks(tmp_path):
    """The sibling the writer fills is private while it is written; the folder that takes the old
    one's place has the old one's mode (a new one: what mkdir gives under the umask)."""
    path = tmp_path / "agent"
    _write(path, OLD)
    assert os.stat(path).st_mode & 0o777 == 0o777 & ~replace.current_umask()
    os.chmod(path, 0o750)
    _write(path, NEW)
    assert os.stat(path).st_mode & 0o777 == 0o750
