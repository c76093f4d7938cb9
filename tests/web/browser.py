"""Headless Chromium driven over the DevTools protocol with aiohttp (already a dependency).

Enough for tests that look at a page as a person would: open a URL, wait until some JavaScript
condition holds, read text from the DOM, take a screenshot. Skips cleanly where no Chromium is
installed (the Debian package `chromium`; `.ci/run` installs it).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from typing import Any

import aiohttp

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-port=0",
)


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class Browser:
    def __init__(self, width: int = 1400, height: int = 1000) -> None:
        self.size = (width, height)
        self.proc: subprocess.Popen[bytes] | None = None
        self.profile = tempfile.mkdtemp(prefix="vc-chromium-")
        self.session: aiohttp.ClientSession | None = None
        self.ws: aiohttp.ClientWebSocketResponse | None = None
        self.ids = itertools.count(1)

    async def __aenter__(self) -> Browser:
        exe = chromium_path()
        assert exe is not None
        self.proc = subprocess.Popen(
            [
                exe,
                *FLAGS,
                f"--user-data-dir={self.profile}",
                f"--window-size={self.size[0]},{self.size[1]}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        endpoint = await asyncio.to_thread(self._devtools_url)
        port = re.search(r":(\d+)/", endpoint)
        assert port is not None
        self.session = aiohttp.ClientSession()
        base = f"http://127.0.0.1:{port.group(1)}"
        pages = await (await self.session.get(f"{base}/json/list")).json()
        page = next(p for p in pages if p.get("type") == "page")
        self.ws = await self.session.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0)
        await self.send("Page.enable")
        await self.send("Runtime.enable")
        return self

    def _devtools_url(self) -> str:
        assert self.proc is not None and self.proc.stderr is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline().decode(errors="replace")
            if not line and self.proc.poll() is not None:
                break
            m = re.search(r"DevTools listening on (ws://\S+)", line)
            if m:
                return m.group(1)
        raise RuntimeError("chromium did not start its DevTools endpoint")

    async def __aexit__(self, *exc: object) -> None:
        if self.ws is not None:
            await self.ws.close()
        if self.session is not None:
            await self.session.close()
        if self.proc is not None:
            self.proc.terminate()
            try:
                await asyncio.to_thread(self.proc.wait, 15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        assert self.ws is not None
        msg_id = next(self.ids)
        await self.ws.send_str(json.dumps({"id": msg_id, "method": method, "params": params}))
        while True:
            msg = await asyncio.wait_for(self.ws.receive(), 60)
            if msg.type != aiohttp.WSMsgType.TEXT:
                raise RuntimeError(f"DevTools connection closed: {msg.type}")
            data = json.loads(msg.data)
            if data.get("id") == msg_id:
                if "error" in data:
                    raise RuntimeError(f"{method}: {data['error']}")
                return data.get("result", {})

    async def open(self, url: str) -> None:
        await self.send("Page.navigate", url=url)

    async def eval(self, expression: str) -> Any:
        r = await self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression}: {r['exceptionDetails']}")
        return r.get("result", {}).get("value")

    async def wait_for(self, expression: str, timeout: float = 30.0) -> Any:
        """Poll a JavaScript expression until it is truthy; its value."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            with contextlib.suppress(RuntimeError):
                last = await self.eval(expression)
                if last:
                    return last
            await asyncio.sleep(0.25)
        raise AssertionError(f"timed out waiting for {expression!r} (last value {last!r})")

    async def screenshot(self, path: str, full_page: bool = True) -> None:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            m = await self.send("Page.getLayoutMetrics")
            size = m.get("cssContentSize") or m["contentSize"]
            params["clip"] = {"x": 0, "y": 0, "width": self.size[0], "height": size["height"], "scale": 1}
            params["captureBeyondViewport"] = True
        r = await self.send("Page.captureScreenshot", **params)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(base64.b64decode(r["data"]))
