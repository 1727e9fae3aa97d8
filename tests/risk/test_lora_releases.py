"""The checks every release of one recipe shares, once, over a table: v12, v13 and v18 (v9's
columns) and v19, v20, v22, v23, v24, v26, v27, v28, v30 and v34 (v10's: v9's and the context block) are
cost 6, delta 0.03, the band capped at 0.20 (v30, v34: 0.15), their MiniLM stage the int8 MiniLM merged with a LoRA delta.
They differ in which rows their heads learnt, which columns they read and which delta they
serve, so each is pinned here by the same checks: what made its files (by hash), what its
delta learnt, the merged int8 MiniLM served, another base refused in one line, the reference
seed suite with and without hints, deterministic decisions, the plain-Python path building the
same columns, the static stage retraining to the shipped file, the same decisions from either
int8 backend. What is peculiar to one release (the default, its rows, its own behaviour) stays
in ``test_release_<v>.py``; its files are pinned by ``test_shipped_data.py``.

Why one table: each release used to restate these checks in its own module (an import list and
eleven one-line wrappers each), so a new release copied them; now it adds a row. Needs the
semantic extra (and the ``onnx`` extra for the ORT check).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from corpus_files import F16, F23, F40, F41, F42, F44, F45, F46, F47, F48, F50, F56, F75
from release_checks import (
    CONTEXT_PROMPTS,
    V9_PROMPTS,
    assert_delta_records_its_training,
    assert_deterministic,
    assert_files_record,
    assert_int8_backends_agree,
    assert_lora_files_record,
    assert_plain_path_reads_the_signal_columns,
    assert_refuses_another_base,
    assert_seed_suite,
    assert_serves_merged_int8_minilm,
    assert_static_stage_retrains,
    need_semantic_extra,
    release_profiler,
)

from loomc.risk.context import prose_of
from loomc.risk.signals import SIGNAL_NAMES, V10_WIDTH

WIDTH = {"v9": len(SIGNAL_NAMES), "v10": V10_WIDTH}
# v18's: v9's with a fixture's code in place of the French prompt
V18_PROMPTS = (
    *V9_PROMPTS[:4],
    "Add type hints:\n\ndef fake_patient(i):\n    return {'name': f'Test {i}', 'dose_mg': 5}",
    V9_PROMPTS[5],
)


@dataclass(frozen=True)
class LoraRelease:
    """One release of the recipe: the files both heads learnt, the files its delta learnt, the
    release whose delta its MiniLM stage reads (its own where empty), its signal columns, the
    share of the fit and the cost its everyday rows weigh (None: rows alike), the cap on the
    share its band defers, the multiple of the ridge on its embedding's columns and the prompts
    its determinism and plain-path checks run."""

    release: str
    heads: tuple[str, ...]
    delta_files: tuple[str, ...]
    delta_of: str = ""
    signals: str = "v10"
    prompts: tuple[str, ...] = CONTEXT_PROMPTS
    ordinary_weight: float | None = None
    max_defer: float = 0.2
    embedding_penalty: float | None = None


TABLE = (
    LoraRelease("v12", F16, F16, signals="v9", prompts=V9_PROMPTS),  # the first LoRA release
    LoraRelease("v13", F23, F23, signals="v9", prompts=V9_PROMPTS),  # more files, both
    LoraRelease("v18", F40, F23, delta_of="v13", signals="v9", prompts=V18_PROMPTS),
    LoraRelease("v19", F41, F23, delta_of="v13"),  # v18's recipe with the context block
    LoraRelease("v20", F42, F23, delta_of="v13"),  # v19's, + data30's contrast pairs
    LoraRelease("v22", F41, F44),  # v25's files (v25 = v22 + the lexical floor)
    LoraRelease("v23", F41, F45),  # v19's heads over a delta on F45
    LoraRelease("v24", F46, F44, delta_of="v22"),  # v22's delta, heads and index on F46
    LoraRelease("v26", F47, F44, delta_of="v22"),  # v22's delta, heads on F41 + everyday-train
    LoraRelease("v27", F48, F44, delta_of="v22"),  # v26's recipe, heads on every ordinary row
    # v27's recipe on F50, the ordinary rows weighing half the fit and the cost
    LoraRelease("v28", F50, F44, delta_of="v22", ordinary_weight=0.5),
    # v28's recipe on F56, the embedding's ridge x10, the band capped at 0.15
    LoraRelease(
        "v30", F56, F44, delta_of="v22", ordinary_weight=0.5, max_defer=0.15, embedding_penalty=10
    ),
    # v30's recipe on F75: every row spent since v30 was built
    LoraRelease(
        "v34", F75, F44, delta_of="v22", ordinary_weight=0.5, max_defer=0.15, embedding_penalty=10
    ),
)


@pytest.fixture(scope="module", params=TABLE, ids=lambda case: case.release)
def case(request: pytest.FixtureRequest) -> LoraRelease:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def prof(case: LoraRelease) -> Any:
    """Loaded once per release: pytest orders a module-scoped parameter's tests together."""
    need_semantic_extra()
    return release_profiler(case.release)


