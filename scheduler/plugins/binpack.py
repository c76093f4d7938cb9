"""binpack: prefer nodes that are already full (spec 7.8)."""

from __future__ import annotations

from scheduler.framework.plugin import Plugin
from scheduler.framework.session import Session


class BinpackPlugin(Plugin):
    name = "binpack"

    def on_session_open(self, ssn: Session) -> None:
        # Minimal placeholder registration: no score yet means binpack contributes nothing.
        return None
