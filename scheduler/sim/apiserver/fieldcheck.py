"""Server-side field validation: what a write does with fields its kind does not have.

A real API server decodes a body into the kind's Go type (built-in kinds) or prunes it by the
CRD's structural schema (custom resources), so a field the kind does not declare never reaches
storage. The request's `fieldValidation` says what the client hears about it: `Strict` refuses
the write (400, "strict decoding error: unknown field ..."), `Warn` (the default) accepts it
without the field and sends a `Warning` header per field (kubectl prints them), `Ignore` drops
the field silently. kubectl sends `Strict` for `apply`/`create` unless `--validate=false`.

The schemas of built-in kinds come from the installed kubernetes_asyncio models (the Kubernetes
release it was generated from: a field newer than that release counts as unknown). Custom
resources are checked against the schema of their CustomResourceDefinition when one has been
created in the sandbox (`kubectl apply -k deploy/crds`); without one they keep every field, as
a CRD with `x-kubernetes-preserve-unknown-fields` would.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from kubernetes_asyncio.client import models

from scheduler.sim.apiserver import codec
from scheduler.sim.apiserver.errors import ApiError, bad_request
from scheduler.sim.apiserver.resources import ResourceInfo

DIRECTIVES = ("Ignore", "Strict", "Warn")
DEFAULT_DIRECTIVE = "Warn"


@dataclass(slots=True)
class Schema:
    """What a JSON value may hold: declared fields, list items, map values, or anything."""

    fields: dict[str, Schema] | None = None  # an object with exactly these fields
    items: Schema | None = None  # a list of these
    values: Schema | None = None  # a map of these
    lazy: dict[str, str] = field(default_factory=dict)  # field -> model type, built on first use

    def child(self, key: str) -> Schema | None:
        """The schema of field `key`; None when the object has no such field."""
        assert self.fields is not None
        got = self.fields.get(key)
        if got is None and key in self.lazy:
            got = self.fields[key] = _from_type(self.lazy.pop(key))
        return got


ANY = Schema()
_LIST = re.compile(r"^list\[(.+)\]$")
_MAP = re.compile(r"^dict\(str, (.+)\)$")
_MODELS: dict[str, Schema] = {}


def _from_type(type_name: str) -> Schema:
    if m := _LIST.match(type_name):
        return Schema(items=_from_type(m.group(1)))
    if m := _MAP.match(type_name):
        return Schema(values=_from_type(m.group(1)))
    cls = getattr(models, type_name, None)
    if cls is None or not isinstance(getattr(cls, "openapi_types", None), dict):
        return ANY  # str, int, bool, datetime, object (int-or-string, raw JSON)
    return _model(type_name)


def _model(name: str) -> Schema:
    got = _MODELS.get(name)
    if got is None:
        cls = getattr(models, name)
        # fields resolve lazily: the model graph is large and a request touches a small part
        lazy = {cls.attribute_map[attr]: t for attr, t in cls.openapi_types.items()}
        got = _MODELS[name] = Schema(fields={}, lazy=lazy)
    return got


def _model_name(res: ResourceInfo) -> str | None:
    if res.kind == "Event":
        return "CoreV1Event" if res.group == "" else "EventsV1Event"
    name = f"{res.version.capitalize()}{res.kind}"
    return name if isinstance(getattr(getattr(models, name, None), "openapi_types", None), dict) else None


def builtin_schema(res: ResourceInfo) -> Schema | None:
    name = _model_name(res)
    return _model(name) if name else None


def crd_schema(res: ResourceInfo, crd: dict[str, Any] | None) -> Schema | None:
    """The structural schema a stored CRD declares for `res`'s version; None when there is none."""
    if crd is None:
        return None
    for v in (crd.get("spec") or {}).get("versions") or []:
        if isinstance(v, dict) and v.get("name") == res.version:
            props = ((v.get("schema") or {}).get("openAPIV3Schema")) or None
            if not isinstance(props, dict):
                return None
            top = _from_props(props)
            if top.fields is None:
                return None
            # apiVersion, kind and metadata are the API machinery's, whatever the schema says
            top.fields.update(apiVersion=ANY, kind=ANY, metadata=_model("V1ObjectMeta"))
            return top
    return None


def _from_props(p: Any) -> Schema:
    if not isinstance(p, dict) or p.get("x-kubernetes-preserve-unknown-fields"):
        return ANY
    if p.get("type") == "array":
        return Schema(items=_from_props(p.get("items")))
    if p.get("type") == "object" or "properties" in p:
        props = p.get("properties")
        extra = p.get("additionalProperties")
        if isinstance(props, dict):
            return Schema(fields={k: _from_props(v) for k, v in props.items()})
        if isinstance(extra, dict):
            return Schema(values=_from_props(extra))
        return ANY  # an object with neither: free-form
    return ANY


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


# (schema id, JSON) of object specs found to hold only declared fields, to the schema (held so
# that its id stays its own): the pods of one template are checked once (a pod spec's walk was
# ~15 us of every create); emptied when full
_CLEAN_SPECS: dict[tuple[int, bytes], Schema] = {}
_CLEAN_SPECS_SIZE = 256


