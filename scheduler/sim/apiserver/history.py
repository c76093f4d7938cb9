"""Watch events and the per-resource history ring they are replayed from.

An `Event` serialises its object once, lazily, and builds each watch line from those bytes, so
100 watchers of the same resource cost one `dumps` per write, not 100. The ring keeps the last
`capacity` events of one resource; a watch resuming from a resourceVersion older than the
ring's floor (the newest dropped event) must relist: that is the 410 Expired of the real server.
"""

from __future__ import annotations

from typing import Any

from scheduler.sim.apiserver import codec


class Event:
    __slots__ = ("_line", "_lines", "_obj_bytes", "key", "ns", "obj", "old", "rv", "type")

    def __init__(
        self, type_: str, key: str, rv: int, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        self.type = type_
        self.key = key
        self.rv = rv
        self.obj = obj
        # the previous version, so selector watches can turn "stopped matching" into DELETED
        self.old = old
        self.ns = obj["metadata"].get("namespace")
        self._obj_bytes: bytes | None = None
        self._line: bytes | None = None  # the line of the event's own type: the common case
        self._lines: dict[str, bytes] = {}

    def obj_bytes(self) -> bytes:
        if self._obj_bytes is None:
            self._obj_bytes = codec.dumps(self.obj)
        return self._obj_bytes

    def line(self, type_: str | None = None) -> bytes:
        if type_ is None or type_ == self.type:
            if self._line is None:
                self._line = b'{"type":"' + self.type.encode() + b'","object":' + self.obj_bytes() + b"}\n"
            return self._line
        t = type_
        line = self._lines.get(t)
        if line is None:
            line = b'{"type":"' + t.encode() + b'","object":' + self.obj_bytes() + b"}\n"
            self._lines[t] = line
        return line


class History:
    """A ring of the last `capacity` events of one resource, addressed by absolute sequence number."""

    def __init__(self, capacity: int, floor_rv: int = 0) -> None:
        self.capacity = max(1, capacity)
        self._buf: list[Event | None] = [None] * self.capacity
        self.seq = 0  # number of events ever appended
        self._start = 0  # lowest position that may still hold an event (moves on expire/resize)
        # events with rv <= floor_rv may be missing: resuming from an older rv is "too old"
        self.floor_rv = floor_rv
        # (from position, selector key) -> a watch chunk of the events from there to `seq` and
        # the last one's rv; only for the current `seq` (see `WatchStream._chunk`)
        self._chunks: dict[tuple[int, str], tuple[bytes, int | None]] = {}
        self._chunks_seq = -1

    @property
    def first_seq(self) -> int:
        return max(self._start, self.seq - self.capacity)

    def append(self, ev: Event) -> None:
        slot = self.seq % self.capacity
        dropped = self._buf[slot]
        if dropped is not None:
            self.floor_rv = max(self.floor_rv, dropped.rv)
        self._buf[slot] = ev
        self.seq += 1

    def chunk(self, start: int, key: str) -> tuple[bytes, int | None] | None:
        """A chunk `keep_chunk` kept for the events from `start` to the newest, if any."""
        if self._chunks_seq != self.seq:
            return None
        return self._chunks.get((start, key))

    def keep_chunk(self, start: int, key: str, chunk: tuple[bytes, int | None]) -> None:
        if self._chunks_seq != self.seq:
            self._chunks = {}
            self._chunks_seq = self.seq
        self._chunks[(start, key)] = chunk

    def at(self, seq: int) -> Event | None:
        """The event at absolute position `seq`, or None once it has been overwritten."""
        if seq < self.first_seq or seq >= self.seq:
            return None
        return self._buf[seq % self.capacity]

    def last(self) -> Event | None:
        """The newest retained event, if any."""
        return self._buf[(self.seq - 1) % self.capacity] if self.seq > self.first_seq else None

    def since(self, seq: int) -> list[Event]:
        """The retained events from position `seq` to the newest (empty when `seq` is gone or current)."""
        lo = max(seq, self.first_seq)
        if lo >= self.seq:
            return []
        a, b = lo % self.capacity, self.seq % self.capacity
        chunk = self._buf[a:b] if a < b else self._buf[a:] + self._buf[:b]
        return [e for e in chunk if e is not None]

    def seq_after(self, rv: int) -> int | None:
        """Position of the first retained event newer than `rv`; None when `rv` is too old."""
        if rv < self.floor_rv:
            return None
        lo, hi = self.first_seq, self.seq
        while lo < hi:
            mid = (lo + hi) // 2
            ev = self._buf[mid % self.capacity]
            if ev is not None and ev.rv <= rv:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def expire(self, current_rv: int) -> None:
        """Forget everything: any resume from before now gets 410 (fault injection)."""
        self._buf = [None] * self.capacity
        self.seq += self.capacity  # invalidates the cursors of running watches too
        self._start = self.seq
        self.floor_rv = current_rv

    def resize(self, capacity: int) -> None:
        kept = [e for e in (self.at(s) for s in range(self.first_seq, self.seq)) if e is not None][
            -max(1, capacity) :
        ]
        dropped_before = self.seq - len(kept)
        old_events = [self.at(s) for s in range(self.first_seq, dropped_before)]
        for e in old_events:
            if e is not None:
                self.floor_rv = max(self.floor_rv, e.rv)
        self.capacity = max(1, capacity)
        self._buf = [None] * self.capacity
        self._chunks = {}  # some kept chunks' events may be gone now
        # keep absolute positions stable so running watch cursors stay meaningful
        start = self.seq - len(kept)
        self._start = start
        for i, e in enumerate(kept):
            self._buf[(start + i) % self.capacity] = e
