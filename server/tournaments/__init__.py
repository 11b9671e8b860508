"""Tournaments run by the server: a fixed field, one schedule on shared deals, a ranking at
the end (``schedule`` and ``results`` are pure; ``director`` runs them; ``api`` serves them)."""
