"""A study's cells beside a paper's published rows: every seed's line and the paper's in table.csv,
and whether the paper's number falls in our seeds' prediction interval for one new run."""

import csv
import json
import math
from types import SimpleNamespace

import pandas as pd
import pytest
from scipy import stats

from yahtzee_lightning.game import BOX_NAMES
from yahtzee_lightning.study.judging.published import (
    TABLE_COLUMNS,
    band,
    engine_check,
    fill_turns,
    in_whole_games,
    learning_curves,
    matched_arms,
    matched_rows,
    paper_lines,
    per_box_differences,
    seed_lines,
    side_by_side,
    started,
    turn_agreement,
    turn_tops,
    with_arms,
    write_table,
)
from yahtzee_lightning.study.judging.published_file import load_published
from yahtzee_lightning.study.model import StudyError


def test_the_prediction_interval_is_students_for_one_new_seed():
    values = [210.0, 211.0, 212.0]
    b = band(values)
    n, s = 3, pd.Series(values).std()
    half = stats.t.ppf(0.975, n - 1) * s * math.sqrt(1 + 1 / n)
    assert (b.predict_low, b.predict_high) == pytest.approx((b.mean - half, b.mean + half))
    assert b.predict_low < b.low < b.mean < b.high < b.predict_high  # wider than the mean's interval
    assert b.holds(230.38) is False and b.holds(b.mean + 0.9 * half) is True
    assert band([212.0]).holds(212.0) is None  # one seed: no interval, no verdict
    assert band([0.01, 0.02, 0.9], bounds=(0.0, 1.0)).predict_low == 0.0  # a rate's interval stays in [0, 1]


def _published(tmp_path, rows=("a2c_250k", "ppo_50k")):
    per_box = [[1.0 + i, 2.0] for i in range(15)]
    data = {
        "source": "a test",
        "rows": {
            r: {"games": 250_000, "mean": 230.38, "variance": 2503.83, "bonus_rate": 0.1137, "yahtzee_rate": 0.31,
                "share_250": 0.278, "per_box": per_box}
            for r in rows
        },
    }  # fmt: skip
    path = tmp_path / "published.json"
    path.write_text(json.dumps(data))
    return path


def _results(cells: dict[str, list[float]]) -> pd.DataFrame:
    rows = []
    for cell, means in cells.items():
        for seed, mean in enumerate(means):
            rows.append(
                {"cell": cell, "seed": seed, "stage": "final", "status": "done", "games": 250_000,
                 "final_games": 100_000, "mean_score": mean, "sd": 50.0, "upper_bonus_rate": 0.1,
                 "yahtzee_rate": 0.3, "share_at_least_250": 0.25, "upper_bonus_mean": 3.5,
                 **{f"box_mean/{b}": float(i) for i, b in enumerate(BOX_NAMES)}}
            )  # fmt: skip
    rows.append({"cell": "c1", "seed": 9, "stage": "final", "status": "unfinished"})  # not a line
    return pd.DataFrame(rows)


def test_table_csv_holds_each_seed_then_the_papers_line_per_row(tmp_path):
    published = load_published(_published(tmp_path))
    study = SimpleNamespace(
        name="t",
        ablations={"table": SimpleNamespace(cells=[("c1", {"row": "a2c_250k"}), ("c2", {"row": "other"})])},
    )
    cells = matched_rows(study, published)
    assert cells == {"c1": "a2c_250k"}  # a label the paper lacks is not compared
    ours = seed_lines(_results({"c1": [210.0, 211.0, 212.0], "c2": [1.0]}), cells)
    write_table(tmp_path / "table.csv", ours, paper_lines(published, ["a2c_250k"]))
    with (tmp_path / "table.csv").open() as f:
        lines = list(csv.DictReader(f))
    assert tuple(lines[0]) == TABLE_COLUMNS
    assert [line["seed"] for line in lines] == ["0", "1", "2", "paper"]
    assert float(lines[0]["variance"]) == 2500.0 and lines[3]["mean"] == "230.38"
    side = {s["quantity"]: s for s in side_by_side(ours, published, ["a2c_250k"])}
    assert side["mean"]["holds"] is False and side["mean"]["band"].n == 3


