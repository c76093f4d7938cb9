"""Plugin arguments: the free `arguments` map of a plugin option, read leniently as Volcano does.

A missing key keeps the default; a value of the wrong type is an error that names the plugin, the
key and the value, so a bad configuration is rejected whole instead of being silently half-read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class ArgumentError(ValueError):
    pass


class Arguments:
    __slots__ = ("_kind", "_plugin", "_values")

    def __init__(
        self, values: Mapping[str, Any] | None = None, plugin: str = "", kind: str = "plugin"
    ) -> None:
        self._values: dict[str, Any] = dict(values or {})
        self._plugin = plugin
        self._kind = kind  # "plugin" or "action": whose arguments, for messages

    def _where(self, key: str) -> str:
        return f"{self._kind} {self._plugin!r} argument {key!r}" if self._plugin else f"argument {key!r}"

    def __contains__(self, key: str) -> bool:
        return key in self._values

    def keys(self) -> list[str]:
        return list(self._values)

    def raw(self, key: str, default: Any = None) -> Any:
        return self._values.get(key, default)

    def get_bool(self, key: str, default: bool) -> bool:
        v = self._values.get(key)
        if v is None:
            return default
        if isinstance(v, bool):
            return v
        # the spellings Go's strconv.ParseBool takes, as Volcano reads a quoted boolean
        if isinstance(v, str) and v.strip().lower() in ("true", "t", "1", "false", "f", "0"):
            return v.strip().lower() in ("true", "t", "1")
        if isinstance(v, int) and v in (0, 1):
            return bool(v)
        raise ArgumentError(f"{self._where(key)}: expected a boolean, got {v!r}")

    def get_int(self, key: str, default: int) -> int:
        v = self._values.get(key)
        if v is None:
            return default
        if isinstance(v, bool):
            raise ArgumentError(f"{self._where(key)}: expected an integer, got {v!r}")
        if isinstance(v, int):
            return v
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, str):
            try:
                return int(v.strip())
            except ValueError:
                pass
        raise ArgumentError(f"{self._where(key)}: expected an integer, got {v!r}")

    def get_float(self, key: str, default: float) -> float:
        v = self._values.get(key)
        if v is None:
            return default
        if isinstance(v, bool):
            raise ArgumentError(f"{self._where(key)}: expected a number, got {v!r}")
        if isinstance(v, int | float):
            return float(v)
        if isinstance(v, str):
            try:
                return float(v.strip())
            except ValueError:
                pass
        raise ArgumentError(f"{self._where(key)}: expected a number, got {v!r}")

    def get_str(self, key: str, default: str) -> str:
        v = self._values.get(key)
        if v is None:
            return default
        if isinstance(v, str | int | float) and not isinstance(v, bool):
            return str(v)
        raise ArgumentError(f"{self._where(key)}: expected a string, got {v!r}")
