"""Whether two trees learn the same weights: a few updates of the paper's A2C and PPO recipes and of
the published code's (conf/paper/: A2C, REINFORCE, PPO on minibatches of random steps, single-turn;
narrow networks, one thread, seed 0), printed as the sums of the weights. Run it in each tree and
compare:

    python benchmarks/same_learning.py                              # this tree
    (cd OLD && PYTHONPATH=OLD python /path/to/benchmarks/same_learning.py)   # another checkout

A refactor meant to keep what a run learns (a study resumed across commits relies on it) prints
the same digits in both.
"""

from __future__ import annotations

import lightning as L
import torch

from yahtzee_lightning.loop.op_count import recipe_args
from yahtzee_lightning.loop.trainer import quiet_trainer

RECIPES = (
    "conf/a2c.yaml",
    "conf/ppo.yaml",
    "conf/paper/a2c_250k.yaml",
    "conf/paper/reinforce_250k.yaml",
    "conf/paper/ppo_250k.yaml",
    "conf/paper/ppo_250k_shaped.yaml",
    "conf/paper/single_turn.yaml",
)


def main() -> None:
    torch.set_num_threads(1)
    for conf in RECIPES:
        games = 676 if "single_turn" in conf else 80  # a single-turn batch is 338 turns
        small = {"d_h": 32, "head_hidden": 32, "total_games": games, "evaluations": 1, "eval_games": 50}
        cls, args = recipe_args(conf, **small, final_eval_games=0, init_from=None)
        L.seed_everything(0)
        model = cls(**args)
        quiet_trainer(accelerator="cpu", devices=1, max_epochs=1).fit(model)
        w = torch.cat([p.detach().flatten() for p in model.net.parameters()]).double()
        print(f"{conf}: sum {w.sum().item():.12f}, sum of |w| {w.abs().sum().item():.12f}")


if __name__ == "__main__":
    main()
