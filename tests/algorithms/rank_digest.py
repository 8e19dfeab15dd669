"""Test callback: each rank writes a digest of its weights and of its first rollout."""

import json
import os
from pathlib import Path

import lightning as L
import torch


class RankDigest(L.Callback):
    def __init__(self) -> None:
        self.rollout = None

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if self.rollout is None:  # the games of the first update, played inside training_step
            games = pl_module.last_batch
            self.rollout = games["dice"].double().sum().item() + games["card"].double().sum().item()

    def on_train_end(self, trainer, pl_module) -> None:
        params = torch.cat([p.detach().double().flatten() for p in pl_module.parameters()])
        digest = {
            "rank": trainer.global_rank,
            "weights": params.tolist()[:50] + [params.sum().item(), params.abs().sum().item()],
            "rollout": self.rollout,
            "updates": int(pl_module.updates_done),
        }
        out = Path(os.environ["RANK_DIGEST_DIR"]) / f"rank{trainer.global_rank}.json"
        out.write_text(json.dumps(digest))