def test_files_record_what_made_them(case: LoraRelease, prof: Any) -> None:
    assert_files_record(prof, case.release, case.heads, WIDTH)
    assert_lora_files_record(
        prof,
        case.release,
        delta_of=case.delta_of,
        signals=case.signals,
        ordinary_weight=case.ordinary_weight,
        max_defer=case.max_defer,
        embedding_penalty=case.embedding_penalty,
    )


def test_delta_records_its_training(case: LoraRelease, prof: Any) -> None:
    assert_delta_records_its_training(prof, case.release, case.delta_files)


def test_serves_the_merged_int8_minilm(case: LoraRelease, prof: Any) -> None:
    assert_serves_merged_int8_minilm(prof, case.release)


def test_refuses_another_base_in_one_line(case: LoraRelease, tmp_path: Path) -> None:
    assert_refuses_another_base(tmp_path, case.release)


# v28 decides one seed prompt wrong, with hints and without: "List two benefits of version
# control." falls inside its band (static P 0.15 in (0.10, 0.40)) and its MiniLM head gives it
# 0.54 (v27's gives 0.63, but v27's band starts above the prompt's 0.05). It fails round 42's
# gate for that; found before the round's files were merged (evals/routing/README.md).
SEED_MISSES = {"v28": ("version-control-benefits",)}


@pytest.mark.parametrize("hints", [True, False])
def test_seed_suite(case: LoraRelease, prof: Any, shared_dir: Path, hints: bool) -> None:
    assert_seed_suite(prof, shared_dir, hints, SEED_MISSES.get(case.release, ()))


def test_is_deterministic_across_calls_and_batches(case: LoraRelease, prof: Any) -> None:
    assert_deterministic(prof, case.release, case.prompts)


def test_plain_path_reads_the_same_columns(case: LoraRelease, prof: Any) -> None:
    """The plain-Python path builds the numpy path's row, the context block included (v10:
    some of its prompts have prose beside code, so the block is not all zeros)."""
    if case.signals == "v10":
        assert any(prose_of(p) for p in case.prompts)
    assert_plain_path_reads_the_signal_columns(prof, case.prompts)


# The static stage's retraining costs 10-80 s a release and grows with the rows (the context
# block's 384 columns). CI retrains the default's and the newest heads' (a bounded sample, as
# every soak); ``pytest -m soak`` retrains every release's, as whenever the default changes.
RETRAINED_IN_CI = ("v34",)


@pytest.mark.timeout(900)  # ~40 s alone for a release with the block, minutes on a busy box
@pytest.mark.parametrize(
    "entry",
    [
        pytest.param(
            c, id=c.release, marks=() if c.release in RETRAINED_IN_CI else pytest.mark.soak
        )
        for c in TABLE
    ],
)
def test_static_stage_retrains_to_the_shipped_file(entry: LoraRelease) -> None:
    need_semantic_extra()
    assert_static_stage_retrains(release_profiler(entry.release), entry.heads, entry.signals)


def test_ci_retrains_the_default_and_the_newest_heads() -> None:
    """The sample stays what its comment says when a release joins the table or the default
    moves: the row whose files the default serves (its own, since round 40), and the last
    row's."""
    from loomc.risk.releases import DEFAULT_RELEASE, RELEASES

    default = {c.release for c in TABLE if RELEASES[c.release] == RELEASES[DEFAULT_RELEASE]}
    assert set(RETRAINED_IN_CI) == default | {TABLE[-1].release}


def test_decides_alike_on_numpy_and_onnxruntime(case: LoraRelease) -> None:
    assert_int8_backends_agree(case.release)
