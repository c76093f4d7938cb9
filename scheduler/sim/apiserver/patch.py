"""The three PATCH formats: JSON merge patch (RFC 7386), strategic merge patch, JSON patch (RFC 6902).

Stored objects are never mutated (watch history and in-flight responses share them), so every
function here returns a new document that shares the untouched subtrees with the original and
copies only the path it changes. That keeps a status patch on a 5 KB pod at a few dict copies.

Strategic merge patch follows the server's rules for the built-in kinds: maps merge, `null`
deletes, lists named in `MERGE_KEYS` merge element-wise by their key (containers by name,
conditions by type, ...) honouring `$patch: delete`/`replace`, `$deleteFromPrimitiveList/` and
`finalizers`-style primitive merges; every other list is replaced. Ordering directives
(`$setElementOrder/`) and `$retainKeys` are accepted and dropped: order does not matter to any
reader of the sandbox.
"""

from __future__ import annotations

from typing import Any

from scheduler.sim.apiserver.errors import ApiError, bad_request

# list field name -> merge key, as the Go struct tags of the core API declare them
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "env": "name",
    "imagePullSecrets": "name",
    "resourceClaims": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "conditions": "type",
    "addresses": "type",
    "ownerReferences": "uid",
    "taints": "key",
    "hostAliases": "ip",
    "readinessGates": "conditionType",
    "topologySpreadConstraints": "topologyKey",
    "ports": "containerPort",
    "containerStatuses": "name",
    "initContainerStatuses": "name",
}
# primitive lists the core API merges as sets instead of replacing
MERGED_PRIMITIVE_LISTS = frozenset({"finalizers"})


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, `null` removes a key, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict):
            out[k] = merge_patch(out.get(k), v)
        else:
            out[k] = v
    return out


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return patch
    if patch.get("$patch") == "replace":
        return {k: v for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if k == "$patch" or k == "$retainKeys" or k.startswith("$setElementOrder/"):
            continue
        if k.startswith("$deleteFromPrimitiveList/"):
            name = k.split("/", 1)[1]
            drop = set(_hashable(x) for x in (v or []))
            out[name] = [x for x in out.get(name) or [] if _hashable(x) not in drop]
            continue
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict):
            merged = strategic_merge_patch(out.get(k), v)
            if merged is None:
                out.pop(k, None)
            else:
                out[k] = merged
        elif isinstance(v, list) and k in MERGE_KEYS and isinstance(out.get(k), list):
            out[k] = _merge_keyed_list(out[k], v, MERGE_KEYS[k])
        elif isinstance(v, list) and k in MERGED_PRIMITIVE_LISTS and isinstance(out.get(k), list):
            seen = {_hashable(x) for x in out[k]}
            out[k] = list(out[k]) + [x for x in v if _hashable(x) not in seen]
        elif isinstance(v, list):
            out[k] = [_strip_directives(x) for x in v]
        else:
            out[k] = v
    return out


def _hashable(x: Any) -> Any:
    return x if isinstance(x, str | int | float | bool) or x is None else repr(x)


def _strip_directives(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _strip_directives(v) for k, v in x.items() if not k.startswith("$")}
    return x


def _merge_keyed_list(current: list[Any], patch: list[Any], key: str) -> list[Any]:
    # A list patch element with `$patch: replace` replaces the whole list with the others.
    if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
        return [
            _strip_directives(p) for p in patch if not (isinstance(p, dict) and p.get("$patch") == "replace")
        ]
    out = list(current)
    # keys are compared by value; a malformed key (a list, say) must not crash the lookup
    index = {
        _hashable(item.get(key)): i for i, item in enumerate(out) if isinstance(item, dict) and key in item
    }
    for p in patch:
        if not isinstance(p, dict) or key not in p:
            # elements without the key cannot be matched: append them as the server does
            out.append(_strip_directives(p))
            continue
        i = index.get(_hashable(p[key]))
        if p.get("$patch") == "delete":
            if i is not None:
                out[i] = None
            continue
        if i is None:
            index[_hashable(p[key])] = len(out)
            out.append(_strip_directives(p))
        else:
            out[i] = strategic_merge_patch(out[i], p)
    return [x for x in out if x is not None]