def test_a_rows_variant_stands_beside_its_numbers_named_for_the_row_with_a_suffix(tmp_path):
    published = load_published(_published(tmp_path))
    study = SimpleNamespace(
        name="t",
        ablations={
            "table": SimpleNamespace(cells=[("c1", {"row": "ppo_50k"}), ("c2", {"row": "a2c_250k"})]),
            "shaping": SimpleNamespace(cells=[("c6", {"row": "ppo_50k_shaped"}), ("c7", {"row": "ppo_5"})]),
            # an arm's own ablation, before the ablation that names that arm: one more setting changed
            "handling": SimpleNamespace(cells=[("c3", {"h": "replayed"}), ("c8", {"h": "fresh"})]),
            "lr": SimpleNamespace(cells=[("c1", {"lr_schedule": "stepped"}), ("c3", {"lr_schedule": "unstepped"})]),
            "of_two_rows": SimpleNamespace(cells=[("c1", {"x": "a"}), ("c2", {"x": "b"}), ("c4", {"x": "c"})]),
            "two_axes": SimpleNamespace(cells=[("c1", {"a": "1", "b": "1"}), ("c5", {"a": "2", "b": "1"})]),
        },
    )
    cells = matched_rows(study, published)
    arms = matched_arms(study, cells, published)
    assert arms == {
        "c3": ("ppo_50k_unstepped", "ppo_50k"),
        "c6": ("ppo_50k_shaped", "ppo_50k"),
        "c8": ("ppo_50k_unstepped_fresh", "ppo_50k"),
    }
    # an arm: of an ablation of one row on one axis, or a row label extending a published row's name;
    # an arm's arm, named after it; never a cell with a row label of its own (c7's "ppo_5")
    both = with_arms(published, arms)
    assert (
        both["rows"]["ppo_50k_unstepped"] is published["rows"]["ppo_50k"]
        and "ppo_50k_unstepped" not in published["rows"]
    )
    ours = seed_lines(
        _results({"c1": [210.0, 211.0], "c3": [229.0, 231.0, 230.0]}), cells | {"c3": "ppo_50k_unstepped"}
    )
    write_table(tmp_path / "table.csv", ours, paper_lines(both, ["ppo_50k", "a2c_250k"]))
    with (tmp_path / "table.csv").open() as f:
        lines = [(line["row"], line["seed"]) for line in csv.DictReader(f)]
    assert lines == [("ppo_50k", "0"), ("ppo_50k", "1"), ("ppo_50k", "paper"), ("a2c_250k", "paper")] + [
        ("ppo_50k_unstepped", s) for s in ("0", "1", "2")
    ]  # the arm's seeds after the paper's rows, with no paper line of their own
    results = pd.DataFrame(
        {"cell": ["c1", "c3", "c6", "c7"], "stage": ["final", "eval", "final", "final"]}
        | {"status": ["done", "running", "pending", "unfinished"]}
    )
    assert started(results) == {"c1", "c3"}  # a pending variant is left out until it has an evaluation
    by_order = seed_lines(_results({"c1": [1.0], "c9": [2.0]}), {"c9": "ppo_50k", "c1": "ppo_50k_x"})
    assert [line["row"] for line in by_order] == ["ppo_50k", "ppo_50k_x"]  # rows as listed, not by cell id
    side = {(x["row"], x["quantity"]): x for x in side_by_side(ours, both, ["ppo_50k", "ppo_50k_unstepped"])}
    assert side["ppo_50k", "mean"]["holds"] is False and side["ppo_50k_unstepped", "mean"]["holds"] is True


def test_a_published_file_that_lacks_a_column_or_a_study_without_rows_is_refused_in_one_line(tmp_path):
    path = _published(tmp_path)
    data = json.loads(path.read_text())
    del data["rows"]["a2c_250k"]["share_250"]
    path.write_text(json.dumps(data))
    with pytest.raises(StudyError, match="row 'a2c_250k' lacks \\['share_250'\\]"):
        load_published(path)
    path.write_text("[1, 2]")
    with pytest.raises(StudyError, match="not a file of published rows"):
        load_published(path)
    study = SimpleNamespace(name="t", ablations={"a": SimpleNamespace(cells=[("c1", {"lr": "0.1"})])})
    with pytest.raises(StudyError, match="no cell of study 't' has a 'row' label"):
        matched_rows(study, load_published(_published(tmp_path)))


