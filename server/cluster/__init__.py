"""Several arena nodes as one arena: what they tell each other over Redis (``bus``), where
each bot is connected (``presence``), and the roles one node holds at a time (``lease``)."""
