"""A trial's final.json carries its sha256: edited, damaged or cut short, it is named and not used."""

import json
import logging

import pandas as pd
import pytest

from yahtzee_lightning.study.model import StudyError
from yahtzee_lightning.study.records import final_text, read_final


def test_final_json_edited_or_truncated_is_named_and_not_used(tmp_path, caplog):
    path = tmp_path / "final.json"
    record = {"mean": 50.8, "games": 100, "optimal": {"mean": 254.5}}
    path.write_text(final_text(record))
    assert read_final(path) == record
    for damaged in (path.read_text().replace("50.8", "75.5"), path.read_text()[:20]):
        path.write_text(damaged)
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            assert read_final(path) is None
        assert str(path) in caplog.text and "runs again" in caplog.text and "\n" not in caplog.text.strip()
    path.write_text(json.dumps(record))  # written before digests: used, with a warning
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert read_final(path) == record
    assert "carries no sha256" in caplog.text
    assert read_final(tmp_path / "absent.json") is None


def test_history_lines_edited_damaged_or_cut_are_named_and_left_out(tmp_path, caplog):
    from yahtzee_lightning.digest import record_sha256
    from yahtzee_lightning.study.results import _history

    path = tmp_path / "history.jsonl"
    rows = [{"member": 0, "eval/games": g, "eval/mean_score": s} for g, s in ((20, 50.8), (40, 60.1), (60, 70.2))]
    lines = [json.dumps({**r, "sha256": record_sha256(r)}) for r in rows]  # as the study writes them
    lines[1] = lines[1].replace("60.1", "75.5")  # edited by hand
    cut = json.dumps({"member": 0, "eval/games": 80, "eval/mean_score": 80.3})[:25]  # a kill while writing
    path.write_text("\n".join([lines[0], lines[1], "5", lines[2], cut]) + "\n")
    with caplog.at_level(logging.WARNING):
        assert [r["eval/mean_score"] for r in _history(path)] == [50.8, 70.2]
    for line, why in ((2, "does not match its sha256"), (3, "not a JSON object"), (5, "cut short")):
        assert f"{path}:{line}: {why}" in caplog.text
    path.write_text(json.dumps(rows[0]) + "\n")  # written before digests: used, with a warning
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert _history(path) == [rows[0]]
    assert "carry no sha256" in caplog.text


def test_the_reports_fresh_game_cache_and_the_weights_it_plays_are_checked(tmp_path, caplog):
    """T1's fresh-game columns: an edited ``fresh.json`` is computed again, a damaged checkpoint named."""
    from types import SimpleNamespace

    import lightning as L
    import torch

    from yahtzee_lightning.algorithms import Reinforce
    from yahtzee_lightning.study.drawing.tables import FRESH, fresh_scores
    from yahtzee_lightning.study.model import StudyError
    from yahtzee_lightning.study.results import Trial

    run = tmp_path / "runs" / "c-s0"
    tiny = {"d_h": 16, "n_layers": 1, "head_hidden": 16, "evaluations": 1, "eval_games": 2, "final_eval_games": 0}
    model = Reinforce(total_games=20, games_per_batch=20, **tiny)
    L.Trainer(default_root_dir=tmp_path, logger=False, enable_progress_bar=False, num_sanity_val_steps=0).fit(model)
    ckpt = run / "checkpoints" / "last.ckpt"
    model.trainer.save_checkpoint(ckpt)
    (run / "final.json").write_text("{}")
    cells = {"c": SimpleNamespace(final_eval_games=4)}
    ctx = SimpleNamespace(
        out=tmp_path,
        study=SimpleNamespace(cells=cells),
        trials=[Trial("cells", "c", [0], "runs/c-s0")],
    )
    first = fresh_scores(ctx, SimpleNamespace(cell="c"))["mean_score"].tolist()
    cache = json.loads((tmp_path / FRESH).read_text())
    cache = {k: {**v, "mean_score": 999.0} if isinstance(v, dict) else v for k, v in cache.items()}
    (tmp_path / FRESH).write_text(json.dumps(cache))  # edited by hand
    with caplog.at_level(logging.WARNING):
        assert fresh_scores(ctx, SimpleNamespace(cell="c"))["mean_score"].tolist() == first
    assert f"{tmp_path / FRESH}: does not match its sha256" in caplog.text
    (tmp_path / FRESH).unlink()
    state = torch.load(ckpt, map_location="cpu", weights_only=True)
    next(v for k, v in state["state_dict"].items() if v.is_floating_point()).view(-1)[0] += 1.0  # damaged
    torch.save(state, ckpt)
    with pytest.raises(StudyError, match=r"last.ckpt: the weights do not match their sha256"):
        fresh_scores(ctx, SimpleNamespace(cell="c"))


