"""The risk profile of a prompt, computed once per prompt for a whole eval.

An eval runs each case's prompt under every strategy and iteration, and the profile is a
function of the prompt and the pipeline's kind hint alone (``RiskProfile`` is frozen): profiling
it again for each run cost the keyword scan (or a classifier's forward pass) per run."""

from __future__ import annotations

from loomc.risk.base import RiskProfile, RiskProfiler


class PromptCache:
    """A ``RiskProfiler`` that remembers the last ``size`` profiles of the one it wraps. The
    jobs of a case come one after another, so a small cache keeps memory flat and still hits.
    It ``remembers``: the executor asks it directly, not its process-wide cache first (two
    caches of the same profiles cost two misses per new prompt)."""

    remembers = True

    def __init__(self, inner: RiskProfiler, size: int = 256) -> None:
        self.inner = inner
        self.name = inner.name
        self.size = size
        self._seen: dict[tuple[str, str | None], RiskProfile] = {}

    def profile(self, prompt: str, pipeline_hint: str | None = None) -> RiskProfile:
        key = (prompt, pipeline_hint)
        found = self._seen.get(key)
        if found is None:
            found = self.inner.profile(prompt, pipeline_hint)
            if len(self._seen) >= self.size:
                del self._seen[next(iter(self._seen))]  # the oldest
            self._seen[key] = found
        return found