def _box_rows(per_seed: list[float], paper_of: dict[str, float]):
    """One row's seed lines (every box the same values per seed) and its published per-box means."""
    names = [*BOX_NAMES, "upper_bonus"]
    ours = [{"row": "a2c_250k", **{f"box/{b}": v for b in names}} for v in per_seed]
    per_box = [[paper_of.get(b, sum(per_seed) / len(per_seed)), 1.0] for b in names] + [[0.0, 0.0]]
    return ours, {"source": "a test", "rows": {"a2c_250k": {"per_box": per_box}}}


def test_a_boxs_paper_number_is_judged_against_our_prediction_interval_and_its_bonferroni_widening():
    seeds = [12.8, 12.9, 13.0]
    s = pd.Series(seeds).std()
    half95 = stats.t.ppf(0.975, 2) * s * math.sqrt(1 + 1 / 3)
    half_family = stats.t.ppf(1 - 0.05 / 14 / 2, 2) * s * math.sqrt(1 + 1 / 3)  # 14: 13 boxes and the bonus
    just_out, far_out = 12.9 + 1.1 * half95, 12.9 - 1.1 * half_family
    ours, published = _box_rows(seeds, {"fives": just_out, "four_of_a_kind": far_out})
    gaps = {g.name: g for g in per_box_differences(ours, published, ["a2c_250k"])["a2c_250k"]}
    assert (gaps["fives"].outside, gaps["fives"].outside_family) == (True, False)
    assert (gaps["four_of_a_kind"].outside, gaps["four_of_a_kind"].outside_family) == (True, True)
    assert not any(g.outside for name, g in gaps.items() if name not in ("fives", "four_of_a_kind"))
    assert gaps["fives"].family.predict_high == pytest.approx(12.9 + half_family)
    one_seed, published = _box_rows([12.9], {"fives": 99.0})
    assert not per_box_differences(one_seed, published, ["a2c_250k"])["a2c_250k"][4].outside  # no interval


def test_the_page_marks_and_lists_the_boxes_outside_and_the_figure_draws_both_intervals(tmp_path):
    from PIL import Image

    from yahtzee_lightning.study.drawing.published import _page
    from yahtzee_lightning.study.drawing.published_figures import draw_box_differences

    seeds = [12.8, 12.9, 13.0]
    ours, published = _box_rows(seeds, {"fives": 14.0, "sixes": 40.0})
    boxes = per_box_differences(ours, published, ["a2c_250k"])
    page = _page(SimpleNamespace(name="t"), published, ["a2c_250k"], boxes, [], figure=True)
    table = {line.split(" | ")[0].strip("| "): line for line in page.splitlines() if line.startswith("| ")}
    assert table["fives"].endswith("14.00 † |") and table["sixes"].endswith("40.00 ‡ |")
    assert table["ones"].endswith("12.90 |")  # inside: no mark
    assert "0.7 of them are expected outside" in page and "With two seeds" not in page
    two, _ = _box_rows([12.8, 12.81], {})
    two_page = _page(
        SimpleNamespace(name="t"),
        published,
        ["a2c_250k"],
        per_box_differences(two, published, ["a2c_250k"]),
        [],
        figure=True,
    )
    assert "With two seeds (a2c_250k) an interval rests on one difference" in two_page  # its marks read as weak
    listed = [line for line in page.splitlines() if line.startswith("* a2c_250k:")]
    assert len(listed) == 1 and "fives 14.00 against [" in listed[0] and "sixes 40.00" in listed[0]
    assert "(inside [" in listed[0] and "(outside [" in listed[0]
    draw_box_differences(boxes, tmp_path / "boxes.png")
    legend = Image.open(tmp_path / "boxes.png").info["Legend"]
    assert legend == "95 % interval of our mean | one new run: 95 % prediction"


def _each_refused(path, key: str, bad_values: list, message: str) -> None:
    """Each of ``bad_values`` as row a2c_250k's ``key`` in the published file: refused in one line."""
    data = json.loads(path.read_text())
    for bad in bad_values:
        data["rows"]["a2c_250k"][key] = bad
        path.write_text(json.dumps(data))
        with pytest.raises(StudyError, match=f"row 'a2c_250k': {key} must be {message}"):
            load_published(path)


