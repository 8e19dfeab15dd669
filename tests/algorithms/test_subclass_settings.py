"""CONTRIBUTING's promise to a new algorithm: its settings are recorded without save_hyperparameters()."""

import pytest

from yahtzee_lightning.algorithms import Reinforce


class Tempered(Reinforce):
    """A subclass with a setting of its own, which it checks, and no save_hyperparameters() call."""

    def __init__(self, temperature: float = 1.0, **kwargs) -> None:
        super().__init__(**kwargs)

    def validate_settings(self) -> None:
        super().validate_settings()
        if not self.hparams.temperature > 0:
            raise ValueError(f"temperature must be > 0, got {self.hparams.temperature}")


def test_a_subclass_setting_is_recorded_and_checked_without_save_hyperparameters():
    small = {"d_h": 8, "n_layers": 1, "head_hidden": 8}
    assert Tempered(**small).hparams.temperature == 1.0  # its default
    model = Tempered(temperature=0.5, **small)
    assert model.hparams.temperature == 0.5 and model.hparams.d_h == 8
    with pytest.raises(ValueError, match="temperature must be > 0"):
        Tempered(temperature=0.0, **small)
