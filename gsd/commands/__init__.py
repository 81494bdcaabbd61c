"""One module per verb that is more than a run: each returns data for gsd/output to show.

`revisions` is part of `gsd diff`: which snapshots it compares.
"""
