"""A scripted model server for the real agent CLIs (see server.py)."""
