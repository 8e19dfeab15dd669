"""The report's judging machinery: Holm's correction, the aggregates beside the mean (median, IQM,
probability of improvement, performance profiles, stratified bootstrap), contrasts for factorial
axes, hypotheses judged with their direction, and collapsed members found from their last evaluations."""

import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from yahtzee_lightning.study.hypothesis_file import Hypothesis
from yahtzee_lightning.study.judging import hypotheses
from yahtzee_lightning.study.judging.factorial import factorial_claims
from yahtzee_lightning.study.judging.stats import (
    bootstrap,
    contrast,
    holm,
    iqm,
    paired,
    performance_profile,
    probability_of_improvement,
    welch,
)
from yahtzee_lightning.study.model import Ablation
from yahtzee_lightning.study.results import DEAD_KEEP, collapse


def test_holm_multiplies_the_smallest_p_by_the_family_size_and_keeps_the_order():
    raw = [0.01, 0.04, 0.03, math.nan, 0.5]
    adjusted = holm(raw)
    assert adjusted[0] == pytest.approx(0.04) and adjusted[2] == pytest.approx(0.09)
    assert adjusted[1] == pytest.approx(0.09)  # 2 x 0.04 = 0.08, raised to the step before it
    assert math.isnan(adjusted[3]) and adjusted[4] == pytest.approx(0.5)
    assert all(a >= r for a, r in zip(adjusted, raw, strict=True) if not math.isnan(r))


def test_the_aggregates_beside_the_mean():
    from scipy.stats import trim_mean

    x = [95.0, 97.0, 98.0, 204.0, 210.0, 99.0, 101.0, 200.0]
    assert iqm(x) == pytest.approx(trim_mean(x, 0.25))
    assert probability_of_improvement([3, 4], [1, 2]) == 1.0
    assert probability_of_improvement([2, 2], [2, 2]) == 0.5
    assert probability_of_improvement([1, 3], [2, 2]) == 0.5
    est, low, high = bootstrap(np.median, x)
    assert est == np.median(x) and low <= est <= high
    assert bootstrap(np.median, x) == (est, low, high)  # seeded: the same interval every time
    assert np.isnan(bootstrap(np.mean, [1.0])[1])
    profile = performance_profile([1.0, 2.0, 3.0, 4.0], np.array([0.0, 2.5, 5.0]))
    assert profile.tolist() == [1.0, 0.5, 0.0]


def test_a_contrast_of_two_cells_is_welchs_test_and_a_pairing_uses_each_seeds_own_reference():
    a, b = [201.0, 202.0, 199.5], [180.0, 181.5, 179.0, 182.0]
    c, w = contrast([b, a], [-1, 1]), welch(a, b)
    assert (c.effect, c.low, c.high, c.p) == pytest.approx((w.effect, w.low, w.high, w.p))
    # Greedy scores 215-219 on each seed's games: pairing removes the games' share of the spread.
    p = paired([220.0, 224.0, 223.5], [215.5, 219.3, 219.0])
    assert p.effect == pytest.approx(np.mean([4.5, 4.7, 4.5])) and p.resolved and "paired" in p.test


