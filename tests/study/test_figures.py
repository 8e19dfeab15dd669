"""What a learning curve says about its end: was it still rising when training stopped?"""

import numpy as np

from yahtzee_lightning.study.drawing.figures import label_ends, last_quarter_change
from yahtzee_lightning.study.judging.context import legends


def test_a_curve_s_change_over_its_last_quarter_says_whether_it_was_still_rising():
    games = np.array([100, 200, 300, 400, 500, 600, 700, 800])
    rising = np.array([10.0, 20, 30, 40, 50, 60, 70, 80])
    assert last_quarter_change(games, rising) == 20.0  # from 600 (75 % of 800) to 800
    assert last_quarter_change(games, np.r_[rising[:6], 70, 55]) == -5.0  # fell at the end
    assert last_quarter_change(games[:2], rising[:2]) == 10.0  # two evaluations: the last step
    assert last_quarter_change(games[:1], rising[:1]) is None  # one evaluation: nothing to say
    assert last_quarter_change(games, np.r_[rising[:7], np.nan]) is None


def test_named_values_that_train_different_things_are_labelled_by_what_they_train():
    recipes = ["REINFORCE", "A2C, TD(0)", "A2C, GAE(0.95)"]
    names = ["reinforce", "a2c_td0", "a2c_gae95"]
    assert legends(["algorithm"], names, recipes) == recipes
    # The same recipe under every value (entropy regimes), or an axis that is a setting: the labels.
    assert legends(["entropy"], ["low", "high"], ["A2C, TD(0)", "A2C, TD(0)"]) == ["low", "high"]
    keyed = ["gae_lambda=0.0", "gae_lambda=0.95"]
    assert legends(["model.init_args.gae_lambda"], keyed, ["A2C, TD(0)", "A2C, GAE(0.95)"]) == keyed


def test_end_labels_of_curves_that_end_together_do_not_overlap():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    ends = [(10.0, y, f"+{y:.2f}", "C0") for y in (211.7, 212.7, 213.0, 216.4, 198.5)]
    for x, y, _, _ in ends:
        ax.plot([0, x], [150, y])
    label_ends(ax, ends)
    fig.canvas.draw()
    boxes = sorted((t.get_window_extent() for t in ax.texts), key=lambda b: b.y0)
    assert len(boxes) == 5
    assert all(low.y1 <= high.y0 + 0.5 for low, high in zip(boxes[:-1], boxes[1:], strict=True))  # stacked apart
    lowest = min(ax.texts, key=lambda t: t.get_window_extent().y0)
    assert lowest.get_text() == "+198.50" and lowest.xyann[1] == 0  # a label with room stays at its point
    plt.close(fig)


def test_a_curve_ends_at_the_final_evaluation_even_when_training_was_evaluated_at_the_same_point():
    """The faithful report's end labels stopped at the in-training evaluation at 500,000 games while
    its caption said the final one: the final evaluation (more games) now stands for that point."""
    import pandas as pd

    from yahtzee_lightning.study.drawing.figures import with_final
    from yahtzee_lightning.study.judging.context import Series

    finals = pd.DataFrame(
        {"status": ["done", "done"], "seed": [0, 1], "games": [200, 200], "mean_score": [190.0, 192.0]}
    )
    s = Series("a2c", "algorithm", "c1", pd.DataFrame(), finals)
    games, mean = np.array([100.0, 200.0]), np.array([150.0, 185.0])
    g, m, lo, hi, final = with_final(s, "mean_score", games, mean, mean - 1, mean + 1)
    assert final and list(g) == [100.0, 200.0] and m[-1] == 191.0 and lo[-1] < 191.0 < hi[-1]
    later = finals.assign(games=[300, 300])
    g, m, _, _, final = with_final(
        Series("a2c", "algorithm", "c1", pd.DataFrame(), later), "mean_score", games, mean, mean, mean
    )
    assert final and list(g) == [100.0, 200.0, 300.0] and list(m) == [150.0, 185.0, 191.0]
    earlier = finals.assign(games=[150, 150])
    g, m, _, _, final = with_final(
        Series("a2c", "algorithm", "c1", pd.DataFrame(), earlier), "mean_score", games, mean, mean, mean
    )
    assert not final and list(m) == [150.0, 185.0]


def _curves_of(budgets: dict[str, tuple[int, str]]):
    """A report's learning-curve figure of one cell per budget (games, task), drawn without a study."""
    from types import SimpleNamespace

    import pandas as pd

    from yahtzee_lightning.study.judging.context import Series

    series, cells = [], {}
    for i, (name, (budget, task)) in enumerate(budgets.items()):
        games = np.linspace(budget / 10, budget, 10)
        evals = pd.DataFrame({"games": np.r_[games, games], "seed": [0] * 10 + [1] * 10})
        evals["kl"] = 0.01 * (1 + i) + evals["games"] / budget / 100 + evals["seed"] / 1000
        series.append(Series(name, "a", f"c{i}", evals, pd.DataFrame()))
        cells[f"c{i}"] = SimpleNamespace(task=task)
    ctx = SimpleNamespace(all_series=lambda ablations: series, study=SimpleNamespace(cells=cells), reference={})
    return ctx


def _axes_of(path) -> tuple[str, float]:
    from PIL import Image

    text = Image.open(path).text
    return text["Axes"], Image.open(path).size[0]


def test_curves_whose_budgets_span_decades_share_a_log_axis_and_a_long_legend_leaves_the_axes(tmp_path):
    """The paper study's over-training figures drew 50,000-game curves beside 3,380,000 single-turn
    turns on one linear axis (the short runs squashed against its left edge) under a 14-entry legend
    that covered them."""
    from yahtzee_lightning.study.drawing.figures import draw_curves

    draw = draw_curves("kl", "KL", refs=False)
    few = {f"cell {i}": (250_000, "full_game") for i in range(3)}
    assert draw(_curves_of(few), ["a"], tmp_path / "few.png") == 3 * 10  # an evaluation a point, its seeds pooled
    axes, narrow = _axes_of(tmp_path / "few.png")
    assert axes.startswith("x=games trained (") and "log" not in axes  # one budget: linear, as before

    many = {f"cell {i}": (250_000, "full_game") for i in range(12)} | {"single": (3_380_000, "single_turn")}
    assert draw(_curves_of(many), ["a"], tmp_path / "many.png") == 13 * 10
    axes, wide = _axes_of(tmp_path / "many.png")
    assert axes.startswith("x=games trained (turns for a single-turn cell), log scale")
    assert wide > narrow  # the legend beside the axes, on a wider figure


def test_a_long_legend_sits_beside_the_axes_where_it_covers_no_data():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from yahtzee_lightning.study.drawing.figures import LEGEND_INSIDE, place_legend, spans_decades

    for n, outside in ((LEGEND_INSIDE, False), (LEGEND_INSIDE + 1, True)):
        fig, ax = plt.subplots(figsize=(8, 4.5))
        for i in range(n):
            ax.plot([0, 1], [i, i], label=f"line {i}")
        place_legend(ax)
        fig.canvas.draw()
        legend, axes = ax.get_legend().get_window_extent(), ax.get_window_extent()
        assert (legend.x0 >= axes.x1) == outside
        assert fig.get_figwidth() == (12 if outside else 8)
        assert ax.get_legend().handlelength == (4.0 if outside else plt.rcParams["legend.handlelength"])
        plt.close(fig)
    assert spans_decades([50_000, 250_000, 3_380_000]) and not spans_decades([50_000, 250_000, 500_000])
    assert not spans_decades([0, 250_000]) and not spans_decades([250_000])  # nothing to compare
