"""nodeorder: kube-scheduler's score plugins with Volcano's weights (spec 7.7)."""

from __future__ import annotations

from scheduler.framework.plugin import Plugin
from scheduler.framework.session import Session


class NodeOrderPlugin(Plugin):
    name = "nodeorder"

    def on_session_open(self, ssn: Session) -> None:
        # Minimal placeholder registration: no scorers yet means every node scores 0.
        return None