def test_a_member_whose_heads_died_at_its_last_evaluations_is_collapsed_from_when_they_died():
    def ev(games, ev, ent, top3=0.4, score=150.0):
        return {
            "games": games,
            "explained_variance": ev,
            "entropy_roll": ent,
            "top3_keep_share": top3,
            "mean_score": score,
        }

    dead = [ev(1000, 0.5, 2.0), ev(2000, 0.0, 3.46), ev(3000, 0.0, 3.462), ev(4000, 0.0, 3.461)]
    c = collapse(dead)
    assert c == {"collapsed": True, "collapse": "random keeps and value head", "collapsed_at": 2000}
    recovered = [ev(1000, -0.07, 2.0), ev(2000, 0.66, 1.9), ev(3000, 0.72, 1.8)]
    assert collapse(recovered)["collapsed"] is False
    once = [ev(1000, 0.5, 2.0), ev(2000, 0.5, 2.0), ev(3000, 0.005, 2.0)]  # one evaluation is not its last ones
    assert collapse(once)["collapsed"] is False
    keep = [ev(1000, 0.5, DEAD_KEEP + 0.01), ev(2000, 0.4, DEAD_KEEP + 0.01)]
    assert collapse(keep)["collapse"] == "random keeps"
    # A keep head narrowed onto three patterns (the optimal player's top three: 40 % of its keeps).
    narrow = [ev(1000, 0.5, 1.0, top3=0.5), ev(2000, 0.5, 0.2, top3=0.95), ev(3000, 0.5, 0.1, top3=1.0)]
    assert collapse(narrow) == {"collapsed": True, "collapse": "three keeps", "collapsed_at": 2000}
    # A score that fell from its best (an agent that peaked at 180 and ends near 60), and one that dipped.
    fell = [ev(1000, 0.5, 1.0, score=s) for s in (120.0, 180.0, 170.0, 100.0, 60.0)]
    fell = [e | {"games": 1000 * (i + 1)} for i, e in enumerate(fell)]
    assert collapse(fell) == {"collapsed": True, "collapse": "score fell", "collapsed_at": 4000}
    assert collapse(fell, full_game=False)["collapsed"] is False  # a single-turn agent does not train this score
    dipped = fell[:4] + [fell[4] | {"mean_score": 175.0}]
    assert collapse(dipped)["collapsed"] is False


def _context(
    cells: dict[str, list[float]], hyps: list[Hypothesis], extra=None, axes=("algorithm",), labels=None, size=None
):
    rows = []
    for cid, values in cells.items():
        for seed, v in enumerate(values):
            row = {"cell": cid, "stage": "final", "status": "done", "seed": seed, "mean_score": v}
            rows.append(row | ((extra or {}).get(cid, {}).get(seed, {})))
    cell_labels = labels or {cid: {"algorithm": cid} for cid in cells}
    ab = Ablation("algorithm", list(axes), [(cid, cell_labels[cid]) for cid in cells], list(range(8)))
    games, overrides = size or (1_000_000, {})  # the paper's agent unless named
    sized = {cid: SimpleNamespace(total_games=games, task="full_game", overrides=overrides) for cid in cells}
    study = SimpleNamespace(ablations={"algorithm": ab}, hypotheses={h.id: h for h in hyps}, cells=sized)
    return SimpleNamespace(study=study, table=pd.DataFrame(rows))


def test_hypotheses_are_judged_in_their_direction_with_holms_correction():
    cells = {
        "a2c": [230.0, 231.0, 229.5, 230.5],
        "reinforce": [200.0, 201.0, 199.0, 200.5],
        "ppo": [230.2, 229.8, 230.4, 229.9],
    }
    greedy = {"a2c": {s: {"greedy/mean_score": 215.0 + s} for s in range(4)}}
    hyps = [
        Hypothesis("H1", "A2C beats REINFORCE", "algorithm", "mean_score", ["a2c", "reinforce"], "greater"),
        Hypothesis("H2", "REINFORCE beats A2C", "algorithm", "mean_score", ["reinforce", "a2c"], "greater"),
        Hypothesis("H3", "either", "algorithm", "mean_score", ["ppo", "a2c"], "either"),
        Hypothesis("H4", "A2C above greedy", "algorithm", "mean_score", ["a2c", "greedy"], "greater"),
        Hypothesis("H5", "A2C scores 241.78", "algorithm", "mean_score", ["a2c", 241.78], "equal"),
    ]
    judged = {j.hypothesis.id: j for j in hypotheses.judge(_context(cells, hyps, greedy))}
    assert judged["H1"].verdict == hypotheses.CONFIRMED
    assert judged["H2"].verdict == hypotheses.CONTRADICTED
    assert judged["H3"].verdict == hypotheses.UNRESOLVED
    assert judged["H4"].verdict == hypotheses.CONFIRMED and judged["H4"].comparison.test == "paired t-test"
    assert judged["H5"].verdict == hypotheses.CONTRADICTED  # a value the results are clearly below
    raw = sorted(j.comparison.p for j in judged.values())
    assert min(j.p_holm for j in judged.values()) == pytest.approx(min(1.0, 5 * raw[0]))


