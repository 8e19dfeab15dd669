"""Callbacks that stand in for a kill (see test_resume): selected by import path like a user's own."""

import lightning as L


class CrashAfterUpdate(L.Callback):
    """Raise after ``updates`` updates (by default before the second: the run dies mid-interval,
    before any interval's checkpoint)."""

    def __init__(self, updates: int = 1) -> None:
        self.updates = updates

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if int(pl_module.updates_done) >= self.updates:
            raise RuntimeError(f"killed after update {self.updates}")


class CrashAtTrainEnd(L.Callback):
    """Raise when training ends: the run dies just before its final evaluation."""

    def on_train_end(self, trainer, pl_module) -> None:
        raise RuntimeError("killed before the final evaluation")


class HangAfterUpdate(L.Callback):
    """Stop moving after ``updates`` updates (the checkpoint of the one before written), until killed
    (as a node's processes are, all at once); ``$HANG_MARKER.RANK`` holds the process id once there
    (a launcher such as torchrun starts its workers in sessions of their own)."""

    def __init__(self, updates: int = 2) -> None:
        self.updates = updates

    def on_train_batch_end(self, trainer, pl_module, *args) -> None:
        import os
        import time
        from pathlib import Path

        if int(pl_module.updates_done) >= self.updates:
            trainer.strategy.barrier()  # every rank is here: the checkpoint of the update is written
            Path(os.environ["HANG_MARKER"]).with_suffix(f".{trainer.global_rank}").write_text(str(os.getpid()))
            while True:
                time.sleep(1)
