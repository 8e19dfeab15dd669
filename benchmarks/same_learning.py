"""Whether two trees learn the same weights: a few updates of the paper's A2C and PPO recipes (narrow
networks, one thread, seed 0), printed as the sums of the weights. Run it in each tree and compare:

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


def main() -> None:
    torch.set_num_threads(1)
    for conf in ("conf/a2c.yaml", "conf/ppo.yaml"):
        small = {"d_h": 32, "head_hidden": 32, "total_games": 80, "evaluations": 1, "eval_games": 50}
        cls, args = recipe_args(conf, **small, final_eval_games=0, init_from=None)
        L.seed_everything(0)
        model = cls(**args)
        quiet_trainer(accelerator="cpu", devices=1, max_epochs=1).fit(model)
        w = torch.cat([p.detach().flatten() for p in model.net.parameters()]).double()
        print(f"{conf}: sum {w.sum().item():.12f}, sum of |w| {w.abs().sum().item():.12f}")


if __name__ == "__main__":
    main()
