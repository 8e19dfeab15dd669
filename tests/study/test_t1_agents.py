"""T1 shows the best cells its caption names: the best of each algorithm among the ablations it draws
and, where another of the study's cells of that algorithm scores higher, that cell too."""

from types import SimpleNamespace

import pandas as pd

from yahtzee_lightning.study.drawing.tables import summary_agents
from yahtzee_lightning.study.judging.context import Series


def _ctx(means: dict[str, tuple[str, float | None, list[float]]], ablations: dict[str, list[str]]):
    cells = {
        c: SimpleNamespace(algorithm=a, task="full_game", start_from=None, gae_lambda=lam)
        for c, (a, lam, _) in means.items()
    }

    def all_series(names: list[str]) -> list[Series]:
        seen = dict.fromkeys(c for n in names for c in ablations[n])  # each cell once, fresh objects each call
        return [
            Series(c, next(n for n in names if c in ablations[n]), c, pd.DataFrame(), pd.DataFrame({"mean_score": m}))
            for c, m in ((c, means[c][2]) for c in seen)
        ]

    study = SimpleNamespace(cells=cells, ablations={n: SimpleNamespace(scheduler=None) for n in ablations})
    return SimpleNamespace(study=study, all_series=all_series)


def test_t1_adds_the_studys_best_cell_of_an_algorithm_beside_the_drawn_one():
    means = {
        "a2c": ("A2C", 0.0, [203.0, 204.0, 205.0]),
        "ppo": ("PPO", 0.95, [201.0, 202.0, 203.0]),
        "ppo_half": ("PPO", 0.5, [227.0, 228.0, 229.0]),  # the best PPO: drawn by no ablation T1 names
        "a2c_norm": ("A2C", 0.0, [190.0, 191.0, 192.0]),  # below the drawn A2C: not added
    }
    ablations = {"algorithm": ["a2c", "ppo"], "ppo_lambda": ["ppo", "ppo_half"], "advantages": ["a2c", "a2c_norm"]}
    rows = [(s.cell, picked) for s, picked in summary_agents(_ctx(means, ablations), ["algorithm"])]
    assert rows == [
        ("a2c", "the only cell of algorithm"),
        ("ppo", "the only cell of algorithm"),
        ("ppo_half", "best of 2 cells of the study, after the fact"),
    ]


def test_t1_over_every_ablation_adds_nothing():
    means = {"ppo": ("PPO", 0.95, [201.0, 202.0]), "ppo_half": ("PPO", 0.5, [227.0, 228.0])}
    ablations = {"ppo_lambda": ["ppo", "ppo_half"]}
    rows = [(s.cell, picked) for s, picked in summary_agents(_ctx(means, ablations), ["ppo_lambda"])]
    assert rows == [("ppo_half", "best of 2 cells, after the fact")]


def test_a_cell_without_a_finished_member_is_not_a_rival_it_was_picked_from():
    # a running study: the 1 M cell has only its pending row (no score yet)
    means = {"a2c_250k": ("A2C", 0.0, [229.7, 226.3, 225.4]), "a2c_1m": ("A2C", 0.0, [float("nan")])}
    ablations = {"table": ["a2c_250k"], "long": ["a2c_1m"]}
    rows = [(s.cell, picked) for s, picked in summary_agents(_ctx(means, ablations), ["table", "long"])]
    assert rows == [("a2c_250k", "the only cell")]
