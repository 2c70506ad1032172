"""The run folder and its record archives."""
