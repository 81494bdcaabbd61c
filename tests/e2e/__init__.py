"""The end-to-end matrix: the real agent CLIs' own tool loops under `gsd execute-phase`."""
