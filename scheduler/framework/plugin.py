"""The base every plugin derives from.

A plugin is built once per session with its validated arguments; in `on_session_open` it
registers the callbacks for the extension points it implements (see `framework.session`), and in
`on_session_close` it may publish results (PodGroup conditions, metrics). Plugins never do I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from scheduler.framework.arguments import Arguments

if TYPE_CHECKING:
    from scheduler.framework.session import Session


class Plugin:
    name: ClassVar[str] = ""

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    @classmethod
    def validate(cls, arguments: Arguments) -> list[str] | None:
        """Raise ArgumentError for arguments this plugin cannot accept (called at config load);
        return warnings about arguments Volcano accepts but ignores."""
        cls(arguments)
        return None

    def on_session_open(self, ssn: Session) -> None:
        raise NotImplementedError(f"plugin {self.name} must register its callbacks")

    def on_session_close(self, ssn: Session) -> None:
        """Most plugins keep nothing past the session."""
        return None
