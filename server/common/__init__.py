"""Shared pieces every layer of the server may use: wall-clock times, task helpers, the typed refusal."""
