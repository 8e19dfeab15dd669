"""The training loop the algorithms (``yahtzee_lightning.algorithms``) run in; it imports none of them.

* collecting games inside the training step: ``.collection`` (the host protocol of its parts:
  ``.host``), a diagnosis against the solver (``.diagnosis``), evaluations (``.evaluation``);
* many runs as one: a packed update (``.packed``) of an ensemble's members (``.ensemble``);
* the settings, their checks and the network built from them (``.settings``);
* a run's files: checkpoints (``.checkpoint``), resuming (``.resume``), the config carried in
  them (``.training_config``), a checkpoint as an agent (``.export``);
* fit's LightningCLI (``.lightning_cli``: its config errors in ``.config_errors``, launches on
  many ranks in ``.launch``, progress lines in ``.progress_lines``), a quiet trainer
  (``.trainer``) and an op count of one update (``.op_count``).
"""
