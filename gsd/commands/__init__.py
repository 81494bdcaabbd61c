"""One module per verb that is more than a run: each returns data for gsd/output to show."""