def test_a_committed_reports_edited_reference_json_is_refused(tmp_path, caplog):
    from yahtzee_lightning.digest import record_sha256
    from yahtzee_lightning.study.judging.context import references
    from yahtzee_lightning.study.model import StudyError

    path = tmp_path / "reference.json"  # a report's committed copy: no run folders to compute it again
    ref = {"key": {"games": 4, "seed": 0}, "greedy": {"score": {"mean": 190.2}}}
    path.write_text(json.dumps({**ref, "sha256": record_sha256(ref)}))  # as the report writes it
    assert references(tmp_path, None)["greedy"] == ref["greedy"]
    path.write_text(path.read_text().replace("190.2", "230.2"))
    with caplog.at_level(logging.WARNING), pytest.raises(StudyError, match="reference.json: cannot be trusted"):
        references(tmp_path, None)
    assert f"{path}: does not match its sha256" in caplog.text


def test_a_committed_results_table_that_was_edited_is_refused(tmp_path, caplog):
    """A report drawn from results.csv alone (no run folders to collect it from again) checks it."""
    from yahtzee_lightning.study.results import TABLE, TABLE_DIGEST, load_table, save_table

    table = pd.DataFrame({"cell": ["a", "b"], "mean_score": [210.25, 221.5]})
    save_table(table, tmp_path)
    pd.testing.assert_frame_equal(load_table(tmp_path), table)
    path = tmp_path / TABLE
    path.write_text(path.read_text().replace("221.5", "251.5"))
    with pytest.raises(
        StudyError, match=r"results.csv: does not match its sha256 in results.sha256 \(damaged or edited\)"
    ):
        load_table(tmp_path)
    (tmp_path / TABLE_DIGEST).unlink()  # a table written before digests: used, with a warning
    with caplog.at_level(logging.WARNING):
        assert load_table(tmp_path)["mean_score"].tolist() == [210.25, 251.5]
    assert "carries no sha256" in caplog.text


def test_a_damaged_or_edited_study_plan_is_one_line_naming_it(tmp_path):
    from yahtzee_lightning.digest import record_sha256
    from yahtzee_lightning.study.model import StudyError
    from yahtzee_lightning.study.results import load_plan

    plan = tmp_path / "study.json"
    for text, why in (
        ('{"study": {"name": "s", "pro', "cannot be trusted"),  # cut short
        (json.dumps({"study": {}, "trials": [], "sha256": "0" * 64}), "cannot be trusted"),  # edited
        (json.dumps({"trials": [], "sha256": record_sha256({"trials": []})}), "not a study plan"),
    ):
        plan.write_text(text)
        with pytest.raises(StudyError, match=f"study.json: {why}"):
            load_plan(tmp_path)


def test_a_damaged_sessions_line_is_named_and_left_out(tmp_path, caplog):
    import time

    from yahtzee_lightning.study.records import SESSIONS, log_session

    started = time.time()
    log_session(tmp_path, "yahtzee-lightning study run s.yaml", started, 2, None, end=False)
    with open(tmp_path / SESSIONS, "a") as f:
        f.write('{"command": "cut short\n')  # a kill while writing, or an edit
    with caplog.at_level(logging.WARNING):
        log_session(tmp_path, "yahtzee-lightning study run s.yaml", started, 2, None, end=True)
    assert f"{tmp_path / SESSIONS}:2: cut short" in caplog.text
    (line,) = [json.loads(text) for text in (tmp_path / SESSIONS).read_text().splitlines()]  # damaged one left out
    assert line["wall_clock_s"] is not None and line["cpus"] == 2


def _signed_history(path, scores):
    """A run's history.jsonl as the study writes it (each line signed with its number)."""
    from yahtzee_lightning.study.records import append_lines

    append_lines(path, [{"member": 0, "eval/games": 20 * (i + 1), "eval/mean_score": s} for i, s in enumerate(scores)])


