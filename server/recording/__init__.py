"""Making finished games durable: the recorder (``game_over`` only once stored) and the spool
that keeps finished games across a storage outage or a restart."""
