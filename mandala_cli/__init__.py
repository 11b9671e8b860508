"""The ``mandala`` command: one entry point for every tool of Mandala Arena."""
