"""Drawing a study's report: every exhibit (figures and tables) from the judged numbers, and the
report's index."""
