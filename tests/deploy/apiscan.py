"""(apiGroup, resource[/sub], verb) of every Kubernetes API call the daemon's code makes.

A static reading of scheduler/kube/*.py and scheduler/daemon.py: `client.request(METHOD, path)`
(or a write queued for a pipelined batch, `queue.submit(key, METHOD, path, ...)`) where path is `resource_path(prefix, plural, namespace, name, sub)` inline or the nearest earlier
assignment of that name (optionally `+ "/status"`), `client.bind()` (pods/binding create), and
every informer `Resource(kind, path)` (list + watch). GET of a named object is `get`, of a
collection `list`. Calls it cannot resolve are returned separately, so a test can fail on them
instead of silently missing a permission.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

METHOD_VERB = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def _consts(tree: ast.AST) -> dict[str, str]:
    out = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            out[node.targets[0].id] = node.value.value
    return out


def _str(node: ast.AST, consts: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return consts.get(node.id)
    if isinstance(node, ast.JoinedStr):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
            else:
                inner = _str(v.value, consts)  # type: ignore[attr-defined]
                parts.append(inner if inner is not None else "{x}")
        return "".join(parts)
    return None


def _group(prefix: str) -> str | None:
    if prefix.startswith("/api/v1"):
        return ""
    m = re.match(r"/apis/([^/]+)/", prefix)
    return m.group(1) if m else None


def _resource_path(call: ast.Call, consts: dict[str, str]) -> tuple[str, str, bool] | None:
    a = call.args
    if len(a) < 2:
        return None
    prefix, plural = _str(a[0], consts), _str(a[1], consts)
    group = _group(prefix or "")
    if group is None or not plural:
        return None
    named = len(a) > 3 and not (isinstance(a[3], ast.Constant) and a[3].value == "")
    sub = _str(a[4], consts) if len(a) > 4 else ""
    return group, plural + (f"/{sub}" if sub else ""), named


def _is_call(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


def _method_and_path(node: ast.Call) -> tuple[str, ast.expr] | None:
    """(METHOD, path expression) of `client.request(METHOD, path, ...)`, or of a write queued
    for a pipelined batch, `queue.submit(key, METHOD, path, ...)`; None for any other call."""
    assert isinstance(node.func, ast.Attribute)
    a = node.args
    if node.func.attr == "request" and len(a) >= 2 and isinstance(a[0], ast.Constant):
        return str(a[0].value), a[1]
    queued = node.func.attr == "submit" and len(a) >= 3 and isinstance(a[1], ast.Constant)
    if queued and a[1].value in METHOD_VERB:  # type: ignore[attr-defined]
        return str(a[1].value), a[2]  # type: ignore[attr-defined]
    return None


def scan(files: list[Path]) -> tuple[set[tuple[str, str, str]], list[str]]:
    found: set[tuple[str, str, str]] = set()
    unresolved: list[str] = []
    for f in files:
        if not f.exists():
            continue
        tree = ast.parse(f.read_text())
        consts = _consts(tree)
        assigns: dict[str, list[tuple[int, tuple[str, str, bool]]]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and _is_call(node.value, "resource_path"):
                rp = _resource_path(node.value, consts)  # type: ignore[arg-type]
                if rp:
                    for t in node.targets:
                        assigns.setdefault(ast.unparse(t), []).append((node.lineno, rp))
        for node in ast.walk(tree):
            if _is_call(node, "Resource") and len(node.args) >= 2:  # type: ignore[attr-defined]
                path = _str(node.args[1], consts) or ""  # type: ignore[attr-defined]
                m = re.match(r"/api/v1/(?:namespaces/[^/]+/)?([a-z]+)$", path)
                gr = ("", m.group(1)) if m else None
                if gr is None:
                    m = re.match(r"/apis/([^/]+)/[^/]+/(?:namespaces/[^/]+/)?([a-z]+)$", path)
                    gr = (m.group(1), m.group(2)) if m else None
                if gr is None:
                    unresolved.append(f"{f.name}:{node.lineno}: {ast.unparse(node)}")
                    continue
                found |= {(*gr, "list"), (*gr, "watch")}
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr == "bind":
                found.add(("", "pods/binding", "create"))
                continue
            call = _method_and_path(node)
            if call is None:
                continue
            method, target, sub = call[0], call[1], ""
            if isinstance(target, ast.BinOp):
                sub = _str(target.right, consts) or ""
                target = target.left
            rp = None
            if _is_call(target, "resource_path"):
                rp = _resource_path(target, consts)  # type: ignore[arg-type]
            else:
                earlier = [x for x in assigns.get(ast.unparse(target), []) if x[0] <= node.lineno]
                rp = max(earlier)[1] if earlier else None
            if rp is None:
                # the informer's generic list: covered by the Resource(...) entries above
                if ast.unparse(target) == "self.resource.path":
                    continue
                unresolved.append(f"{f.name}:{node.lineno}: {ast.unparse(node)[:100]}")
                continue
            group, res, named = rp
            verb = METHOD_VERB.get(str(method)) or ("get" if named else "list")
            found.add((group, res + sub, verb))
    return found, unresolved