def test_a_published_curve_must_be_increasing_games_with_finite_means(tmp_path):
    path = _published(tmp_path)
    data = json.loads(path.read_text())
    data["rows"]["a2c_250k"]["curve"] = [[2500, 160.0], [5000, 180.0]]
    path.write_text(json.dumps(data))
    assert load_published(path)["rows"]["a2c_250k"]["curve"][1] == [5000, 180.0]
    bad = [[[5000, 180.0], [2500, 160.0]], [[0, 1.0]], [[2500, "x"]], [], [[2500, 1.0, 2.0]]]
    _each_refused(path, "curve", bad, "\\[games, mean score\\] pairs")


def test_a_single_turn_cells_turns_are_counted_as_whole_games_as_the_published_table_counts_them(tmp_path):
    """A single-turn cell trains on turns (13 a game); its table line and its curve count games."""
    published = load_published(_published(tmp_path))
    published["rows"]["a2c_250k"]["curve"] = [[10_400, 150.0]]
    evals = [{"cell": c, "seed": 0, "stage": "eval", "games": g, "mean_score": 160.0} for c, g in
             (("turns", 135_200), ("games", 10_400))]  # fmt: skip
    results = pd.concat([_results({"turns": [200.0], "games": [201.0]}), pd.DataFrame(evals)], ignore_index=True)
    results.loc[(results["cell"] == "turns") & (results["stage"] == "final"), "games"] *= 13  # 250,000 games
    study = SimpleNamespace(
        cells={"turns": SimpleNamespace(task="single_turn"), "games": SimpleNamespace(task="full_game")}
    )
    whole = in_whole_games(results, study)
    lines = seed_lines(whole, {"turns": "a2c_250k", "games": "ppo_50k"})
    assert [(line["row"], line["games"]) for line in lines] == [("a2c_250k", 250_000), ("ppo_50k", 250_000)]
    curves = learning_curves(whole, {"turns": "a2c_250k"}, published, ["a2c_250k"])
    assert curves["a2c_250k"]["matched"] == [(10_400.0, 10.0)]  # 135,200 turns: the paper's point at 10,400 games
    assert seed_lines(results, {"turns": "a2c_250k"})[0]["games"] == 3_250_000  # as trained, before


def test_our_evaluations_are_set_beside_the_papers_curve_at_the_same_games(tmp_path):
    from yahtzee_lightning.study.drawing.published import _curves_section
    from yahtzee_lightning.study.drawing.published_figures import draw_learning_curves

    published = load_published(_published(tmp_path))
    published["rows"]["a2c_250k"]["curve"] = [[10_000, 150.0], [20_000, 170.0], [30_000, 180.0]]
    evals = [
        {"cell": "c1", "seed": s, "stage": "eval", "games": g, "mean_score": m}
        for s, points in ((0, [(10_000, 152.0), (20_000, 175.0)]), (1, [(10_000, 146.0), (15_000, 160.0)]))
        for g, m in points
    ]
    results = pd.concat([_results({"c1": [210.0]}), pd.DataFrame(evals)], ignore_index=True)
    curves = learning_curves(results, {"c1": "a2c_250k"}, published, ["a2c_250k", "ppo_50k"])
    assert list(curves) == ["a2c_250k"]  # ppo_50k has no published curve
    c = curves["a2c_250k"]
    assert c["ours"] == {0: [(10_000.0, 152.0), (20_000.0, 175.0)], 1: [(10_000.0, 146.0), (15_000.0, 160.0)]}
    assert sorted(d for _, d in c["matched"]) == [-4.0, 2.0, 5.0]  # 15,000 games: no point of the paper's there
    section = _curves_section(curves)
    # by quarter of the paper's 30,000 games: none up to 7,500; 10,000 (+2, -4); 20,000 (+5); none after 22,500
    assert (
        "| a2c_250k | 2 | 3 | +1.0 | - / -1.0 / +5.0 / - |" in section and "![learning curves](curves.png)" in section
    )
    draw_learning_curves(curves, tmp_path / "curves.png")
    from PIL import Image

    legend = Image.open(tmp_path / "curves.png").info["Legend"]
    assert legend == "the paper's run | ours, seed 0 | ours, seed 1"


