"""A router file given by path (``risk.options.data``) is served with the encoder its MiniLM
stage was trained on: the kind and the LoRA delta its meta names (``semantic_plan.data_encoder``).

Why: before, a file given by path always got the float MiniLM and no delta, so a head trained on
int8, LoRA-tuned embeddings (every release since v12) read other embeddings and gave other
probabilities with nothing said: v28's files by path gave "List two benefits of version
control." 0.13 at the MiniLM stage where release v28 gives 0.54. These checks build profilers
from real files (copies in a temporary folder where a file must move or change) and compare
them with the releases serving the same files.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from release_checks import need_semantic_extra

from loomc.policy.models import RiskSettings
from loomc.risk.factory import make_profiler
from loomc.risk.files import DATA

PROMPTS = (
    "List two benefits of version control.",
    "Rename these variables: if w < 15 or g < 25: launch()",
    "My dad keeps forgetting whether he took his warfarin, can you make him a chart?",
)
WHOLE_BAND = {"band_low": 0.0, "band_high": 1.0}  # every prompt to the MiniLM stage


@pytest.fixture(autouse=True)
def _minilm() -> None:
    need_semantic_extra()


def _profiler(**options: Any) -> Any:
    prof = make_profiler(RiskSettings(profiler="semantic", options=options))
    assert prof.name == "semantic", getattr(prof, "notice", None)
    return prof


def _copy(release_file: str, into: Path) -> tuple[Path, Path]:
    first = Path(shutil.copy(DATA / release_file, into / release_file))
    second_name = release_file.replace("router-static", "router-minilm")
    return first, Path(shutil.copy(DATA / second_name, into / second_name))


def _rewrite_meta(path: Path, **changes: Any) -> None:
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays.pop("meta")))
    meta.update(changes)
    with path.open("wb") as fh:
        np.savez_compressed(fh, **arrays, meta=np.array(json.dumps(meta, sort_keys=True)))


def test_a_release_s_files_by_path_decide_as_the_release_s_minilm_stage() -> None:
    release = _profiler(release="v28", **WHOLE_BAND)
    by_path = _profiler(data=str(DATA / "router-static-v28.npz"), **WHOLE_BAND)
    assert (by_path.plan.kind, by_path.plan.delta) == (
        "minilm-q8-lora",
        DATA / "minilm-lora-v22.npz",
    )
    assert (by_path.plan.kind, by_path.plan.delta) == (release.plan.kind, release.plan.delta)
    got = [k.probability for k in by_path.profile_many(list(PROMPTS))]
    assert got == [k.probability for k in release.profile_many(list(PROMPTS))]
    assert got[0] == pytest.approx(0.54, abs=0.01)  # the float MiniLM gave it 0.13


def test_older_kinds_keep_their_own_encoder() -> None:
    v10 = _profiler(data=str(DATA / "router-static-v10.npz"))  # int8, no delta
    assert (v10.plan.kind, v10.plan.delta) == ("minilm-q8", None)
    v4_stage = _profiler(data=str(DATA / "router-minilm.npz"))  # a MiniLM-only file, float
    assert (v4_stage.plan.kind, v4_stage.plan.delta) == ("minilm", None)


def test_the_delta_is_found_beside_the_file_first_then_among_the_shipped(tmp_path: Path) -> None:
    first, _ = _copy("router-static-v28.npz", tmp_path)
    assert _profiler(data=str(first)).plan.delta == DATA / "minilm-lora-v22.npz"
    beside = Path(shutil.copy(DATA / "minilm-lora-v22.npz", tmp_path / "minilm-lora-v22.npz"))
    assert _profiler(data=str(first)).plan.delta == beside


def test_a_delta_that_is_not_the_one_trained_over_is_refused_in_one_line(tmp_path: Path) -> None:
    first, second = _copy("router-static-v28.npz", tmp_path)
    _rewrite_meta(second, lora_sha256="0" * 64)  # the name matches, the bytes do not
    with pytest.raises(ValueError) as info:
        _profiler(data=str(first))
    message = str(info.value)  # the factory says where: the policy's risk section
    assert "\n" not in message and "risk.options.data: router-minilm-v28.npz" in message
    assert "minilm-lora-v22.npz (sha256 000000000000...)" in message
    _rewrite_meta(second, lora_sha256="", lora="minilm-lora-v99.npz")
    with pytest.raises(ValueError, match="neither beside it nor shipped"):
        _profiler(data=str(first))


def test_an_unreadable_stage_or_an_unknown_encoder_is_refused_in_one_line(tmp_path: Path) -> None:
    first, second = _copy("router-static-v28.npz", tmp_path)
    _rewrite_meta(second, encoder_kind="minilm-q4")
    with pytest.raises(ValueError, match="trained on an unknown encoder 'minilm-q4'"):
        _profiler(data=str(first))
    second.write_bytes(b"PK\x03\x04 not a zip at all")
    with pytest.raises(ValueError) as info:
        _profiler(data=str(first))
    message = str(info.value)
    assert "risk.options.data: router-minilm-v28.npz: not a zip archive" in message
    assert "\n" not in message
