"""paused_gc: what a build allocates skips the young collections, yet stays collectable, and what another
part of the process froze stays frozen."""

from __future__ import annotations

import gc
import weakref

from shift_left_dagster.project.inventory import paused_gc


class Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the cycle collector frees it


def test_what_was_built_goes_to_the_oldest_generation_and_the_collector_is_back_on() -> None:
    gc.unfreeze()  # what an earlier test or library froze: this test starts with none, as a code location does
    with paused_gc():
        built = [[i] for i in range(100_000)]
        assert not gc.isenabled()
    assert gc.isenabled() and gc.get_freeze_count() == 0
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert id(built) in oldest and id(built[-1]) in oldest  # no young collection walks them


def test_a_cycle_built_while_paused_is_still_collected() -> None:
    with paused_gc():
        node = Node()
    dead = weakref.ref(node)
    del node
    gc.collect()
    assert dead() is None


def test_objects_frozen_by_someone_else_stay_frozen() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with paused_gc():
            _ = [[i] for i in range(1000)]
        # unfrozen, the count would fall to ~0; a few frozen objects may die meanwhile (the count drops by them)
        assert gc.get_freeze_count() > frozen // 2 > 0
    finally:
        gc.unfreeze()
