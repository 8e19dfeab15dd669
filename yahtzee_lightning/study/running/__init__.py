"""Running a study: each (cell, seed) an ordinary ``fit`` in its run folder, as Ray Tune trials on
one machine or a cluster, packed into ensembles where cells allow, resumable across sessions."""