def test_the_median_fill_turn_counts_the_first_turn_as_one_as_the_published_logs_do(tmp_path):
    from yahtzee_lightning.study.drawing.published import _fill_section

    path = _published(tmp_path)
    data = json.loads(path.read_text())
    data["rows"]["a2c_250k"]["fill_turn"] = [float(1 + i) for i in range(13)]
    path.write_text(json.dumps(data))
    published = load_published(path)
    results = _results({"c1": [210.0, 212.0]})
    for seed, offset in ((0, 0.0), (1, 1.0)):  # our turns count from 0: seed 0 fills box i at turn i
        for i, b in enumerate(BOX_NAMES):
            results.loc[(results["seed"] == seed) & (results["cell"] == "c1"), f"fill_turn/{b}"] = i + offset
    ours = seed_lines(results, {"c1": "a2c_250k"})
    turns = fill_turns(ours, published, ["a2c_250k", "ppo_50k"])
    assert list(turns) == ["a2c_250k"]  # ppo_50k has no published fill turns
    assert turns["a2c_250k"][0] == ("ones", 1.5, 1.0) and turns["a2c_250k"][12] == ("chance", 13.5, 13.0)
    assert "| ones | 1.5 / 1.0 |" in _fill_section(turns)
    _each_refused(path, "fill_turn", [[0.0] * 13, [1.0] * 12, ["x"] * 13], "13 median turns, each in 1..13")


def test_each_turns_top_boxes_stand_beside_our_share_of_the_same_boxes_and_our_own_top_three(tmp_path):
    from yahtzee_lightning.study.drawing.published import _turn_section

    path = _published(tmp_path)
    data = json.loads(path.read_text())
    top = [["small_straight", 0.173], ["large_straight", 0.136], ["four_of_a_kind", 0.115]]
    data["rows"]["a2c_250k"]["top_by_turn"] = [top] * 13
    path.write_text(json.dumps(data))
    published = load_published(path)
    results = _results({"c1": [210.0, 212.0], "c2": [200.0]})
    # seed 0 fills box i at turn i + 1; seed 1 fills them in the reverse order; c2's evaluation predates the shares
    shares = {f"fill_share/{turn}/{b}": [math.nan] * len(results) for turn in range(1, 14) for b in BOX_NAMES}
    for seed, order in ((0, BOX_NAMES), (1, BOX_NAMES[::-1])):
        row = results.index[(results["seed"] == seed) & (results["cell"] == "c1")][0]
        for turn in range(1, 14):
            for b in BOX_NAMES:
                shares[f"fill_share/{turn}/{b}"][row] = float(order[turn - 1] == b)
    # the optimal player on seed 1's games only (seed 0's evaluation predates its shares): chance at every turn
    optimal = {f"optimal/{k}": [math.nan] * len(results) for k in shares}
    row = results.index[(results["seed"] == 1) & (results["cell"] == "c1")][0]
    for turn in range(1, 14):
        for b in BOX_NAMES:
            optimal[f"optimal/fill_share/{turn}/{b}"][row] = float(b == "chance")
    results = pd.concat([results, pd.DataFrame(shares | optimal, index=results.index)], axis=1)
    ours = seed_lines(results, {"c1": "a2c_250k", "c2": "ppo_50k"})
    assert "fill_share/1/ones" not in ours[-1]  # c2's seed: no shares, no NaN columns
    assert "optimal/fill_share/1/ones" not in ours[0] and ours[1]["optimal/fill_share/1/chance"] == 1.0
    tops = turn_tops(ours, published, ["a2c_250k", "ppo_50k"])
    assert list(tops) == ["a2c_250k"]  # ppo_50k: neither published tops nor a seed with shares
    n, turns = tops["a2c_250k"].seeds, tops["a2c_250k"].turns
    assert n == 2 and turns[0].turn == 1
    # the seeds part on 6 of the log's 39 entries (each 1 against 0): the yardstick for the log's distance
    assert tops["a2c_250k"].between_seeds == pytest.approx(6 / 39)
    # one seed against the log: 1 - p at the three entries it fills, p at the other 36 (either seed)
    one = (13 * 0.424 - 0.173 - 0.136 - 0.115 + (1 - 0.173) + (1 - 0.136) + (1 - 0.115)) / 39
    assert tops["a2c_250k"].seed_to_log == pytest.approx(one)
    # the optimal player (seed 1's games alone) fills none of the log's three at any turn: |0 - p| each
    optimal_gap = 13 * (0.173 + 0.136 + 0.115) / 39
    assert tops["a2c_250k"].optimal_to_log == pytest.approx(optimal_gap)
    assert turns[0].paper[0] == ("small_straight", 0.173, 0.0)
    assert turns[0].ours == [("ones", 0.5), ("chance", 0.5), ("twos", 0.0)]  # ties in the boxes' order
    assert turns[9].ours[:2] == [("fours", 0.5), ("small_straight", 0.5)]  # turn 10: seed 0's box 10, seed 1's 4
    assert turns[9].paper[0] == ("small_straight", 0.173, 0.5)
    # each of the log's three boxes is ours at two turns (a share of 0.5: both a hit among our three), else 0
    gaps = 11 * (0.173 + 0.136 + 0.115) + 2 * ((0.5 - 0.173) + (0.5 - 0.136) + (0.5 - 0.115))
    assert turn_agreement(turns) == pytest.approx((gaps / 39, 0.136, 6, 39))
    page = _turn_section(tops)
    assert f"| a2c_250k | 2 | 17.48 | 13.60 | 6 of 39 | {100 * one:.2f} | 15.38 | {100 * optimal_gap:.2f} |" in page
    assert "**a2c_250k** (ours: 2 seeds)" in page and "![which boxes each turn fills](turns.png)" in page
    from PIL import Image

    from yahtzee_lightning.study.drawing.published_figures import draw_turn_agreement

    draw_turn_agreement(tops, tmp_path / "turns.png")
    drawn = Image.open(tmp_path / "turns.png").info
    assert drawn["Legend"] == "ours = the log | turns 1-4 | turns 5-9 | turns 10-13"
    # two panels, one legend: the same in each, it would hide the entries a panel names
    draw_turn_agreement({"a2c_250k": tops["a2c_250k"], "twice": tops["a2c_250k"]}, tmp_path / "two.png")
    assert Image.open(tmp_path / "two.png").info["Legend"] == drawn["Legend"]
    # the panel's axes reach past the largest share (50 %, ours) on both sides: the diagonal is square
    assert "x=the paper's log: share of games (%) (0.0, 54.0); y=ours (%) (0.0, 54.0)" in drawn["Axes"]
    assert "| 10 | small_straight 17.3 % (50.0 %), large_straight 13.6 % (0.0 %)" in page
    bad = [[top] * 12, [[["straight", 0.1]]] * 13, [[["yahtzee", 1.5]]] * 13, [[["yahtzee"]]] * 13]
    _each_refused(path, "top_by_turn", bad, "13 turns, each a list of \\[box name, share in 0..1\\]")


