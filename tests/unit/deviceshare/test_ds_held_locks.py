"""HeldLocks answers what a pass over the session's lock intents answers, through the plugin's
own appends and removes and after the list was changed behind its back."""

from __future__ import annotations

import random

from scheduler.plugins.deviceshare.locks import HeldLocks, LockIntent

KEYS = ("hami.io/mutex.lock", "hami.io/vgpu-node-locked", "hami.io/ascend-node-locked")


def _scan(locks: list[LockIntent], node: str, key: str) -> bool:
    return any(n == node and k == key for n, k, _ in locks)


def test_held_is_the_scan_through_appends_removes_and_outside_changes() -> None:
    rnd = random.Random(5)
    held = HeldLocks()
    locks: list[LockIntent] = []
    for step in range(3000):
        node, key = f"n{rnd.randrange(12)}", rnd.choice(KEYS)
        entry = (node, key, str(rnd.randrange(3)))
        op = rnd.random()
        if op < 0.4:
            held.append(locks, entry)
        elif op < 0.7:
            held.remove(locks, entry if rnd.random() < 0.5 or not locks else rnd.choice(locks))
        elif op < 0.75:
            locks.append(entry)  # changed elsewhere: the length tells
        elif op < 0.77 and locks:
            locks.pop(rnd.randrange(len(locks)))
        elif op < 0.78:
            locks = list(locks)  # another list (the next session's)
        assert held.held(locks, node, key) == _scan(locks, node, key), step
        for n in range(12):
            assert held.held(locks, f"n{n}", KEYS[0]) == _scan(locks, f"n{n}", KEYS[0])


def test_remove_drops_the_first_occurrence_only_and_ignores_a_missing_entry() -> None:
    held = HeldLocks()
    locks: list[LockIntent] = []
    a = ("n1", KEYS[0], "v")
    held.append(locks, a)
    held.append(locks, a)
    held.remove(locks, ("n2", KEYS[0], "v"))
    assert locks == [a, a] and held.held(locks, "n1", KEYS[0])
    held.remove(locks, a)
    assert locks == [a] and held.held(locks, "n1", KEYS[0])
    held.remove(locks, a)
    assert locks == [] and not held.held(locks, "n1", KEYS[0])
