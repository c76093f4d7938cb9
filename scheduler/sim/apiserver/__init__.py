"""The sandbox: an embedded Kubernetes-compatible API server.

It stands in for kube-apiserver in integration tests and demos (see docs spec `k8s-api.md`): the
daemon, kubernetes_asyncio and real `kubectl` talk to it over HTTP(S) and must not be able to
tell the difference for the resources and verbs the project uses.

Python API (stable)::

    from scheduler.sim.apiserver import ApiServer
    srv = ApiServer(host="127.0.0.1", port=0, tls=False, history_size=10000)
    await srv.start()              # returns when listening; srv.url -> "http://127.0.0.1:PORT"
    srv.write_kubeconfig(path)     # for kubectl --kubeconfig and kubernetes_asyncio
    srv.store                      # Store: in-process access with the same semantics as HTTP
    srv.faults                     # FaultInjector (error_rate, error_codes, latency_ms, close_watches_every)
    srv.set_faults(history_size=10, expire_history=True, error_rate=0.1, error_codes=[429])
    srv.request_log                # deque of request records (verb/group/resource/subresource, code)
    await srv.stop()

Store (objects are dicts; the returned ones are the stored ones: treat them as read-only)::

    store.create(obj, namespace=None)                  -> stored object (201 semantics)
    store.get("pods", "default", "p1")                 -> object or None
    store.list("podgroups", namespace=None, label_selector="a=b", field_selector="spec.nodeName=n1")
    store.update(obj, subresource=None)                -> PUT semantics (409 on stale resourceVersion)
    store.patch("pods", ns, name, patch, "merge"|"strategic"|"json", subresource=None)
    store.delete("pods", ns, name, grace_period_seconds=None, preconditions=None)
    store.bind(ns, name, binding); store.evict(ns, name, eviction)
    unsubscribe = store.subscribe(lambda event_type, resource_key, obj: ...)   # sync, after each write
    queue, unsubscribe = store.subscribe_queue({"pods"})                        # asyncio.Queue of the same

Resource references are store keys ("pods", "podgroups.scheduling.volcano.sh") or unambiguous
names ("podgroups", "pg", "queues"). Errors are `ApiError` with `.code`, `.reason`, `.status()`.

HTTP admin API for tests: `GET/POST/DELETE /sandbox/faults`, `GET/DELETE /sandbox/requests`,
`GET /sandbox/stats`.
"""

from scheduler.sim.apiserver.errors import ApiError
from scheduler.sim.apiserver.faults import FaultInjector
from scheduler.sim.apiserver.server import ApiServer
from scheduler.sim.apiserver.store import Store

__all__ = ["ApiError", "ApiServer", "FaultInjector", "Store"]
