"""Several arena nodes as one arena: what they tell each other over Redis (``bus``,
``messages``), where each bot is connected (``presence``), the roles one node holds at a time
(``lease``), and this node's part (``node``), which hands each job to a part of its own:
``bots``, ``remote_games``, ``leadership`` and ``takeover``. ``parts`` names what the cluster
uses of the server, which sits above it."""
