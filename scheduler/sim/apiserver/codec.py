"""JSON encoding for the sandbox: orjson (a dependency of the package; several times faster, and
the server's hot path is serialising objects for lists and watch fan-out), the standard library
when an install left it out. Both produce compact UTF-8 bytes, so callers never care which one ran.
"""

from __future__ import annotations

import json
from typing import Any

try:
    import orjson

    def dumps(obj: Any) -> bytes:
        return orjson.dumps(obj)

    def loads(data: bytes | str) -> Any:
        return orjson.loads(data)

    DecodeError: type[Exception] = orjson.JSONDecodeError
    FAST = True
except ImportError:  # pragma: no cover - depends on the environment
    _enc = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)

    def dumps(obj: Any) -> bytes:
        return _enc.encode(obj).encode()

    def loads(data: bytes | str) -> Any:
        return json.loads(data)

    DecodeError = ValueError
    FAST = False
