"""Python's garbage collector during a run of the program.

The Pulumi SDK keeps an Output, its futures and their closures alive for every input of every
resource, so the heap grows by tens of thousands of long-lived objects per hundred flows. With
CPython's default thresholds (700, 10, 10) a full collection runs after every tenth collection
of the middle generation whenever the old one has grown by a quarter, and each walks the whole
heap: at 500 flows they were about 60 % of the program's CPU time (docs/performance.md, the
program's cost). Full collections a thousand times rarer keep the young generations' collections
as they are, so short-lived cycles are still freed at once; measured at 500 flows: 0.60x the
CPU time at the same peak memory.

`pulumi up` runs the program in a process of its own, which the setting is for (`__main__.py`);
a run inside a longer-lived process (a render, the tests) sets it for the run and restores it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# The old generation's threshold: collections of the middle one between two full collections.
FULL_COLLECTION_THRESHOLD = 10_000


def for_the_process() -> None:
    """Rare full collections from now on (a process that runs the program once)."""
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_THRESHOLD)


@contextmanager
def program_run() -> Iterator[None]:
    """Rare full collections while the block runs; the thresholds before it, after."""
    before = gc.get_threshold()
    for_the_process()
    try:
        yield
    finally:
        gc.set_threshold(*before)
