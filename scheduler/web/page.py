"""One self-contained HTML file of the web view (`simulate -o html`): no server, no network.

The page's stylesheet and script are inlined and the endpoint answers embedded as
`window.VC_DATA`; the script pages and filters that data itself. Only for clusters small enough
to embed whole (a simulated cluster, not a 150,000-pod one).
"""

from __future__ import annotations

import json
from typing import Any

from scheduler.web.routes import asset
from scheduler.web.summary import Summary

MAX_EXPLAINED = 500


def _script_safe(text: str) -> str:
    return text.replace("</", "<\\/")


def render(summary: Summary, explain: Any = None) -> str:
    data: dict[str, Any] = summary.everything()
    if explain is not None and summary.view is not None:
        data["explain"] = {}
        for c in summary.view.result.pod_conditions[:MAX_EXPLAINED]:
            e = explain(summary.view, c.task.namespace, c.task.name)
            if e is not None:
                data["explain"][f"{c.task.namespace}/{c.task.name}"] = e
    html = asset("index.html")
    html = html.replace(
        '<link rel="stylesheet" href="static/app.css">', f"<style>\n{asset('app.css')}</style>"
    )
    html = html.replace(
        '<script src="static/app.js"></script>',
        f"<script>window.VC_DATA = {_script_safe(json.dumps(data))};</script>\n"
        f"<script>\n{_script_safe(asset('app.js'))}</script>",
    )
    return html
