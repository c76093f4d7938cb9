"""The daemon's one connection to the API server: configuration loading, a QPS/burst token bucket,
and raw JSON requests.

kubernetes_asyncio supplies what is hard to get right — kubeconfig contexts, exec/OIDC token
refresh, in-cluster service-account tokens, TLS — and we stop there: responses are read as plain
JSON (`_preload_content=False`) instead of being deserialised into generated model classes,
because the cache only keeps slim records and model objects for 150,000 pods would cost gigabytes
and seconds. Every request, watches included, first takes a token from its clientset's bucket
(`bucket_for`), as client-go's rate limiter does for `--kube-api-qps` / `--kube-api-burst`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import ssl
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config
from yarl import URL

from scheduler.kube.keepalive import Answer, KeepAliveClient, TransportError, header_lines

try:  # a dependency: 3-5x faster than json on every watch event and the 150,000-pod initial list
    from orjson import dumps as json_dumps
    from orjson import loads as json_loads
except ImportError:  # pragma: no cover - an install that left it out still works, slower
    json_loads = json.loads

    def json_dumps(obj: Any) -> bytes:
        return json.dumps(obj, separators=(",", ":")).encode()


MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
# Statuses worth retrying: throttled, server trouble, or the request never got an answer.
RETRYABLE = frozenset({0, 429, 500, 502, 503, 504})


class ApiError(Exception):
    """A failed API call. `status` 0 means no HTTP answer (connection refused, reset, timeout)."""

    def __init__(self, status: int, reason: str, message: str, retry_after: float | None = None) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        self.retry_after = retry_after
        super().__init__(f"{status} {reason}: {message}" if status else message)

    @property
    def retryable(self) -> bool:
        return self.status in RETRYABLE


class Fenced(ApiError):
    """A write refused before it was sent: this process does not hold the lease by its own clock."""

    def __init__(self, method: str, path: str) -> None:
        super().__init__(0, "Fenced", f"{method} {path}: not sent, the leader lease is not held")

    @property
    def retryable(self) -> bool:
        return False


class TokenBucket:
    """client-go's flowcontrol token bucket: `qps` tokens a second, at most `burst` saved up.

    `reserve()` hands out a token now or a delay to wait; tokens may go negative so that waiting
    callers are served in arrival order without a lock. `qps <= 0` means unlimited.
    """

    def __init__(self, qps: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.qps = float(qps)
        self.burst = max(int(burst), 1)
        self._clock = clock
        self._tokens = float(self.burst)
        self._last = clock()

    def _refill(self) -> None:
        now = self._clock()
        if self.qps > 0:
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now

    def reserve(self) -> float:
        """Take one token; return how many seconds the caller must wait before using it."""
        if self.qps <= 0:
            return 0.0
        self._refill()
        self._tokens -= 1.0
        if self._tokens >= 0:
            return 0.0
        return -self._tokens / self.qps

    async def acquire(self) -> None:
        delay = self.reserve()
        if delay > 0:
            await asyncio.sleep(delay)


@dataclass(slots=True)
class ClientOptions:
    kubeconfig: str = ""
    master: str = ""
    qps: float = 2000.0
    burst: int = 2000
    user_agent: str = "vc-scheduler"
    request_timeout: float = 30.0


async def load_configuration(kubeconfig: str = "", master: str = "") -> k8s.Configuration:
    """Kubeconfig from the flag, else in-cluster, else $KUBECONFIG / ~/.kube/config (client-go's order).

    `--master` overrides the server address, as in Volcano's BuildConfigFromFlags.
    """
    cfg = k8s.Configuration()
    in_cluster = bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and os.path.exists(
        "/var/run/secrets/kubernetes.io/serviceaccount/token"
    )
    if kubeconfig:
        await k8s_config.load_kube_config(
            config_file=kubeconfig, client_configuration=cfg, persist_config=False
        )
    elif master and not in_cluster:
        cfg.host = master
    elif in_cluster:
        k8s_config.load_incluster_config(client_configuration=cfg)
    else:
        await k8s_config.load_kube_config(client_configuration=cfg, persist_config=False)
    if master:
        cfg.host = master.rstrip("/")
    return cfg


def status_error(status: int, body: bytes, headers: Any) -> ApiError:
    reason, message = "", body.decode("utf-8", "replace")[:500]
    try:
        parsed = json.loads(body)
        if isinstance(parsed, dict):
            reason = str(parsed.get("reason") or "")
            message = str(parsed.get("message") or message)
    except ValueError:
        pass
    retry_after: float | None = None
    raw = headers.get("Retry-After") if headers is not None else None
    if raw:
        try:
            retry_after = float(raw)
        except ValueError:
            retry_after = None
    return ApiError(status, reason or _REASONS.get(status, "Error"), message, retry_after)


_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    409: "Conflict",
    410: "Expired",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
}


def _transport_error(method: str, path: str, exc: TransportError) -> ApiError:
    """A keep-alive write that got no answer, as the API error `_send` gives for it."""
    return ApiError(0, "ConnectionError", f"{method} {path}: {exc}")


def _answer_error(answer: Answer) -> ApiError:
    """A keep-alive write's answer that is not 2xx, as the API error `_send` gives for it."""
    return status_error(answer.status, answer.body, {"Retry-After": answer.retry_after})


def _outcome(method: str, path: str, answer: Answer | TransportError) -> ApiError | None:
    """A pipelined write's outcome: None for a 2xx answer, else the API error `_send` gives."""
    if isinstance(answer, TransportError):
        return _transport_error(method, path, answer)
    return None if 200 <= answer.status < 300 else _answer_error(answer)


def _resolve_env_once(api: k8s.ApiClient) -> None:
    """Read the proxy environment once instead of on every request.

    kubernetes_asyncio opens its aiohttp session with `trust_env=True`, which makes every request
    look up ~/.netrc and the proxy variables in a worker thread: two thread hand-offs per Binding.
    client-go reads HTTPS_PROXY/NO_PROXY (never netrc), so we resolve the proxy for the API
    server's address here, hand it to the REST client, and switch the per-request lookups off.
    """
    rest = getattr(api, "rest_client", None)
    session = getattr(rest, "pool_manager", None)
    if rest is None or session is None or not getattr(session, "_trust_env", False):
        return
    if not getattr(rest, "proxy", None):
        with contextlib.suppress(LookupError, ValueError):
            proxy, proxy_auth = get_env_proxy_for_url(URL(str(api.configuration.host)))
            rest.proxy = str(proxy)
            if proxy_auth is not None:
                rest.proxy_headers = {
                    **(rest.proxy_headers or {}),
                    "Proxy-Authorization": proxy_auth.encode(),
                }
    session._trust_env = False


def tls_context(cfg: k8s.Configuration) -> ssl.SSLContext:
    """The TLS settings kubernetes_asyncio's REST client makes of a configuration: its CA, client
    certificate, and verification switched off only when the kubeconfig says so."""
    ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
    if cfg.cert_file:
        ctx.load_cert_chain(cfg.cert_file, keyfile=cfg.key_file)
    if not cfg.verify_ssl:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if getattr(cfg, "disable_strict_ssl_verification", False):
        ctx.verify_flags &= ~ssl.VERIFY_X509_STRICT
    return ctx


def _keepalive_client(api: k8s.ApiClient) -> KeepAliveClient | None:
    """The lean client for writes, or None where aiohttp must carry them (through a proxy)."""
    rest = getattr(api, "rest_client", None)
    cfg = api.configuration
    if rest is None or getattr(rest, "proxy", None):
        return None
    try:
        return KeepAliveClient(
            str(cfg.host),
            tls_context(cfg) if str(cfg.host).startswith("https:") else None,
            getattr(rest, "server_hostname", None),
            max_connections=int(getattr(cfg, "connection_pool_maxsize", 0) or 100),
        )
    except ValueError:  # an address the lean client does not speak
        return None


class KubeClient:
    """Raw JSON access to the API server through kubernetes_asyncio's authenticated session."""

    def __init__(self, api: k8s.ApiClient, options: ClientOptions) -> None:
        self.api = api
        _resolve_env_once(api)
        self.core = k8s.CoreV1Api(api)
        self.options = options
        # Volcano's scheduler talks through four clientsets built from one configuration, each
        # with its own --kube-api-qps/--kube-api-burst bucket: core (lists, watches, Bindings, pod
        # conditions), Volcano's CRDs (PodGroup and Queue status), events and the leader lease.
        # One shared bucket would let a burst's Scheduled events and PodGroup writes take the
        # Bindings' tokens, which Volcano never does.
        self.bucket = TokenBucket(options.qps, options.burst)
        self._buckets = {
            kind: TokenBucket(options.qps, options.burst) for kind in ("volcano", "events", "lease")
        }
        self.requests = 0  # every request sent, for logs and tests
        # asked before every write is sent (after any wait for a token; not reads, not the lease
        # itself) with the fence term the write belongs to, if any: False refuses it (fencing)
        self.write_guard: Callable[[int | None], bool] | None = None
        # writes (every method but GET) go through a lean keep-alive client: a burst's Bindings
        # and events cost aiohttp's client more CPU than their decisions (scheduler/kube/keepalive.py)
        self.writer = _keepalive_client(api)
        # the rendered header lines of writes: (content type, credentials) -> lines; the
        # defaults they were rendered from (the cache is dropped when those change)
        self._lines: dict[tuple[str | None, bool, bool, str | None], str] = {}
        self._lines_defaults: dict[str, str] = {}

    @classmethod
    async def create(cls, options: ClientOptions) -> KubeClient:
        cfg = await load_configuration(options.kubeconfig, options.master)
        api = k8s.ApiClient(configuration=cfg)
        api.user_agent = options.user_agent
        return cls(api, options)

    def bucket_for(self, path: str) -> TokenBucket:
        """The token bucket of the Volcano clientset that would send this request."""
        if path.startswith("/apis/") and ".volcano.sh/" in path:
            return self._buckets["volcano"]
        if path.startswith("/apis/coordination.k8s.io/"):
            return self._buckets["lease"]
        parts = path.split("/", 6)  # "", "api", "v1", "namespaces", ns, "events", name
        if len(parts) > 5 and parts[1] == "api" and parts[3] == "namespaces" and parts[5] == "events":
            return self._buckets["events"]
        return self.bucket

    @property
    def host(self) -> str:
        return str(self.api.configuration.host)

    async def close(self) -> None:
        if self.writer is not None:
            await self.writer.close()
        await self.api.close()

    async def credentials(self, content_type: str | None = None) -> dict[str, str]:
        """A request's headers with fresh credentials (no token taken, no fence asked)."""
        headers = {**self.api.default_headers, "Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        cfg = self.api.configuration
        if "BearerToken" in cfg.api_key:  # an exec/OIDC token is refreshed by this call when due
            headers["authorization"] = await cfg.get_api_key_with_prefix("BearerToken")
        return headers

    async def _headers(
        self, method: str, path: str, content_type: str | None, fenced: bool, term: int | None
    ) -> dict[str, str]:
        """Take a token, then the request's headers with fresh credentials; Fenced when a write
        may no longer go."""
        await self.bucket_for(path).acquire()
        headers = await self.credentials(content_type)
        # checked after every wait (the token, a token refresh) and with none before the send: a
        # write held up across a pause must not go
        if fenced and method != "GET" and self.write_guard is not None and not self.write_guard(term):
            raise Fenced(method, path)
        self.requests += 1
        return headers

    async def _send(
        self,
        method: str,
        path: str,
        query: dict[str, Any] | None,
        body: Any,
        content_type: str | None,
        timeout: Any,
        fenced: bool = False,
        term: int | None = None,
    ) -> aiohttp.ClientResponse:
        headers = await self._headers(method, path, content_type, fenced, term)
        url = self.api.configuration.host + path
        if query:
            url += "?" + _query_string(query)
        if not isinstance(timeout, aiohttp.ClientTimeout):
            timeout = aiohttp.ClientTimeout(total=timeout)
        args: dict[str, Any] = {"method": method, "url": url, "headers": headers, "timeout": timeout}
        if body is not None:
            headers.setdefault("Content-Type", "application/json")
            args["data"] = body if isinstance(body, bytes) else json_dumps(body)
        rest = self.api.rest_client
        if rest.proxy:
            args["proxy"] = rest.proxy
            if rest.proxy_headers:
                args["proxy_headers"] = rest.proxy_headers
        if rest.server_hostname:
            args["server_hostname"] = rest.server_hostname
        try:
            # the REST client's own aiohttp session (its TLS context, client certificate and
            # connection pool), without the generated client's per-request serialisation: at
            # thousands of Bindings a second that was most of the client's CPU
            resp: aiohttp.ClientResponse = await rest.pool_manager.request(**args)
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise ApiError(0, "ConnectionError", f"{method} {path}: {type(exc).__name__}: {exc}") from None
        return resp

    async def _write(
        self,
        writer: KeepAliveClient,
        method: str,
        path: str,
        query: dict[str, Any] | None,
        body: Any,
        content_type: str | None,
        timeout: float,
        fenced: bool,
        term: int | None,
        bucket: TokenBucket | None = None,
    ) -> Answer:
        """A write through the keep-alive client: its 2xx answer, or ApiError as `_send` gives.

        The same token, credentials, fence check and header lines as `_headers` and `_send`,
        with the lines rendered once per content type and credentials instead of a dict built
        and rendered for every Binding and event."""
        delay = (bucket or self.bucket_for(path)).reserve()
        if delay > 0:
            await asyncio.sleep(delay)
        bearer, token = self._bearer_now() or await self._bearer()
        lines = self._write_lines(content_type, body is not None, bearer, token)
        # checked after every wait (the token, a token refresh) and with none before the send: a
        # write held up across a pause must not go
        if fenced and self.write_guard is not None and not self.write_guard(term):
            raise Fenced(method, path)
        self.requests += 1
        data: bytes | None = None
        if body is not None:
            data = body if isinstance(body, bytes) else json_dumps(body)
        target = path + "?" + _query_string(query) if query else path
        try:
            answer = await writer.request_lines(method, target, lines, data, timeout)
        except TransportError as exc:
            raise _transport_error(method, path, exc) from None
        # raised where it is built: an exception kept in a local would hold this frame (a cycle)
        if not 200 <= answer.status < 300:
            raise _answer_error(answer)
        return answer

    async def write_pipelined(
        self, writes: list[tuple[str, str, Any, str | None]], term: int | None = None
    ) -> list[ApiError | None]:
        """`(method, path, body, content type)` writes whose answers matter only for their status
        (events), sent back to back: pipelined on one connection of the keep-alive client
        (`KeepAliveClient.request_pipelined`), else one by one through `request`. Each write's
        ApiError, or None when it succeeded.

        The same tokens (each write its own, all taken before the batch goes), credentials,
        header lines and fence check as `_write`, once for the batch."""
        if self.writer is None:
            return [await self._write_one(m, p, b, ct, term) for m, p, b, ct in writes]
        delay = 0.0
        for _method, path, _body, _ct in writes:
            delay = max(delay, self.bucket_for(path).reserve())
        if delay > 0:
            await asyncio.sleep(delay)
        bearer, token = self._bearer_now() or await self._bearer()
        if self.write_guard is not None and not self.write_guard(term):
            return [Fenced(m, p) for m, p, _b, _ct in writes]
        requests: list[tuple[str, str, str, bytes | None]] = []
        for method, path, body, ct in writes:
            data = None if body is None else body if isinstance(body, bytes) else json_dumps(body)
            requests.append((method, path, self._write_lines(ct, body is not None, bearer, token), data))
        self.requests += len(requests)
        answers = await self.writer.request_pipelined(requests, self.options.request_timeout)
        return [_outcome(m, p, a) for (m, p, _b, _ct), a in zip(writes, answers, strict=True)]

    async def _write_one(
        self, method: str, path: str, body: Any, content_type: str | None, term: int | None
    ) -> ApiError | None:
        try:
            await self.request(method, path, body=body, content_type=content_type, term=term, decode=False)
        except ApiError as exc:
            return exc
        return None

    def _bearer_now(self) -> tuple[bool, str | None] | None:
        """`_bearer` without a coroutine when no hook refreshes the token (a static token, or
        none): the same token, spelled as `get_api_key_with_prefix` spells it. None when a hook
        must run first: then `_bearer`. Every Binding and event asks, thousands a second."""
        cfg = self.api.configuration
        keys = cfg.api_key
        if "BearerToken" not in keys:
            return False, None
        if cfg.refresh_api_key_hook is not None:
            return None
        key = keys["BearerToken"]
        if not key:
            return True, None
        prefix = cfg.api_key_prefix.get("BearerToken")
        return True, f"{prefix} {key}" if prefix else key

    async def _bearer(self) -> tuple[bool, str | None]:
        """Whether writes carry a bearer token, and the token: an exec/OIDC token is refreshed by
        this call when due (as `credentials` does)."""
        cfg = self.api.configuration
        bearer = "BearerToken" in cfg.api_key
        return bearer, await cfg.get_api_key_with_prefix("BearerToken") if bearer else None

    def _write_lines(self, content_type: str | None, has_body: bool, bearer: bool, token: str | None) -> str:
        """The header lines of a write: `credentials(content_type)`'s headers (a body's type
        JSON unless said), rendered in the same order."""
        defaults = self.api.default_headers
        if defaults != self._lines_defaults:
            self._lines.clear()
            self._lines_defaults = dict(defaults)
        key = (content_type, has_body, bearer, token)
        lines = self._lines.get(key)
        if lines is None:
            headers = {**defaults, "Accept": "application/json"}
            if content_type:
                headers["Content-Type"] = content_type
            if bearer:
                headers["authorization"] = token  # type: ignore[assignment]
            if has_body:
                headers.setdefault("Content-Type", "application/json")
            lines = header_lines(headers)
            if len(self._lines) >= 16:  # tokens that rotate: keep only the recent ones
                self._lines.clear()
            self._lines[key] = lines
        return lines

    async def request(
        self,
        method: str,
        path: str,
        query: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str | None = None,
        timeout: float | None = None,
        fenced: bool = True,
        term: int | None = None,
        decode: bool = True,
        loads: Callable[[bytes], Any] = json_loads,
    ) -> Any:
        """One call; the decoded JSON answer, or ApiError carrying the server's Status.

        A write (any method but GET) with `fenced` goes only while `write_guard` allows it (for
        the fence `term` it was decided in, if given); the lease's own requests pass
        `fenced=False`, or a leader could never renew. `decode=False` skips decoding a successful
        answer nobody reads (a Binding's); `loads` decodes it (a pod list's decodes fewer fields).
        """
        timeout = timeout or self.options.request_timeout
        if method != "GET" and self.writer is not None:
            answer = await self._write(
                self.writer, method, path, query, body, content_type, timeout, fenced, term
            )
            return _decoded(answer.body, method, path, answer.status, loads) if decode else None
        resp = await self._send(method, path, query, body, content_type, timeout, fenced, term)
        try:
            data = await resp.read()
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise ApiError(0, "ConnectionError", f"{method} {path}: {type(exc).__name__}: {exc}") from None
        finally:
            resp.release()
        if not 200 <= resp.status < 300:
            raise status_error(resp.status, data, resp.headers)
        return _decoded(data, method, path, resp.status, loads) if decode else None

    async def watch(
        self,
        path: str,
        query: dict[str, Any],
        timeout: float,
        loads: Callable[[bytes], Any] = json_loads,
    ) -> AsyncIterator[dict[str, Any]]:
        """Stream watch events as dicts, each decoded by `loads`. Ends when the server closes the
        stream."""
        # the server ends the stream after timeoutSeconds; the read timeout only catches a dead peer
        client_timeout = aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=timeout + 30)
        resp = await self._send("GET", path, {**query, "watch": "true"}, None, None, client_timeout)
        try:
            if not 200 <= resp.status < 300:
                raise status_error(resp.status, await resp.read(), resp.headers)
            # whatever the socket has is read at once and split into events: one await per
            # network read instead of one per event (a burst's thousands of events), and an event
            # of any size (aiohttp's readline refuses lines over 128 KiB)
            partial: list[bytes] = []  # the start of an event whose newline has not come yet
            while True:
                try:
                    chunk = await resp.content.readany()
                except (aiohttp.ClientError, OSError, TimeoutError, ValueError) as exc:
                    raise ApiError(
                        0, "ConnectionError", f"watch {path}: {type(exc).__name__}: {exc}"
                    ) from None
                if not chunk:
                    lines = [b"".join(partial)]  # the stream ended: a last event may lack its newline
                elif b"\n" not in chunk:
                    partial.append(chunk)
                    continue
                else:
                    head, *lines, tail = chunk.split(b"\n")
                    lines.insert(0, b"".join(partial) + head if partial else head)
                    partial = [tail] if tail else []
                for line in lines:
                    event = _watch_event(line, path, loads)
                    if event is not None:
                        yield event
                if not chunk:
                    return
        finally:
            resp.release()

    async def bind(self, namespace: str, name: str, body: dict[str, Any], term: int | None = None) -> None:
        """POST pods/{name}/binding. The API answers a Status, not a Binding: the answer is ignored.

        A plain request rather than the generated `create_namespaced_pod_binding`, whose model
        validation and serialisation cost more CPU than the request itself at 1,000 binds a second.
        """
        path = resource_path("/api/v1", "pods", namespace, name, "binding")
        if self.writer is not None:  # `request`'s write, with the core clientset's bucket known
            timeout = self.options.request_timeout
            await self._write(self.writer, "POST", path, None, body, None, timeout, True, term, self.bucket)
            return
        await self.request("POST", path, body=body, term=term, decode=False)


def _decoded(
    data: bytes, method: str, path: str, status: int, loads: Callable[[bytes], Any] = json_loads
) -> Any:
    if not data:
        return None
    try:
        return loads(data)
    except ValueError:
        raise ApiError(status, "BadResponse", f"{method} {path}: answer is not JSON") from None


def _query_string(query: dict[str, Any]) -> str:
    return urlencode([(k, v) for k, v in query.items() if v is not None])


def _watch_event(line: bytes, path: str, loads: Callable[[bytes], Any] = json_loads) -> dict[str, Any] | None:
    line = line.strip()
    if not line:
        return None
    try:
        event = loads(line)
    except ValueError:
        raise ApiError(0, "BadResponse", f"watch {path}: undecodable event") from None
    return event if isinstance(event, dict) else None


def resource_path(prefix: str, plural: str, namespace: str = "", name: str = "", sub: str = "") -> str:
    """`/api/v1[/namespaces/ns]/plural[/name[/sub]]` (prefix is `/api/v1` or `/apis/<group>/<version>`)."""
    p = prefix
    if namespace:
        p += f"/namespaces/{namespace}"
    p += f"/{plural}"
    if name:
        p += f"/{name}"
        if sub:
            p += f"/{sub}"
    return p
