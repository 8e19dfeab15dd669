"""Studies: many configurations of ``fit``, run as trials on Ray Tune, compared in one report.

A study is a YAML file (``conf/study/*.yaml``, read by :mod:`.spec`); :mod:`.runner` runs its
cells, :mod:`.results` gathers what they wrote into one tidy table, :mod:`.report` draws the
exhibits from it, and :mod:`.cli` is the ``yahtzee-lightning study`` verb.
"""
