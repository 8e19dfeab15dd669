"""The manifest (what a command wrote into a folder) and the one-writer lock, on their own."""

import json
import logging

import pytest

from yahtzee_lightning.manifest import MANIFEST, FolderBusy, Manifest, folder_lock


def _write(folder, name, text="ours"):
    (folder / name).parent.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)


def test_only_unchanged_files_of_ours_are_removed_and_links_are_never_followed(tmp_path, capsys):
    folder, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    for name in ("a.txt", "sub/b.txt", "sub/deeper/c.txt", "edited.txt"):
        _write(folder, name)
    _write(elsewhere, "precious.txt", "mine")
    manifest = Manifest.read(folder)
    manifest.add(["a.txt", "sub/b.txt", "sub/deeper/c.txt", "edited.txt"])
    _write(folder, "edited.txt", "changed by the user")
    _write(folder, "sub/mine.txt", "mine")
    (folder / "sub" / "link").symlink_to(elsewhere)  # a link to a folder of the user's
    (folder / "sub" / "file-link").symlink_to(elsewhere / "precious.txt")
    kept = Manifest.read(folder).remove_owned()
    assert sorted(kept) == ["edited.txt", "sub/mine.txt"]
    err = capsys.readouterr().err
    assert f"kept {folder / 'edited.txt'}" in err and f"kept {folder / 'sub' / 'mine.txt'}" in err
    assert not (folder / "a.txt").exists() and not (folder / "sub" / "deeper").exists()  # emptied folders go too
    assert (elsewhere / "precious.txt").read_text() == "mine" and (folder / "sub" / "link").is_symlink()
    assert Manifest.read(folder).files == {}  # what was removed is no longer listed


def test_a_damaged_manifest_proves_nothing(tmp_path, caplog):
    _write(tmp_path, "a.txt")
    Manifest.read(tmp_path).add(["a.txt"])
    record = json.loads((tmp_path / MANIFEST).read_text())
    record["files"]["b.txt"] = record["files"]["a.txt"]  # an entry added by hand
    (tmp_path / MANIFEST).write_text(json.dumps(record))
    with caplog.at_level(logging.WARNING):
        assert Manifest.read(tmp_path).files == {}
    assert "does not match its sha256" in caplog.text
    assert Manifest.read(tmp_path).remove_owned(say=lambda line: None) == ["a.txt"]
    assert (tmp_path / "a.txt").exists()


def test_a_session_sweeps_what_it_wrote_not_what_was_there(tmp_path):
    _write(tmp_path, "before.txt", "mine")
    manifest = Manifest.read(tmp_path)
    manifest.start_session()
    _write(tmp_path, "runs/written.txt")
    manifest.end_session()
    assert set(Manifest.read(tmp_path).files) == {"runs/written.txt"}


def test_a_second_writer_is_refused_naming_the_first_and_the_lock_is_freed(tmp_path):
    with folder_lock(tmp_path, "yahtzee-lightning test"):
        with pytest.raises(FolderBusy, match=r"in use by pid \d+ on .* \(yahtzee-lightning test\)"):
            with folder_lock(tmp_path, "another"):
                pass
    with folder_lock(tmp_path, "after"):  # released
        pass
