"""Several arena nodes as one arena: what they tell each other over Redis (``bus``) and where
each bot is connected (``presence``)."""
