"""The ladder: bots qualify, are paired in duplicate pairs, and are ranked.

- ``service.py``: the running ladder (:class:`~server.ladder.service.Ladder`): who seeks,
  each bot's place, the duplicate pairs under way and their return games, the pairing loop.
- ``qualification.py``: who is qualifying against the house bot, and the rules that pass or
  fail them.
- ``pairs.py``: a duplicate pair, two games on one deal with the seats swapped.
- ``matchmaking.py``: who plays whom next (pure: no I/O, no clock), everyone meeting everyone.
- ``large.py``: who plays whom on a ladder of ``pairing_large_from`` active bots or more: near
  opponents, the most telling games, newcomers placed by binary search (pure).
- ``standings.py``: the standings table, computed (coalesced) and published to ``/live``.
- ``tally.py``: wins, draws and losses of each pair of bots, what the standings are fit on.
- ``fitting.py``: the standings' Bradley–Terry fit, in a worker process.
- ``controls.py``: the organizer's controls (pause, resume, reset, remove, restore), called
  by the HTTP handler and by a cluster node forwarding to the leader.
"""
