"""The server process's garbage collector, set for many live runs (issue 14).

Why: at 128 concurrent streams CPython's cyclic collector took ~12 % of the server's CPU
(~0.2 ms of a ~1.7 ms request, measured with ``gc.callbacks``). Most of it was full (gen-2)
collections, each walking every object the process holds (the imported modules, the compiled
project, the profiler's tables: ~60-90k objects, ~35 ms a walk) although none of them will
ever be garbage, and 128 runs in flight promote enough young objects to start one every
second or so. So, in a process that ``loomc serve`` owns (never when the app is embedded in
someone else's, nor in tests):

- once start-up is done, and once more after the first run (lazy imports, the provider's
  client), everything alive is moved to the permanent generation (``gc.freeze``): collections
  no longer walk it. The second freeze also freezes what the first requests still hold (at most
  one run's worth per request in flight, once): a bounded, one-off cost;
- young collections start every ``GEN0`` allocations instead of 700 and full ones after
  ``GEN2`` young-of-old collections instead of 10: a young collection walks objects that are
  mostly still alive (the runs in flight), so fewer, larger ones walk fewer objects in all.
  Garbage in reference cycles lives a little longer; memory stays flat (measured).

Reference counting, which frees almost every object, is untouched.
"""

from __future__ import annotations

import gc

__all__ = ["GEN0", "GEN1", "GEN2", "Heap", "render"]

GEN0, GEN1, GEN2 = 7000, 20, 100


class Heap:
    """``settle()`` once the server has started; ``after_run()`` after every run (only the
    first does anything)."""

    def __init__(self) -> None:
        self.pending = True

    def settle(self) -> None:
        gc.collect()  # what start-up left in cycles is freed, not frozen
        gc.freeze()
        gc.set_threshold(GEN0, GEN1, GEN2)

    def after_run(self) -> None:
        if self.pending:
            self.pending = False
            gc.freeze()


def render() -> str:
    """``/metrics``' lines on the collector: objects frozen out of collections, and the
    collections run per generation since start (both say whether the setting holds)."""
    lines = [
        "# HELP loomc_gc_frozen_objects Objects in the permanent generation (never walked).",
        "# TYPE loomc_gc_frozen_objects gauge",
        f"loomc_gc_frozen_objects {gc.get_freeze_count()}",
        "# HELP loomc_gc_collections_total Cyclic garbage collections, by generation.",
        "# TYPE loomc_gc_collections_total counter",
    ]
    for generation, stats in enumerate(gc.get_stats()):
        lines.append(
            f'loomc_gc_collections_total{{generation="{generation}"}} {stats["collections"]}'
        )
    return "\n".join(lines) + "\n"
