"""Typed keys of the request storage (shared by app and handlers)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

# aiohttp < 3.12 has no RequestKey; a plain string key works there (with a warning on newer ones)
LOG_KEY: Any = web.RequestKey("sandbox_log", dict) if hasattr(web, "RequestKey") else "sandbox_log"
# the ApiServer answering the request
SERVER_KEY: Any = web.RequestKey("sandbox_server", object) if hasattr(web, "RequestKey") else "sandbox_server"
