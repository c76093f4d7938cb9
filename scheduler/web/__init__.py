"""The read-only web view: what the last session saw, as JSON endpoints and one static page.

The daemon publishes a `SessionView` after each session (references only, no copying, so the
session does not get slower); `summary` turns it into the JSON the page and the CLI read, lazily
and once per session; `routes` serves it beside /metrics; `static/` is the page (no CDN).
"""