def unknown_fields(value: Any, schema: Schema, path: str = "", patch: bool = False) -> list[str]:
    """Paths of the fields `value` holds that `schema` does not declare, as Go's decoder names them.

    `patch`: a strategic merge patch, whose `$`-keys are directives, not fields.
    """
    out: list[str] = []
    if patch or path or schema.fields is None or not isinstance(value, dict):
        _walk(value, schema, path, patch, out)
        return out
    for k, v in value.items():
        sub = schema.child(k)
        if sub is None:
            out.append(k)
        elif sub is not ANY and v is not None:
            if k == "spec" and isinstance(v, dict):
                _walk_spec(v, sub, out)
            else:
                _walk(v, sub, k, False, out)
    return out


def _walk_spec(spec: dict[str, Any], schema: Schema, out: list[str]) -> None:
    try:
        key = (id(schema), codec.dumps(spec))
    except (TypeError, ValueError):  # not JSON (an in-process caller's odd value): walked in full
        _walk(spec, schema, "spec", False, out)
        return
    if key in _CLEAN_SPECS:
        return
    before = len(out)
    _walk(spec, schema, "spec", False, out)
    if len(out) == before:
        if len(_CLEAN_SPECS) >= _CLEAN_SPECS_SIZE:
            _CLEAN_SPECS.clear()
        _CLEAN_SPECS[key] = schema


def _walk(value: Any, schema: Schema, path: str, patch: bool, out: list[str]) -> None:
    if schema is ANY:
        return
    if schema.fields is not None:
        if isinstance(value, dict):
            for k, v in value.items():
                sub = schema.child(k)
                if sub is None:
                    if not (patch and k.startswith("$")):
                        out.append(_join(path, k))
                elif sub is not ANY and v is not None:
                    _walk(v, sub, _join(path, k), patch, out)
    elif schema.items is not None:
        if isinstance(value, list) and schema.items is not ANY:
            for i, v in enumerate(value):
                _walk(v, schema.items, f"{path}[{i}]", patch, out)
    elif schema.values is not None and isinstance(value, dict) and schema.values is not ANY:
        for k, v in value.items():
            _walk(v, schema.values, f"{path}[{k}]", patch, out)


def pruned(value: Any, schema: Schema, patch: bool = False) -> Any:
    """`value` without the fields `schema` does not declare (a copy where something goes)."""
    if schema is ANY or value is None:
        return value
    if schema.fields is not None and isinstance(value, dict):
        out = {}
        for k, v in value.items():
            sub = schema.child(k)
            if sub is not None:
                out[k] = pruned(v, sub, patch)
            elif patch and k.startswith("$"):
                out[k] = v
        return out
    if schema.items is not None and isinstance(value, list):
        return [pruned(v, schema.items, patch) for v in value]
    if schema.values is not None and isinstance(value, dict):
        return {k: pruned(v, schema.values, patch) for k, v in value.items()}
    return value


def json_patch_checked(ops: Any, schema: Schema) -> tuple[Any, list[str]]:
    """A JSON patch without what would write unknown fields, and those fields' paths.

    An op whose target path is unknown goes; an op's value loses its unknown fields, as the
    server's strict decoding of the patched object would find and its pruning would drop them.
    """
    out: list[str] = []
    if not isinstance(ops, list):
        return ops, out
    kept = []
    for op in ops:
        if not isinstance(op, dict) or op.get("op") not in ("add", "replace", "copy", "move"):
            kept.append(op)
            continue
        before = len(out)
        where = _pointer_schema(str(op.get("path") or ""), schema, out)
        if where is None:
            if len(out) == before:
                kept.append(op)  # somewhere free-form
            continue
        sub, path = where
        if op.get("op") in ("add", "replace"):
            _walk(op.get("value"), sub, path, False, out)
            if len(out) > before:
                op = {**op, "value": pruned(op.get("value"), sub)}
        kept.append(op)
    return kept, out


def _pointer_schema(pointer: str, schema: Schema, out: list[str]) -> tuple[Schema, str] | None:
    path = ""
    for raw in pointer.split("/")[1:]:
        seg = raw.replace("~1", "/").replace("~0", "~")
        if schema is ANY:
            return None
        if schema.fields is not None:
            sub = schema.child(seg)
            if sub is None:
                out.append(_join(path, seg))
                return None
            schema, path = sub, _join(path, seg)
        elif schema.items is not None:
            schema, path = schema.items, f"{path}[{seg}]"
        elif schema.values is not None:
            schema, path = schema.values, f"{path}[{seg}]"
        else:
            return None
    return schema, path


def directive(query: Any, verb_options: str) -> str:
    """The request's fieldValidation; an unknown value is refused as the real server refuses it."""
    got = query.get("fieldValidation", "") or DEFAULT_DIRECTIVE
    if got not in DIRECTIVES:
        raise ApiError(
            422,
            "Invalid",
            f'{verb_options}.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "{got}": '
            'supported values: "Ignore", "Strict", "Warn"',
        )
    return got


def strict_error(res: ResourceInfo, unknown: list[str]) -> ApiError:
    fields = ", ".join(f'unknown field "{f}"' for f in unknown)
    return bad_request(
        f'{res.kind} in version "{res.version}" cannot be handled as a {res.kind}: strict decoding error: {fields}'
    )


def warnings(unknown: list[str]) -> list[str]:
    """`Warning` header values, one per field (kubectl prints `Warning: unknown field "..."`)."""
    return ['299 - "unknown field \\"' + f.replace('"', '\\"') + '\\""' for f in unknown]
