"""The semantic profiler's per-prompt cache of embeddings, one per encoder (numpy path).

Why: an eval or a server profiles the same prompts again and again, and an embedding is the
costly part of a profile (MiniLM's forward pass above all); the rest is cheap. Least recently
used prompts go first, at most ``size`` per encoder; 0 turns the cache off.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy.typing as npt

    from loomc.risk.encoders import MiniLMEncoder
    from loomc.risk.static import StaticEncoder


class EmbeddingCache:
    def __init__(self, size: int) -> None:
        self.size = size
        self._caches: dict[int, OrderedDict[str, npt.NDArray[Any]]] = {}
        self._lock = threading.Lock()

    def embed(self, enc: MiniLMEncoder | StaticEncoder, prompts: Sequence[str]) -> npt.NDArray[Any]:
        """``enc.encode(prompts)``, the prompts seen lately read back instead of encoded."""
        import numpy as np

        if self.size <= 0:
            return self._once_per_pass(enc, prompts)
        with self._lock:
            cache = self._caches.setdefault(id(enc), OrderedDict())
            missing = [p for p in dict.fromkeys(prompts) if p not in cache]
        fresh = enc.encode(missing) if missing else None
        with self._lock:
            rows = dict(zip(missing, fresh if fresh is not None else [], strict=True))
            for p in prompts:
                if p in cache:
                    cache.move_to_end(p)
                    rows.setdefault(p, cache[p])
            for p, v in rows.items():
                cache[p] = v
            while len(cache) > self.size:
                cache.popitem(last=False)
        return np.stack([rows[p] for p in prompts])

    @staticmethod
    def _once_per_pass(
        enc: MiniLMEncoder | StaticEncoder, prompts: Sequence[str]
    ) -> npt.NDArray[Any]:
        """With the cache off: MiniLM's embedding of a prompt made once per profile call
        (``loomc.risk.memo``), however many stages send it there (a release and the one it asks,
        ``loomc.risk.second_opinion``); a static embedding (~50 us) is simply made again."""
        import numpy as np

        from loomc.risk.memo import in_pass, keep, recalled
        from loomc.risk.static import StaticEncoder

        if isinstance(enc, StaticEncoder) or not in_pass():
            return enc.encode(prompts)
        rows: dict[str, Any] = {p: recalled(enc, "embedding", p) for p in dict.fromkeys(prompts)}
        missing = [p for p, row in rows.items() if row is None]
        if missing:
            fresh = enc.encode(missing)
            fresh.flags.writeable = False  # its rows are kept: no caller gets them to change
            for p, row in zip(missing, fresh, strict=True):
                rows[p] = row
                keep(enc, "embedding", p, row)
        return np.stack([rows[p] for p in prompts])
