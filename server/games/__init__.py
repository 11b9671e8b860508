"""Games as they run: the room of one game, the manager of all of them, the seams the cluster
plugs into, deals, the house bot, challenges, think-time telemetry, summaries and bot health."""
