"""Studies: many configurations of ``fit``, run as trials on Ray Tune, compared in one report.

Here, what the three rooms below share: the study file read (``.spec``) into what a study is
(``.model``: cells, ablations), cells chained from others (``.chain``), a cell's config
(``.fit_config``), the hypotheses as written (``.hypothesis_file``), the records a run leaves
(``.records``), the tidy results table (``.results``) and one writer per study folder
(``.ownership``). Then ``.running`` runs the cells, ``.judging`` turns the runs into
numbers and verdicts, and ``.drawing`` draws the report. The ``study`` verb is
``yahtzee_lightning/commands/study.py``.
"""