def test_a_claim_confirmed_below_the_papers_scale_says_at_which_and_one_about_the_papers_agent_is_not_testable():
    cells = {"a2c": [230.0, 231.0, 229.5, 230.5], "reinforce": [200.0, 201.0, 199.0, 200.5]}
    hyps = [
        Hypothesis("H1", "A2C beats REINFORCE", "algorithm", "mean_score", ["a2c", "reinforce"], "greater"),
        Hypothesis("H11", "A2C's median", "algorithm", "mean_score", ["a2c", 241.78], "greater", scale="paper"),
    ]
    small = (500_000, {"model.init_args.d_h": 128, "model.init_args.n_layers": 2})
    judged = {j.hypothesis.id: j.verdict for j in hypotheses.judge(_context(cells, hyps, size=small))}
    assert judged == {"H1": "confirmed at this scale (128 x 2, 500,000 games)", "H11": hypotheses.NOT_TESTABLE}
    judged = {j.hypothesis.id: j.verdict for j in hypotheses.judge(_context(cells, hyps))}  # the paper's size
    assert judged == {"H1": hypotheses.CONFIRMED, "H11": hypotheses.CONTRADICTED}
    # The published code's network (trunk 600 x 2, a 600-unit layer in each head) at 250,000 games
    code = (250_000, {"model.init_args.d_h": 600, "model.init_args.n_layers": 2, "model.init_args.head_hidden": 600})
    judged = {j.hypothesis.id: j.verdict for j in hypotheses.judge(_context(cells, hyps, size=code))}
    assert judged["H1"] == "confirmed at this scale (the paper's network, 250,000 games)"
    wide = (1_000_000, {"model.init_args.d_h": 600, "model.init_args.n_layers": 1, "model.init_args.head_hidden": 600})
    judged = {j.hypothesis.id: j.verdict for j in hypotheses.judge(_context(cells, hyps, size=wide))}
    assert judged["H1"] == "confirmed at this scale (600 x 1, 1,000,000 games)"  # one layer fewer than the paper's


def test_a_two_axis_ablation_is_analysed_as_a_factorial():
    cells, labels = {}, {}
    residuals = np.array([-1.0, -0.5, 0.0, 0.2, 0.5, 0.8])
    for w, width_effect in (("64", 0.0), ("256", 8.0)):
        for d, depth_effect in (("2", 0.0), ("3", -6.0)):
            cid = f"w{w}d{d}"
            cells[cid] = list(200 + width_effect + depth_effect + np.roll(residuals, len(cells)))
            labels[cid] = {"model.init_args.d_h": w, "model.init_args.n_layers": d}
    ctx = _context(cells, [], axes=("model.init_args.d_h", "model.init_args.n_layers"), labels=labels)
    rows = {r[1]: r for r in factorial_claims(ctx, "algorithm")}
    depth = rows["final mean score: main effect of n_layers 3 vs 2 (factorial)"]
    assert depth[2].startswith("-6.0 [") and "**an effect**" in depth[3]
    width = rows["final mean score: main effect of d_h 256 vs 64 (factorial)"]
    assert width[2].startswith("+8.0 [") and "**an effect**" in width[3]
    interaction = next(r for k, r in rows.items() if "interaction" in k)
    assert interaction[2].startswith("+0.0 [") and "not resolved" in interaction[3]  # additive by construction


def test_a_session_records_its_commit_and_the_report_names_runs_from_before_a_change(tmp_path):
    import time

    from yahtzee_lightning.study.judging.provenance import RESULT_CHANGES, provenance_lines
    from yahtzee_lightning.study.records import SESSIONS, git, log_session, read_lines

    log_session(tmp_path, "study run x", time.time(), 2, None, end=True)
    (line,) = read_lines(tmp_path / SESSIONS)
    assert line["commit"] == git("rev-parse", "HEAD") and len(line["commit"]) == 40
    assert line["clean"] == (git("status", "--porcelain", "--untracked-files=no") == "")
    change = next(iter(RESULT_CHANGES))
    old = {"started": "2026-11-25 07:15:31 UTC", "commit": None, "clean": None}  # before commits were recorded
    lines = provenance_lines([old, line])
    assert f"`{line['commit'][:10]}`" in lines[0] and "not recorded" in lines[0]
    assert f"Trained before `{change[:7]}`" in lines[1] and "1 of 2 sessions (2026-11-25 07:15:31 UTC" in lines[1]


