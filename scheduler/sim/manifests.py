"""Reading Kubernetes manifests: multi-document YAML or JSON, `List` kinds flattened.

A file that is not YAML at all is an error naming the file and the position; documents that are
not objects are reported and skipped, so one bad document never hides the others.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml


class ManifestError(ValueError):
    """The file cannot be read or parsed at all."""


@dataclass(slots=True)
class Skipped:
    where: str
    reason: str


def _flatten(doc: Any, where: str, skipped: list[Skipped]) -> Iterator[dict[str, Any]]:
    if doc is None:
        return
    if not isinstance(doc, dict):
        skipped.append(Skipped(where, f"document is not an object (got {type(doc).__name__})"))
        return
    kind = doc.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(doc.get("items"), list):
        for i, item in enumerate(doc["items"]):
            yield from _flatten(item, f"{where} items[{i}]", skipped)
        return
    if not kind or not isinstance(kind, str):
        skipped.append(Skipped(where, "document has no kind"))
        return
    yield doc


def load_text(text: str, source: str, skipped: list[Skipped]) -> list[dict[str, Any]]:
    stripped = text.lstrip()
    docs: list[Any]
    if stripped.startswith(("{", "[")):
        try:
            parsed = json.loads(text)
            docs = parsed if isinstance(parsed, list) else [parsed]
        except json.JSONDecodeError as exc:
            raise ManifestError(
                f"{source}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            ) from None
    else:
        try:
            docs = list(yaml.safe_load_all(text))
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise ManifestError(f"{source}: invalid YAML{where}: {problem}") from None
    out: list[dict[str, Any]] = []
    for i, doc in enumerate(docs):
        out.extend(_flatten(doc, f"{source} document {i + 1}", skipped))
    return out


def load_files(paths: list[str], skipped: list[Skipped]) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        except OSError as exc:
            raise ManifestError(f"{path}: cannot read: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise ManifestError(f"{path}: not a text file (UTF-8 expected)") from None
        objs.extend(load_text(text, path, skipped))
    return objs
