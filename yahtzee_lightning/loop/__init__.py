"""The training loop the algorithms (``yahtzee_lightning.algorithms``) run in; it imports none of them.

* collecting games inside the training step: :mod:`.collection` (the host protocol of its parts:
  :mod:`.host`), a diagnosis against the solver (:mod:`.diagnosis`), evaluations (:mod:`.evaluation`);
* many runs as one: a packed update (:mod:`.packed`) of an ensemble's members (:mod:`.ensemble`);
* the settings, their checks and the network built from them (:mod:`.settings`);
* a run's files: checkpoints (:mod:`.checkpoint`), resuming (:mod:`.resume`), the config carried in
  them (:mod:`.training_config`), a checkpoint as an agent (:mod:`.export`);
* fit's LightningCLI (:mod:`.lightning_cli`: its config errors in :mod:`.config_errors`, launches on
  many ranks in :mod:`.launch`, progress lines in :mod:`.progress_lines`), a quiet trainer
  (:mod:`.trainer`) and an op count of one update (:mod:`.op_count`).
"""