def test_a_session_keeps_the_code_it_started_with_and_names_a_change_and_a_dirty_tree(tmp_path, monkeypatch, capsys):
    """A session's line keeps the commit it started with; a checkout changed under it (a commit
    while trials were still to start) is recorded beside it; a tree with uncommitted changes is
    named on stderr when the session starts, not only in the file."""
    import time

    from yahtzee_lightning.study import records

    states = iter(
        [
            {"commit": "a" * 40, "clean": True},  # session 1 starts clean ...
            {"commit": "a" * 40, "clean": True},  # ... and ends on the same code
            {"commit": "b" * 40, "clean": False},  # session 2 starts with edits ...
            {"commit": "c" * 40, "clean": True},  # ... and ends after a commit
        ]
    )
    monkeypatch.setattr(records, "source_state", lambda out=None: next(states))
    for session, started in enumerate((time.time() - 100, time.time())):
        records.log_session(tmp_path, f"study run {session}", started, 2, None, end=False)
        err = capsys.readouterr().err
        assert ("uncommitted changes" in err) == (session == 1) and ("b" * 10 in err) == (session == 1)
        records.log_session(tmp_path, f"study run {session}", started, 2, None, end=True)
    first, second = records.read_lines(tmp_path / records.SESSIONS)
    assert (first["commit"], first["clean"], "source_at_end" in first) == ("a" * 40, True, False)
    assert (second["commit"], second["clean"]) == ("b" * 40, False)
    assert second["source_at_end"] == {"commit": "c" * 40, "clean": True}
    assert second["wall_clock_s"] is not None
    from yahtzee_lightning.study.judging.provenance import provenance_lines

    lines = provenance_lines([first, second])
    assert sum("checkout changed while a session ran" in x for x in lines) == 1
    assert f"{second['started']}, to `{'c' * 10}`" in " ".join(lines)
    # Sessions of one commit are counted, each tree state with its number.
    mixed = provenance_lines([first, first | {"clean": False}, second])[0]
    assert f"`{'a' * 10}` (2 sessions: 1 clean tree, 1 uncommitted changes)" in mixed
    assert f"`{'b' * 10}` (1 session, uncommitted changes)" in mixed


def test_a_spread_needs_three_seeds_a_side():
    from yahtzee_lightning.study.judging.stats import spread

    assert math.isnan(spread([1.0, 9.0], [4.0, 5.0]).p)  # two seeds: both equally far from their median
    wide = spread([150.0, 200.0, 100.0, 210.0, 95.0, 205.0], [225.0, 226.0, 224.5, 225.5, 226.5, 224.0])
    assert wide.effect > 0 and wide.p < 0.05 and wide.resolved


def test_the_reports_first_lines_say_where_the_network_and_budget_are_smaller_than_the_papers():
    from pathlib import Path

    from yahtzee_lightning.study.judging.provenance import setting_lines
    from yahtzee_lightning.study.model import Cell

    conf = Path(__file__).resolve().parents[2] / "conf"

    def line(cells: dict) -> str:
        return setting_lines(SimpleNamespace(study=SimpleNamespace(cells=cells)))[0]

    small = {"model.init_args.d_h": 128, "model.init_args.n_layers": 2}
    cells = {
        f"c{i}": Cell(f"c{i}", str(conf / name), small, total_games=500_000)
        for i, name in enumerate(("reinforce.yaml", "a2c.yaml", "ppo.yaml"))
    }
    text = line(cells)
    assert "trunk 128 x 2 with 256-unit head layers: smaller than the paper's (its code's 600 x 3:" in text
    assert "the same for every cell" in text and "Budget: 500,000 games a run" in text and "): fewer.**" in text
    # The drafts' reading of "600 x 3" (a trunk of three, 256-unit heads) has more layers than the code's
    drafts = {k: Cell(k, c.base, {}, total_games=1_000_000) for k, c in cells.items()}
    assert "as large as the paper's" in line(drafts) and "fewer" not in line(drafts)
    # The published code's recipes: its network exactly, at its rows' budgets
    paper = {
        f"p{i}": Cell(f"p{i}", str(conf / "paper" / name), {}, total_games=games)
        for i, (name, games) in enumerate((("a2c_250k.yaml", 250_000), ("a2c_1m.yaml", 1_000_000)))
    }
    text = line(paper)
    assert text.startswith("**Networks of the full-game cells: the paper's network (its code's 600 x 3: trunk 600 x 2")
    assert "smaller" not in text and "250,000 / 1,000,000 games a run" in text and "fewer in some cells" in text


