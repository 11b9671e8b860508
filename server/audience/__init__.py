"""The audience: the ``/live`` stream of the ladder, the games and the tournaments."""
