"""Rating arithmetic, pure: the Elo update and the Bradley–Terry fit with its intervals."""