@pytest.mark.parametrize(
    "tamper, line, why",
    [
        ("unsigned", 4, "carries no sha256 while 3 other lines of the file do"),
        ("nan", 4, "carries no sha256 while 3 other lines of the file do"),
        ("reordered", 2, "was written as line 3 (lines reordered"),
    ],
)
def test_a_history_line_that_is_not_the_studys_own_is_refused_not_merged(tmp_path, caplog, tamper, line, why):
    from yahtzee_lightning.study.results import _history

    path = tmp_path / "history.jsonl"
    _signed_history(path, [40.1, 45.2, 49.67])
    lines = path.read_text().splitlines()
    if tamper == "reordered":  # the later line moved up: the earlier one would be "the last" for its key
        lines = [lines[0], lines[2], lines[1]]
        path.write_text("\n".join(lines) + "\n")
    else:  # appended by hand: the same key as the signed row, a better score (or none at all)
        score = "NaN" if tamper == "nan" else "250.0"
        with open(path, "a") as f:
            f.write(f'{{"member": 0, "eval/games": 60, "eval/mean_score": {score}}}\n')
    with caplog.at_level(logging.WARNING):
        scores = [r["eval/mean_score"] for r in _history(path)]
    assert f"{path}:{line}: {why}" in caplog.text
    assert "written before digests" not in caplog.text
    if tamper == "reordered":
        assert scores == [40.1]  # both moved lines are out of place: left out, never taken as the last
    else:
        assert scores == [40.1, 45.2, 49.67]  # the signed row stands


def test_a_run_that_resumed_under_digests_keeps_the_lines_it_wrote_before_them(tmp_path, caplog):
    """Lines written before digests, then the run resumed under them (the long study's first pack):
    its first signed line's number counts the lines before it, so they are used, with one warning.
    A line put in front of a signed file by hand shifts every signed line: it is refused, not used."""
    from yahtzee_lightning.study.records import append_lines, digested_text
    from yahtzee_lightning.study.results import _history

    rows = [{"member": 0, "eval/games": 20 * (i + 1), "eval/mean_score": s} for i, s in enumerate([40.1, 45.2, 49.67])]
    path = tmp_path / "history.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows[:2]))  # before digests
    append_lines(path, rows[2:])  # the run resumed: the study's own line 3, written as line 3
    with caplog.at_level(logging.WARNING):
        scores = [r["eval/mean_score"] for r in _history(path)]
    assert scores == [40.1, 45.2, 49.67]
    assert "its first 2 lines carry no sha256 (written before digests" in caplog.text
    assert "appended or edited by hand" not in caplog.text

    # Signed before lines were numbered (the long study's first pack resumed so): the same.
    path.write_text("".join(json.dumps(r) + "\n" for r in rows[:2]) + digested_text(rows[2]) + "\n")
    assert [r["eval/mean_score"] for r in _history(path)] == [40.1, 45.2, 49.67]

    caplog.clear()
    signed = tmp_path / "signed.jsonl"
    _signed_history(signed, [40.1, 45.2])
    signed.write_text('{"member": 0, "eval/games": 10, "eval/mean_score": 250.0}\n' + signed.read_text())
    with caplog.at_level(logging.WARNING):
        assert _history(signed) == []  # the signed lines no longer sit where they were written
    assert f"{signed}:1: carries no sha256 while 2 other lines of the file do" in caplog.text
    assert "written before digests" not in caplog.text


def test_history_lines_are_numbered_and_a_line_cut_short_does_not_swallow_the_next(tmp_path, caplog):
    from yahtzee_lightning.study.records import read_lines

    path = tmp_path / "history.jsonl"
    _signed_history(path, [40.1])
    with open(path, "a") as f:
        f.write('{"member": 0, "eval/ga')  # a kill while writing
    _signed_history(path, [45.2])  # the run resumed
    with caplog.at_level(logging.WARNING):
        rows = read_lines(path)
    assert [r["eval/mean_score"] for r in rows] == [40.1, 45.2] and all("line" not in r for r in rows)
    assert f"{path}:2: cut short" in caplog.text


def test_a_session_is_clean_when_only_the_study_s_own_records_changed(tmp_path):
    """A study writing into the checkout (docs/study/NAME) changes its own records as it runs: the
    session's line still says clean; an edit anywhere else says not clean."""
    import subprocess

    from yahtzee_lightning.study.records import source_state

    repo = tmp_path / "checkout"
    (repo / "docs" / "study" / "s").mkdir(parents=True)
    (repo / "docs" / "study" / "s" / "manifest.json").write_text("{}")
    (repo / "code.py").write_text("x = 1\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "start"], check=True)
    out = repo / "docs" / "study" / "s"
    assert source_state(out, checkout=repo)["clean"] is True
    (out / "manifest.json").write_text('{"runs": 1}')  # the study's own record, written as it starts
    assert source_state(out, checkout=repo)["clean"] is True
    assert source_state(None, checkout=repo)["clean"] is False  # without the folder named: not clean
    (repo / "code.py").write_text("x = 2\n")  # the code itself
    assert source_state(out, checkout=repo)["clean"] is False
    assert source_state(tmp_path / "elsewhere", checkout=repo)["clean"] is False  # out outside the checkout
