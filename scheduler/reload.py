"""Scheduler configuration hot reload from the mounted file and from the ConfigMap in the API.

Two sources describe the same configuration: the `--scheduler-conf` file (in a cluster, the
ConfigMap mounted into the pod, which the kubelet refreshes up to a minute late) and the ConfigMap
itself, watched through the API (immediate). Whichever *changes* last wins; a change to text
identical to the current configuration is a no-op, so the late file refresh that follows a
ConfigMap edit does nothing. A new configuration is swapped in whole and read by the next
session; an invalid one is refused — the exact error in the log, a Warning event on the ConfigMap,
the failure counter — and the last good configuration stays.
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog

from scheduler.conf import ConfigError, SchedulerConfiguration
from scheduler.registry import default_configuration, parse

log = structlog.get_logger("vc-scheduler.reload")

DEFAULT_CONFIGMAP = "volcano-scheduler-configmap"
DEFAULT_CONFIGMAP_NAMESPACE = "volcano-system"
DEFAULT_KEY = "volcano-scheduler.conf"
# a configuration this large is parsed in a worker thread: a 500 KB one takes seconds, and the
# event loop must keep answering probes and watches meanwhile
LARGE_CONFIG = 64 * 1024


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(slots=True)
class FileStamp:
    mtime_ns: int
    size: int


class ConfigReloader:
    def __init__(
        self,
        path: str = "",
        configmap: str = DEFAULT_CONFIGMAP,
        namespace: str = DEFAULT_CONFIGMAP_NAMESPACE,
        key: str = "",
        on_failure: Callable[[str, str], None] | None = None,
        on_reload: Callable[[str, SchedulerConfiguration], None] | None = None,
        warn_event: Callable[[str, str, str], None] | None = None,
    ) -> None:
        self.path = path
        self.configmap = configmap
        self.namespace = namespace
        # the key inside the ConfigMap: the mounted file's name when there is one, as the
        # ConfigMap volume maps keys to file names
        self.key = key or (os.path.basename(path) if path else DEFAULT_KEY)
        self.on_failure = on_failure
        self.on_reload = on_reload
        self.warn_event = warn_event
        self.current: SchedulerConfiguration = default_configuration()
        self.current_digest = ""
        self.current_source = "<built-in default>"
        self._stamp: FileStamp | None = None
        self._file_digest = ""
        self._cm_digest = ""
        self.configmap_exists = False
        self.reloads = 0
        self.failures = 0
        self.last_error = ""
        self._offers = 0  # a parse finished off the loop applies only if no newer offer came since
        self.parsing: asyncio.Future[Any] | None = None

    # ------------------------------------------------------------------ startup --
    def load_initial(self, strict: bool = False) -> None:
        """Read the file once at start. With `strict`, an invalid file is fatal (ConfigError)."""
        if not self.path:
            log.info("using the built-in default configuration")
            return
        try:
            text, stamp = self._read()
            conf = parse(text, self.path)
        except ConfigError as exc:
            self._stamp = self._stat()
            self.last_error = str(exc)
            if strict:
                raise
            log.error("invalid scheduler configuration, using the built-in default", error=str(exc))
            self._failed("file", str(exc), emit=False)
            return
        self._stamp = stamp
        self._file_digest = digest(text)
        self._swap(conf, self._file_digest, self.path)

    # ------------------------------------------------------------------ sources --
    def _stat(self) -> FileStamp | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return FileStamp(st.st_mtime_ns, st.st_size)

    def _read(self) -> tuple[str, FileStamp | None]:
        stamp = self._stat()
        try:
            with open(self.path, encoding="utf-8") as fh:
                return fh.read(), stamp
        except OSError as exc:
            raise ConfigError(f"{self.path}: cannot read: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise ConfigError(f"{self.path}: not UTF-8 text") from None

    def check_file(self) -> bool:
        """One poll: reload when mtime/size moved and the content really changed."""
        if not self.path:
            return False
        stamp = self._stat()
        if stamp is None or stamp == self._stamp:
            return False
        try:
            text, stamp = self._read()
        except ConfigError as exc:
            self._stamp = stamp
            return self._failed("file", str(exc))
        self._stamp = stamp
        d = digest(text)
        if d == self._file_digest:
            return False  # touched, not changed
        self._file_digest = d
        return self._offer(text, d, self.path, "file")

    async def poll_file(self, interval: float = 1.0) -> None:
        while True:
            await asyncio.sleep(interval)
            self.check_file()

    def on_configmap(self, obj: dict[str, Any]) -> bool:
        """The scheduler ConfigMap was added or changed."""
        self.configmap_exists = True
        data = obj.get("data")
        if not isinstance(data, dict):
            return self._failed(
                "configmap", f"ConfigMap {self.namespace}/{self.configmap}: data must be an object"
            )
        text = data.get(self.key)
        if text is None:
            if not self._cm_digest:
                log.info(
                    "scheduler ConfigMap has no configuration key",
                    configmap=f"{self.namespace}/{self.configmap}",
                    key=self.key,
                )
            return False
        if not isinstance(text, str):
            return self._failed(
                "configmap", f"ConfigMap {self.namespace}/{self.configmap}: key {self.key!r} must be a string"
            )
        d = digest(text)
        if d == self._cm_digest:
            return False
        self._cm_digest = d
        return self._offer(text, d, f"configmap {self.namespace}/{self.configmap}[{self.key}]", "configmap")

    # informer Handler protocol: the reloader watches the scheduler ConfigMap directly
    def upsert(self, obj: dict[str, Any]) -> None:
        self.on_configmap(obj)

    def delete(self, key: str, obj: dict[str, Any] | None) -> None:
        self.on_configmap_deleted()

    def on_configmap_deleted(self) -> None:
        # the configuration in force stays: deleting the ConfigMap is not a request for defaults
        self.configmap_exists = False
        self._cm_digest = ""

    # ------------------------------------------------------------------ decisions --
    def _offer(self, text: str, d: str, source: str, kind: str) -> bool:
        """Parse and swap in `text`. True when it is in force on return; a large one inside a
        running loop is parsed in a thread and swapped in when done (False on return)."""
        if d == self.current_digest:
            return False
        self._offers += 1
        seq = self._offers
        loop = _running_loop()
        if loop is not None and len(text) >= LARGE_CONFIG:
            log.info("parsing a large configuration off the event loop", source=source, bytes=len(text))
            fut = loop.run_in_executor(None, _parse_without_collector, text, source)

            def done(f: asyncio.Future[Any]) -> None:
                exc = f.exception()
                result = f.result() if exc is None else ConfigError(f"{source}: parser process failed: {exc}")
                self._parsed(seq, result, d, source, kind)

            fut.add_done_callback(done)
            self.parsing = fut
            return False
        return self._parsed(seq, _parse_or_error(text, source), d, source, kind)

    def _parsed(
        self, seq: int, result: SchedulerConfiguration | ConfigError, d: str, source: str, kind: str
    ) -> bool:
        if seq != self._offers:
            return False  # a newer configuration was offered while this one was parsed
        if isinstance(result, ConfigError):
            return self._failed(kind, str(result))
        self._swap(result, d, source)
        self.reloads += 1
        if self.on_reload:
            self.on_reload(kind, result)
        return True

    def _swap(self, conf: SchedulerConfiguration, d: str, source: str) -> None:
        self.current = conf
        self.current_digest = d
        self.current_source = source
        self.last_error = ""
        tiers = " | ".join(", ".join(p.name for p in t.plugins) for t in conf.tiers)
        log.info("scheduler configuration loaded", source=source, actions=",".join(conf.actions), tiers=tiers)
        for w in conf.warnings:
            log.warning("scheduler configuration warning", source=source, warning=w)

    def _failed(self, kind: str, error: str, emit: bool = True) -> bool:
        self.failures += 1
        self.last_error = error
        if emit:
            log.error(
                "scheduler configuration refused, keeping the last good one",
                error=error,
                kept=self.current_source,
            )
        if self.on_failure:
            self.on_failure(kind, error)
        if self.warn_event and self.configmap_exists:
            self.warn_event("FailedLoadConfig", error, kind)
        return False


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


_PARSE_LOCK = threading.Lock()


def _parse_without_collector(text: str, source: str) -> SchedulerConfiguration | ConfigError:
    """The worker thread's parse. A large parse allocates millions of objects, and the cyclic
    collector it triggers stops every thread (the event loop too) for up to seconds: it is held
    off for the parse (reference counting still frees the garbage) and restored after."""
    with _PARSE_LOCK:
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return _parse_or_error(text, source)
        finally:
            if was_enabled:
                gc.enable()


def _parse_or_error(text: str, source: str) -> SchedulerConfiguration | ConfigError:
    try:
        return parse(text, source)
    except ConfigError as exc:
        return exc
    except Exception as exc:  # a parser bug on odd input is a refused configuration, not a crash
        return ConfigError(f"{source}: {type(exc).__name__}: {exc}")
