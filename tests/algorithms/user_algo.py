"""A user's own algorithm, selected by import path without editing the package (see test_cli)."""

from yahtzee_lightning.algorithms import Reinforce


class LoudReinforce(Reinforce):
    """REINFORCE that also logs how many updates it made: a stand-in for a new loss."""

    def update(self, batch, coefs):
        stats = super().update(batch, coefs)
        stats["loud_updates"] = float(self.updates_done) + 1
        return stats
