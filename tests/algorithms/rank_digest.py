"""Test callback: each rank writes a digest of its weights and of its first rollout."""

import json
import os
from pathlib import Path

import lightning as L
import torch


class RankDigest(L.Callback):
    def __init__(self) -> None:
        self.rollout = None

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if self.rollout is None:
            self.rollout = batch["dice"].double().sum().item() + batch["card"].double().sum().item()

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
