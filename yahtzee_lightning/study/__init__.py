"""Studies: many configurations of ``fit``, run as trials on Ray Tune, compared in one report.

Here, what the three rooms below share: the study file read (:mod:`.spec`) into what a study is
(:mod:`.model`: cells, ablations), cells chained from others (:mod:`.chain`), a cell's config
(:mod:`.fit_config`), the hypotheses as written (:mod:`.hypothesis_file`), the records a run leaves
(:mod:`.records`), the tidy results table (:mod:`.results`) and one writer per study folder
(:mod:`.ownership`). Then :mod:`.running` runs the cells, :mod:`.judging` turns the runs into
numbers and verdicts, and :mod:`.drawing` draws the report. The ``study`` verb is
``yahtzee_lightning/commands/study.py``.
"""
