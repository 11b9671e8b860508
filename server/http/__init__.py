"""The HTTP layer: every route (API, pages, ``/ws``, ``/live``) and its errors. Nothing below
imports it."""
