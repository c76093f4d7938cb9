"""A scripted stand-in for KubeClient: records every call and answers from a table of responders."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from scheduler.kube.client import ApiError


class FakeClient:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Any]] = []
        # (method, path prefix) -> callable(body, query) returning the answer or raising ApiError
        self.responders: list[tuple[str, str, Callable[[Any, Any], Any]]] = []
        self.bind_answers: list[ApiError | None] = []
        self.binds: list[dict[str, Any]] = []
        self.watch_scripts: list[list[dict[str, Any]] | ApiError] = []

    def on(self, method: str, prefix: str, fn: Callable[[Any, Any], Any]) -> None:
        self.responders.insert(0, (method, prefix, fn))

    async def request(
        self,
        method: str,
        path: str,
        query: Any = None,
        body: Any = None,
        content_type: str | None = None,
        timeout: float | None = None,
        fenced: bool = True,
        term: int | None = None,
        decode: bool = True,  # answers are objects already: nothing to decode
        loads: Any = None,
    ) -> Any:
        self.calls.append((method, path, body))
        await asyncio.sleep(0)
        for m, prefix, fn in self.responders:
            if m == method and path.startswith(prefix):
                return fn(body, query)
        return {}

    async def write_pipelined(
        self, writes: list[tuple[str, str, Any, str | None]], term: int | None = None
    ) -> list[ApiError | None]:
        out: list[ApiError | None] = []
        for method, path, body, content_type in writes:
            try:
                await self.request(method, path, body=body, content_type=content_type, term=term)
                out.append(None)
            except ApiError as exc:
                out.append(exc)
        return out

    async def bind(self, namespace: str, name: str, body: dict[str, Any], term: int | None = None) -> None:
        self.binds.append(body)
        await asyncio.sleep(0)
        answer = self.bind_answers.pop(0) if self.bind_answers else None
        if answer is not None:
            raise answer

    async def watch(
        self, path: str, query: dict[str, Any], timeout: float, loads: Any = None
    ) -> AsyncIterator[dict[str, Any]]:
        self.calls.append(("WATCH", path, dict(query)))
        script = self.watch_scripts.pop(0) if self.watch_scripts else None
        if script is None:
            await asyncio.sleep(3600)
            return
        if isinstance(script, ApiError):
            raise script
        for ev in script:
            await asyncio.sleep(0)
            yield ev

    def count(self, method: str, fragment: str) -> int:
        return sum(1 for m, p, _ in self.calls if m == method and fragment in p)
