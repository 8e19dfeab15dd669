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