def test_an_axis_of_two_values_gets_its_upper_bonus_rate_compared_beside_its_ranked_scores():
    cells = {"lam05": [226.0, 224.0, 230.0, 228.0], "lam095": [225.0, 227.0, 225.0, 228.0]}
    bonus = {"lam05": [0.12, 0.10, 0.14, 0.15], "lam095": [0.27, 0.26, 0.30, 0.32]}
    extra = {c: {s: {"upper_bonus_rate": b} for s, b in enumerate(v)} for c, v in bonus.items()}
    labels = {"lam05": {"model.init_args.gae_lambda": "0.5"}, "lam095": {"model.init_args.gae_lambda": "0.95"}}
    ctx = _context(cells, [], extra, axes=("model.init_args.gae_lambda",), labels=labels)
    rows = factorial_claims(ctx, "algorithm")
    assert [r[1] for r in rows] == ["upper-bonus rate, points of %: gae_lambda 0.95 vs 0.5 (factorial)"]
    assert rows[0][2].startswith("+16.0 [") and "**an effect**" in rows[0][3]  # 28.75 - 12.75 points of %


def test_a_single_turn_cells_budget_is_said_in_turns_beside_the_full_game_cells_games():
    from yahtzee_lightning.study.judging.context import budget_text
    from yahtzee_lightning.study.model import Cell

    full = [Cell(f"c{g}", "x.yaml", {}, "PPO", total_games=g) for g in (250_000, 50_000, 250_000)]
    single = Cell("s", "y.yaml", {}, "REINFORCE", task="single_turn", total_games=3_380_000)
    assert budget_text(full) == "50,000 / 250,000 games per run"
    assert (
        budget_text([*full, single])
        == "50,000 / 250,000 games per run and 3,380,000 turns per run of a single-turn cell"
    )
    assert budget_text([single], per="") == "3,380,000 turns of a single-turn cell"


def test_a_factorial_contrast_that_needs_a_cell_without_a_finished_seed_is_pending_not_a_nan():
    """A study still running: the arm with no finished seed is named pending, as its ranked pair is."""
    from yahtzee_lightning.study.judging.claims import PENDING

    cells = {"replayed": [226.0, 224.0], "as_published": []}
    extra = {"replayed": {s: {"upper_bonus_rate": b} for s, b in enumerate([0.12, 0.10])}}
    labels = {c: {"model.init_args.handling": c} for c in cells}
    ctx = _context(cells, [], extra, axes=("model.init_args.handling",), labels=labels)
    (row,) = factorial_claims(ctx, "algorithm")
    assert row[1] == "upper-bonus rate, points of %: handling as_published vs replayed (factorial)"
    assert row[2:] == ["a cell without a finished seed yet", PENDING]


