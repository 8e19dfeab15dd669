"""The paper's headline, 241.78, is the mean of its best A2C's 100,000 evaluation games (its results table
and evaluation log print it as a mean, beside the variance); only its abstract calls it a median. A
report sets each agent's mean of games against it, never its median."""

import re

import pandas as pd

from yahtzee_lightning.study.judging.claims import PAPER_HEADLINE


def test_the_exploratory_row_sets_each_seeds_mean_against_the_papers_headline(finished_study):
    claims = (finished_study / "report" / "claims.md").read_text().splitlines()
    rows = [r for r in claims if "| against the paper |" in r]
    assert len(rows) == 1 and "mean of games, per seed" in rows[0] and "median of games" not in rows[0]
    finals = pd.read_csv(finished_study / "results.csv").query("stage == 'final'")
    assert finals["mean_score"].notna().sum() == 2 and not finals["mean_score"].equals(finals["median"])
    estimate = float(re.search(r"\| ([+-][0-9.]+) \[", rows[0]).group(1))
    assert estimate == round(finals["mean_score"].mean() - PAPER_HEADLINE, 1)