@pytest.mark.slow(
    "trains a tiny study of four runs, each with its final evaluation against the exact table, and writes its "
    "report: about 40 s"
)
def test_study_compare_writes_the_table_the_page_and_its_figures_from_a_study_folder(tmp_path):
    """The verb end to end on a finished (tiny) study whose cell carries a ``row`` label, and an
    ablation of that cell whose other arm stands beside the row's numbers; its report then sets no
    cell against the paper's headline (each stands for its own row)."""
    from tiny_study import ROOT as REPO
    from tiny_study import build_study

    from yahtzee_lightning.commands.study import main

    base = str(REPO / "conf" / "reinforce_cpu.yaml")
    arms = {"stepped": {"config": base}, "unstepped": {"config": base, "model.init_args.lr_schedule": "unstepped"}}
    ablations = {
        "table": {"base": base, "axes": {"row": {"a2c_250k": {"config": base}}}},
        "lr": {"base": base, "axes": {"lr_schedule": arms}},
    }
    out = build_study(tmp_path, ablations, False)
    path = _published(tmp_path)
    data = json.loads(path.read_text())
    top = [["small_straight", 0.2], ["chance", 0.1], ["ones", 0.1]]
    data["rows"]["a2c_250k"] |= {"curve": [[16, 10.0], [32, 20.0]], "fill_turn": [7.0] * 13, "top_by_turn": [top] * 13}
    path.write_text(json.dumps(data))
    assert main(["compare", str(out), "--published", str(path)]) == 0
    with (out / "table.csv").open() as f:
        lines = [(line["row"], line["seed"]) for line in csv.DictReader(f)]
    assert lines == [("a2c_250k", "0"), ("a2c_250k", "1"), ("a2c_250k", "paper")] + [
        ("a2c_250k_unstepped", "0"),
        ("a2c_250k_unstepped", "1"),
    ]  # rows the study has, then the arm (the stepped arm is the row's own cell: trained once)
    page = (out / "published" / "index.md").read_text()
    assert "`a2c_250k_unstepped` (beside a2c_250k)" in page and "| a2c_250k_unstepped | mean | 230.38 |" in page
    for section in ("## Per box", "## When each box is filled", "## Which boxes each turn fills", "## Learning curves"):
        assert section in page
    assert "| a2c_250k | 2 | 2 |" in page  # each seed evaluated once, at 32 games: a point of the paper's curve
    assert "| a2c_250k_unstepped | 2 | 2 |" in page  # the arm beside the same curve
    assert all((out / "published" / name).stat().st_size > 0 for name in ("boxes.png", "curves.png", "turns.png"))
    # Its report holds each cell against its own row, never against the paper's one headline.
    from yahtzee_lightning.study.drawing.report import write_report

    write_report(out)
    claims = (out / "report" / "claims.md").read_text()
    assert "| against greedy |" in claims and "| against the paper |" not in claims
    assert "No cell is set against the paper's headline: this study's cells stand for rows" in claims


