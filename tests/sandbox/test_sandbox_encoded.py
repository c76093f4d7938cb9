"""Lists and initial watch events reuse each object's encoding until the object is written again."""

from __future__ import annotations

import json

import aiohttp

from scheduler.sim.apiserver import ApiServer, codec
from tests.sandbox.objects import pod


async def test_lists_follow_every_write_through_the_encoding_cache(
    server: ApiServer, http: aiohttp.ClientSession
) -> None:
    s = server.store
    for name in ("a", "b", "c"):
        s.create(pod(name))
    async with http.get("/api/v1/namespaces/default/pods") as r:
        first = await r.read()
    assert json.loads(first) == json.loads(
        codec.dumps(
            {
                "kind": "PodList",
                "apiVersion": "v1",
                "metadata": {"resourceVersion": str(s.rv)},
                "items": s.list("pods", "default"),
            }
        )
    )
    s.patch("pods", "default", "b", {"metadata": {"labels": {"v": "2"}}})
    s.bind("default", "c", {"target": {"name": "n1"}})
    s.delete("pods", "default", "a")
    async with http.get("/api/v1/namespaces/default/pods") as r:
        items = {p["metadata"]["name"]: p for p in (await r.json())["items"]}
    assert sorted(items) == ["b", "c"]  # a deleted, unbound pod is gone at once
    assert items["b"]["metadata"]["labels"] == {"v": "2"} and items["c"]["spec"]["nodeName"] == "n1"
    assert (
        items["b"]["metadata"]["resourceVersion"]
        == s.get("pods", "default", "b")["metadata"]["resourceVersion"]
    )
    # the initial events of a watch are the same current versions
    async with http.get(
        "/api/v1/namespaces/default/pods", params={"watch": "true", "timeoutSeconds": "1"}
    ) as r:
        events = [json.loads(line) for line in (await r.read()).splitlines()]
    assert {e["object"]["metadata"]["name"]: e["object"]["metadata"].get("labels") for e in events} == {
        "b": {"v": "2"},
        "c": None,
    }
    # a dry-run create is never cached as if it were stored
    async with http.post("/api/v1/namespaces/default/pods", params={"dryRun": "All"}, json=pod("d")) as r:
        assert r.status == 201
    assert s.get("pods", "default", "d") is None and not any(k[2] == "d" for k in s._encoded)


async def test_objects_encoded_ahead_are_listed_as_they_are_now(
    server: ApiServer, http: aiohttp.ClientSession
) -> None:
    s = server.store
    for name in ("a", "b", "c"):
        s.create(pod(name))
    assert s.encode_ahead("pods") == 3
    s.patch("pods", "default", "b", {"metadata": {"labels": {"v": "2"}}})
    s.create(pod("aa"))  # after the keys were ordered for pagination
    s.delete("pods", "default", "c")
    names, labels, cont = [], {}, ""
    while True:
        params = {"limit": "2", **({"continue": cont} if cont else {})}
        async with http.get("/api/v1/namespaces/default/pods", params=params) as r:
            page = await r.json()
        for p in page["items"]:
            names.append(p["metadata"]["name"])
            labels[p["metadata"]["name"]] = p["metadata"].get("labels")
        if not (cont := page["metadata"].get("continue")):
            break
    assert names == ["a", "aa", "b"]
    assert labels["b"] == {"v": "2"}
