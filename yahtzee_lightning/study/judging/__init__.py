"""Judging a study: each cell's seeds as a mean with its interval, the pre-registered hypotheses
tested and corrected for their number, the paper's claims judged, the provenance of every number."""