def test_the_engine_check_pools_each_distinct_game_set_once_against_the_published_dp_player():
    from yahtzee_lightning.study.drawing.published import _engine_section

    names = [*BOX_NAMES]
    rows = []
    for cell, seed, level in (("c1", 0, 1.0), ("c2", 0, 1.0), ("c1", 1, 3.0)):  # c2's seed 0: c1's games again
        rows.append(
            {"cell": cell, "seed": seed, "stage": "final", "status": "done", "final_seed": seed, "final_games": 100,
             "optimal/upper_bonus_rate": level / 35, **{f"optimal/box_mean/{b}": level for b in names}}
        )  # fmt: skip
    published = {"dp_baseline": {"per_box": [[2.0, 4.0]] * 14 + [[254.3, 1089.5]]}}
    check = engine_check(pd.DataFrame(rows), published)
    assert (check["games"], check["sets"]) == (200, 2)
    name, ours, theirs, z = check["boxes"][4]
    assert (name, ours, theirs) == ("fives", 2.0, 2.0) and z == 0.0  # (1 + 3) / 2, not (1 + 1 + 3) / 3
    assert check["boxes"][-1][0] == "upper_bonus" and len(check["boxes"]) == 14  # the total left out
    check = engine_check(pd.DataFrame(rows), {"dp_baseline": {"per_box": [[1.5, 4.0]] * 15}})
    assert check["boxes"][0][3] == pytest.approx(0.5 / math.sqrt(4.0 / 200))
    assert "The largest |z|: 3.54" in _engine_section(check)
    assert engine_check(pd.DataFrame(rows), {"rows": {}}) is None  # no baseline: no section


def test_many_panels_wrap_onto_rows_with_no_empty_panel_left():
    import matplotlib.pyplot as plt

    from yahtzee_lightning.study.drawing.canvas import new_figure

    fig, axes = new_figure(width=12, height=4, ncols=6, per_row=4)
    assert len(axes) == len(fig.axes) == 6  # the last row's two spare places removed
    assert [ax.get_subplotspec().rowspan.start for ax in axes] == [0, 0, 0, 0, 1, 1]
    assert tuple(fig.get_size_inches()) == (12, 8)  # a row's height, twice
    plt.close(fig)
    fig, axes = new_figure(width=6, height=4, ncols=3, per_row=4)
    assert len(fig.axes) == 3 and tuple(fig.get_size_inches()) == (6, 4)  # fewer than a row: one row
    plt.close(fig)


def test_two_names_at_nearly_the_same_place_are_moved_apart():
    """The turns figure names a panel's two farthest entries; two close together printed one name
    over the other."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from yahtzee_lightning.study.drawing.published_figures import separate_names

    fig, ax = plt.subplots(figsize=(4, 4))
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 10)
    at = dict(fontsize=6, xytext=(3, -8), textcoords="offset points")
    names = [ax.annotate("turn 1: four_of_a_kind", (5, 5), **at), ax.annotate("turn 2: chance", (5.1, 5.05), **at)]
    far = ax.annotate("turn 13: yahtzee", (1, 9), **at)
    renderer = fig.canvas.get_renderer()
    assert names[0].get_window_extent(renderer).overlaps(names[1].get_window_extent(renderer))
    separate_names([*names, far])
    first, second = (n.get_window_extent(renderer) for n in names)
    assert not first.overlaps(second) and second.y0 >= first.y1  # moved up, just clear of it
    assert far.xyann == (3, -8)  # a name with room stays where it was put
    plt.close(fig)
