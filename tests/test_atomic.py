"""A file written whole: the old content or the new one under its name, never a part, and no litter."""

import os

import pytest

from yahtzee_lightning.atomic import partial_path, write_text_whole, written_whole


def test_a_file_is_replaced_whole_and_a_failed_write_leaves_the_old_one_and_no_litter(tmp_path):
    path = tmp_path / "deep" / "record.json"
    write_text_whole(path, "old")
    assert path.read_text() == "old" and sorted(p.name for p in path.parent.iterdir()) == ["record.json"]
    with pytest.raises(RuntimeError), written_whole(path) as partial:
        partial.write_text("half of the new")
        raise RuntimeError("killed while writing")
    assert path.read_text() == "old"  # not the half-written new content
    assert sorted(p.name for p in path.parent.iterdir()) == ["record.json"]  # nor its partial file
    write_text_whole(path, "new")
    assert path.read_text() == "new" and sorted(p.name for p in path.parent.iterdir()) == ["record.json"]


def test_the_partial_file_is_hidden_named_by_the_process_and_keeps_the_suffix(tmp_path):
    partial = partial_path(tmp_path / "stages.png")
    assert partial.parent == tmp_path and partial.name.startswith(".stages.png.")
    assert str(os.getpid()) in partial.name and partial.suffix == ".png"  # matplotlib goes by the suffix
