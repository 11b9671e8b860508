"""The ladder: Elo ratings, the Bradley–Terry fit behind their intervals, and matchmaking."""
