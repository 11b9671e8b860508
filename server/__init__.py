"""Mandala Arena's aiohttp application: connections, games, clocks, ladder, storage, pages."""