# ---- JSON patch (RFC 6902) ----


def _tokens(pointer: Any) -> list[str]:
    if not isinstance(pointer, str) or (pointer and not pointer.startswith("/")):
        raise bad_request(f"invalid JSON pointer: {pointer!r}")
    if pointer == "":
        return []
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def _unprocessable(message: str) -> ApiError:
    return ApiError(422, "Invalid", message)


def _index(container: list[Any], token: str, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise _unprocessable(f"invalid array index {token!r}")
    i = int(token)
    if i > len(container) or (i == len(container) and not allow_end):
        raise _unprocessable(f"array index {i} out of bounds")
    return i


def _get(doc: Any, tokens: list[str]) -> Any:
    cur = doc
    for t in tokens:
        if isinstance(cur, dict):
            if t not in cur:
                raise _unprocessable(f"path /{'/'.join(tokens)} does not exist")
            cur = cur[t]
        elif isinstance(cur, list):
            cur = cur[_index(cur, t, False)]
        else:
            raise _unprocessable(f"path /{'/'.join(tokens)} does not exist")
    return cur


def _copy_path(doc: Any, tokens: list[str]) -> tuple[Any, Any]:
    """Copy the containers along tokens[:-1]; return (new root, copied parent of the last token)."""
    root = _shallow(doc)
    cur = root
    for t in tokens[:-1]:
        if isinstance(cur, dict):
            if t not in cur:
                raise _unprocessable(f"path /{'/'.join(tokens)}: missing parent {t!r}")
            nxt = _shallow(cur[t])
            cur[t] = nxt
        elif isinstance(cur, list):
            i = _index(cur, t, False)
            nxt = _shallow(cur[i])
            cur[i] = nxt
        else:
            raise _unprocessable(f"path /{'/'.join(tokens)}: {t!r} is not a container")
        cur = nxt
    return root, cur


def _shallow(x: Any) -> Any:
    if isinstance(x, dict):
        return dict(x)
    if isinstance(x, list):
        return list(x)
    return x


def _add(doc: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    root, parent = _copy_path(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, True), value)
    else:
        raise _unprocessable(f"cannot add at /{'/'.join(tokens)}")
    return root


def _remove(doc: Any, tokens: list[str]) -> Any:
    if not tokens:
        raise _unprocessable("cannot remove the whole document")
    root, parent = _copy_path(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise _unprocessable(f"unable to remove nonexistent key: {last}: missing value")
        del parent[last]
    elif isinstance(parent, list):
        del parent[_index(parent, last, False)]
    else:
        raise _unprocessable(f"cannot remove /{'/'.join(tokens)}")
    return root


def json_patch(doc: Any, ops: Any) -> Any:
    if not isinstance(ops, list):
        raise bad_request("json patch must be a JSON array of operations")
    for op in ops:
        if not isinstance(op, dict) or "op" not in op:
            raise bad_request(f"invalid json patch operation: {op!r}")
        kind = op["op"]
        path = _tokens(op.get("path"))
        if kind in ("add", "replace", "test") and "value" not in op:
            raise bad_request(f"json patch {kind} operation at {op.get('path')} has no value")
        if kind == "add":
            doc = _add(doc, path, op["value"])
        elif kind == "remove":
            doc = _remove(doc, path)
        elif kind == "replace":
            _get(doc, path)  # replace requires the target to exist
            doc = _add(_remove(doc, path), path, op["value"]) if path else op["value"]
        elif kind == "move":
            src = _tokens(op.get("from"))
            value = _get(doc, src)
            doc = _add(_remove(doc, src), path, value)
        elif kind == "copy":
            doc = _add(doc, path, _get(doc, _tokens(op.get("from"))))
        elif kind == "test":
            if _get(doc, path) != op["value"]:
                raise _unprocessable(f"testing value {op.get('path')} failed: test failed")
        else:
            raise bad_request(f"unexpected json patch operation {kind!r}")
    return doc
