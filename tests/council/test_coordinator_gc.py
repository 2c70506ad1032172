"""The coordinator's collector settings while a run grades (``heap_frozen``) are put back afterwards."""

from __future__ import annotations

import gc

import pytest

from council.grading.coordinator import YOUNG_THRESHOLD, heap_frozen


def test_heap_frozen_while_grading_and_put_back_after_the_last_run() -> None:
    before_threshold, before_frozen = gc.get_threshold(), gc.get_freeze_count()
    alive = [object() for _ in range(10)], {"a": [1]}  # tracked containers alive before the run
    with heap_frozen():
        assert gc.get_freeze_count() >= before_frozen + 2
        assert gc.get_threshold()[0] == max(before_threshold[0], YOUNG_THRESHOLD)
        with heap_frozen():  # a second run in the same process
            pass
        assert gc.get_threshold()[0] == max(before_threshold[0], YOUNG_THRESHOLD)  # the first still grades
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before_threshold
    assert gc.get_freeze_count() == before_frozen
    assert alive


def test_heap_frozen_puts_back_on_an_exception_and_garbage_cycles_are_collected_after() -> None:
    before_threshold = gc.get_threshold()
    with pytest.raises(RuntimeError), heap_frozen():
        raise RuntimeError("a run that fails")
    assert gc.get_threshold() == before_threshold
    cycle: list = []
    cycle.append(cycle)
    del cycle
    assert gc.collect() >= 1