def test_a_cell_at_another_network_size_is_set_against_its_recipe_at_the_same_games_trained():
    """The paper's 600 x 3 A2C (300,000 games) against the study's 128 x 2 A2C of the same recipe at that
    one's evaluation nearest 300,000 games, not its 500,000-game finals: width apart, not budget."""
    from yahtzee_lightning.study.chain import size_twins
    from yahtzee_lightning.study.judging.claims import size_claims
    from yahtzee_lightning.study.judging.context import Series
    from yahtzee_lightning.study.model import Cell

    def cell(cid, d_h, games, **more):
        keys = {"model.init_args.d_h": d_h, "model.init_args.total_games": games, "model.init_args.lr": 1e-4}
        return Cell(cid, "conf/a2c.yaml", keys | more, "A2C", total_games=games)

    cells = {
        "small": cell("small", 128, 500_000),
        "wide": cell("wide", 600, 300_000),
        "short": cell("short", 600, 100_000),  # the wide network on a shorter budget: not another size
        "other": cell("other", 128, 500_000, **{"model.init_args.lr": 1e-3}),  # another recipe
    }
    ablations = {
        "algorithm": Ablation("algorithm", ["algorithm"], [("small", {"algorithm": "a2c"}), ("other", {})], [0, 1, 2]),
        "advantages": Ablation("advantages", ["advantages"], [("small", {"advantages": "raw"})], [0, 1, 2]),
        "width": Ablation("width", ["width"], [("wide", {"width": "600x3"}), ("short", {"width": "s"})], [0, 1, 2]),
    }
    study = SimpleNamespace(cells=cells, ablations=ablations)
    assert size_twins(study, "wide") == [("algorithm", "small")]  # once, though two ablations share it
    assert size_twins(study, "small") == [] and size_twins(study, "other") == []
    assert size_twins(study, "short") == [("algorithm", "small")]  # "wide": the same network

    games = [250_000, 300_000, 325_000, 500_000]
    small_evals = pd.DataFrame(
        [{"seed": s, "games": g, "mean_score": 150.0 + g / 10_000 + s} for s in range(3) for g in games]
    )
    wide = pd.DataFrame({"seed": [0, 1, 2], "mean_score": [201.0, 202.0, 203.0], "status": "done"})
    series = {
        "algorithm": [Series("A2C", "algorithm", "small", small_evals, pd.DataFrame())],
        "width": [Series("600x3", "width", "wide", pd.DataFrame(), wide)],
    }
    ctx = SimpleNamespace(study=study, series=lambda name: series.get(name, []))
    (row,) = size_claims(ctx, "width")
    at_300k = [180.0, 181.0, 182.0]  # each seed's evaluation at 300,000 games, not at 500,000 (200-202)
    assert row[2] == welch([201.0, 202.0, 203.0], at_300k).text()
    assert "300,000 games" in row[1] and "its own budget 500,000" in row[1] and "**higher at this size**" in row[3]


def test_a_twin_of_the_same_budget_is_set_against_its_finals_and_not_twice_in_its_own_ablation():
    """Two widths at the same budget (the long study's architecture cells): the same games trained at
    the end are their finals, not the twin's last evaluation before them; within one ablation the
    ablation's own ranking compares them (no row in each direction), across ablations one row a cell."""
    from yahtzee_lightning.study.judging.claims import size_claims
    from yahtzee_lightning.study.judging.context import Series
    from yahtzee_lightning.study.model import Cell

    def cell(cid, d_h):
        keys = {"model.init_args.d_h": d_h, "model.init_args.total_games": 200_000}
        return Cell(cid, "conf/a2c.yaml", keys, "A2C", total_games=200_000)

    cells = {"narrow": cell("narrow", 64), "wide": cell("wide", 256), "elsewhere": cell("elsewhere", 128)}
    ablations = {
        "architecture": Ablation(
            "architecture", ["size"], [("narrow", {"size": "64"}), ("wide", {"size": "256"})], [0, 1]
        ),
        "other": Ablation("other", ["size"], [("elsewhere", {"size": "128"})], [0, 1]),
    }
    study = SimpleNamespace(cells=cells, ablations=ablations)

    def series(cid, label, finals):
        evals = pd.DataFrame([{"seed": s, "games": 180_288, "mean_score": 100.0} for s in range(2)])
        done = pd.DataFrame({"seed": [0, 1], "mean_score": finals, "status": "done"})
        return Series(
            label, next(a for a, ab in ablations.items() if any(c == cid for c, _ in ab.cells)), cid, evals, done
        )

    by_ablation = {
        "architecture": [series("narrow", "64", [190.0, 192.0]), series("wide", "256", [200.0, 203.0])],
        "other": [series("elsewhere", "128", [195.0, 196.0])],
    }
    ctx = SimpleNamespace(study=study, series=lambda name: by_ablation.get(name, []))
    rows = size_claims(ctx, "architecture")
    assert [r[1].split(" vs ")[1] for r in rows] == ["other: 128 at its final 200,000 games"] * 2  # none within
    assert rows[0][2] == welch([190.0, 192.0], [195.0, 196.0]).text()  # its finals, not its evaluations (100)
