"""research/finetune_minilm.py's batching (what every fine-tune's step order rests on) and
research/loso_lora.py's rounds (a fold = the round's files minus the held-out one, never
hard-train-v10-extra; both arms one recipe but the MiniLM stage's encoder)."""

from __future__ import annotations

import hashlib
import itertools
import json
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from research_script import research_script

from loomc.risk.releases import RELEASES

CORPUS = Path(__file__).resolve().parents[2] / "evals" / "routing"

ft = research_script("finetune_minilm")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 128), max_size=80), st.integers(1, 16), st.integers(0, 2**32 - 1))
def test_batches_cover_every_row_once_sorted_by_length(
    lengths: list[int], size: int, seed: int
) -> None:
    out = ft.batches(lengths, size, random.Random(seed))
    flat = [i for b in out for i in b]
    assert sorted(flat) == list(range(len(lengths)))  # every row exactly once
    assert all(1 <= len(b) <= size for b in out)
    assert sum(len(b) < size for b in out) <= 1  # only the last cut may be short
    # length-sorted: the batches' length ranges do not interleave
    spans = sorted((min(lengths[i] for i in b), max(lengths[i] for i in b)) for b in out)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))
    assert out == ft.batches(lengths, size, random.Random(seed))  # seeded: the same order


def test_the_loss_weights_are_the_routing_costs() -> None:
    assert ft.WEIGHT == {"low": 1.0, "medium": 2.0, "high": 6.0}


def test_loso_lora_folds_are_f14_without_the_v10_extra_rows() -> None:
    ll = research_script("loso_lora")
    v9 = ll.F14[:12]
    assert (*v9, "hard-test-7", "hard-test-8") == ll.F14
    assert "hard-train-v10-extra" not in ll.F14 and "hard-test-6" in v9
    assert ll.HELD_OUT == ("hard-test-6", "hard-test-7", "hard-test-8")
    with np.load(RELEASES["v9"], allow_pickle=False) as z:  # v9's twelve files, as its meta says
        assert json.loads(str(z["meta"]))["corpus"] == [f"{n}.jsonl" for n in v9]


def test_lora13_round_is_v11s_recipe_over_f15_with_hard_test_9_held_out() -> None:
    ll = research_script("loso_lora")
    rnd = ll.ROUNDS["v12"]
    assert rnd.files == ll.F15 == (*ll.F14, "hard-test-9")
    assert rnd.held_out == ("hard-test-7", "hard-test-8", "hard-test-9")
    with np.load(RELEASES["v11"], allow_pickle=False) as z:  # v11's fourteen files, its meta
        meta = json.loads(str(z["meta"]))
    assert meta["corpus"] == [f"{n}.jsonl" for n in ll.F14]
    plain, tuned = ll.arms(rnd).values()
    assert plain.second == "minilm-q8" and tuned.second == "minilm-q8-lora"
    assert plain._replace(second="minilm-q8-lora") == tuned  # nothing else differs
    assert (plain.signals, plain.rules, plain.delta, plain.cost) == (
        "v9",
        ("hazard-floor",),
        0.03,
        6.0,
    )
    assert plain.cap == meta["max_defer"] == 0.20
    assert ll.ROUNDS["lora12"].files == ll.F14 and ll.ROUNDS["lora12"].held_out == ll.HELD_OUT


def test_loso_lora_refuses_a_delta_trained_on_other_files(tmp_path: Path) -> None:
    ll = research_script("loso_lora")
    delta = tmp_path / "fold-hard-test-9.npz"
    names = [f"{n}.jsonl" for n in ll.F15]
    digests = [hashlib.sha256((CORPUS / n).read_bytes()).hexdigest() for n in names]
    meta = {"training_files": names, "training_sha256": digests}  # the held-out file included
    np.savez(delta, meta=np.array(json.dumps(meta)))
    with pytest.raises(SystemExit, match="was trained on"):
        ll.checked_delta(delta, [n for n in ll.F15 if n != "hard-test-9"])
    assert ll.checked_delta(delta, ll.F15) == delta
    # the same names, one file changed since (an earlier batch of a file being written)
    meta["training_sha256"] = [*digests[:-1], "0" * 64]
    np.savez(delta, meta=np.array(json.dumps(meta)))
    with pytest.raises(SystemExit, match="other versions"):
        ll.checked_delta(delta, ll.F15)


def test_route12_round_adds_the_v12_extra_rows_to_f15_and_keeps_a_as_lora13s_plain_arm() -> None:
    """route12's arms (evals/routing/README.md, its rule): A = lora13's plain arm on F15; B, C =
    the same recipe on F16 (F15 + hard-train-v12-extra), plain and with the fold's delta; B and
    C again with the band capped at 0.10. Nothing else differs between them."""
    ll = research_script("loso_lora")
    rnd = ll.ROUNDS["route12"]
    assert rnd.files == ll.F16 == (*ll.F15, "hard-train-v12-extra")
    assert rnd.held_out == ll.ROUNDS["v12"].held_out
    groups = dict(ll.passes(rnd))
    assert list(groups) == [ll.F16, ll.F15]  # the deltas' files first
    (a,) = groups[ll.F15].values()
    assert a == ll.arms(ll.ROUNDS["v12"])["v11's recipe, plain q8"]  # lora13's plain arm
    b, c, b10, c10 = groups[ll.F16].values()
    assert b == a and c == a._replace(second="minilm-q8-lora")
    assert (b10, c10) == (b._replace(cap=0.10), c._replace(cap=0.10))
    assert a.cap == 0.20


def test_a_lora_arm_must_learn_from_the_deltas_files() -> None:
    ll = research_script("loso_lora")
    rnd = ll.ROUNDS["route12"]
    bad = rnd._replace(
        more=(ll.Arm("C on F15", ll.F15, rnd.recipe._replace(second="minilm-q8-lora")),)
    )
    with pytest.raises(SystemExit, match="deltas' files"):
        ll.passes(bad)


def test_route13_round_is_v12s_recipe_on_f17_beside_a_on_f16() -> None:
    """route13's arms (evals/routing/README.md, its rule): B = v12's recipe (LoRA q8) on F17 (F16 +
    hard-test-10), its deltas in DIR/B; A = the same on F16 (route12's arm C), its deltas in
    DIR/A; no plain arm; folds hard-test-7 ... -10. B's fold hard-test-10 learns from F16 in
    F16's order, so it is A's fold (the same delta's meta passes both checks)."""
    ll = research_script("loso_lora")
    rnd = ll.ROUNDS["route13"]
    assert rnd.files == ll.F17 == (*ll.F16, "hard-test-10")
    assert rnd.held_out == ("hard-test-7", "hard-test-8", "hard-test-9", "hard-test-10")
    groups = dict(ll.passes(rnd))
    assert list(groups) == [ll.F17, ll.F16]
    (b,) = groups[ll.F17].values()
    (a,) = groups[ll.F16].values()
    route12_c = dict(ll.passes(ll.ROUNDS["route12"]))[ll.F16]["C: LoRA q8 (the fold's delta), F16"]
    assert a == b == route12_c and a.second == "minilm-q8-lora" and a.cap == 0.20
    assert (ll.delta_folder(rnd, ll.F17), ll.delta_folder(rnd, ll.F16)) == ("B", "A")
    assert [n for n in ll.F17 if n != "hard-test-10"] == list(ll.F16)
    with np.load(RELEASES["v12"], allow_pickle=False) as z:  # v12's delta learnt F16, in order
        meta = json.loads(str(z["meta"]))
    assert meta["corpus"] == [f"{n}.jsonl" for n in ll.F16]


def test_route14_round_is_route13s_arms_on_f20_over_seven_folds() -> None:
    """route14's rule: B = v12's recipe on F20 (F16 + hard-test-10 ... -13, in that order), A =
    the same on F16; folds hard-test-7 ... -13. A's folds -11 ... -13 learn all of F16, so
    v12's shipped delta is theirs (its meta passes the check each fold makes); B's fold -13
    learns F16 + -10, -11, -12 (it never reads -13 until scoring)."""
    ll = research_script("loso_lora")
    rnd = ll.ROUNDS["route14"]
    assert rnd.files == ll.F20 == (*ll.F16, *(f"hard-test-{n}" for n in (10, 11, 12, 13)))
    assert rnd.held_out == tuple(f"hard-test-{n}" for n in range(7, 14))
    groups = dict(ll.passes(rnd))
    assert list(groups) == [ll.F20, ll.F16]
    (b,) = groups[ll.F20].values()
    (a,) = groups[ll.F16].values()
    assert a == b == ll.V12_SHIPPED and a.second == "minilm-q8-lora" and a.cap == 0.20
    assert (ll.delta_folder(rnd, ll.F20), ll.delta_folder(rnd, ll.F16)) == ("B", "A")
    assert [n for n in ll.F20 if n != "hard-test-13"] == [*ll.F17, "hard-test-11", "hard-test-12"]
    v12 = RELEASES["v12"].with_name("minilm-lora-v12.npz")
    for held in ("hard-test-11", "hard-test-12", "hard-test-13", "final"):
        assert ll.checked_delta(v12, [n for n in ll.F16 if n != held]) == v12


def test_route15_round_is_three_arms_of_v12s_recipe_over_eight_folds() -> None:
    """route15's rule: C = v12's recipe on F22 (F20 + hard-test-14 + hard-train-v14-extra, in
    that order), A on F16, B on F20 (route14's B, for information); folds hard-test-7 ... -14.
    A's fold -14 learns all of F16 (v12's shipped delta); B's learns all of F20."""
    ll = research_script("loso_lora")
    rnd = ll.ROUNDS["route15"]
    assert rnd.files == ll.F22 == (*ll.F20, "hard-test-14", "hard-train-v14-extra")
    assert rnd.held_out == tuple(f"hard-test-{n}" for n in range(7, 15))
    groups = dict(ll.passes(rnd))
    assert list(groups) == [ll.F22, ll.F16, ll.F20]
    recipes = [r for g in groups.values() for r in g.values()]
    assert len(recipes) == 3 and all(r == ll.V12_SHIPPED for r in recipes)
    assert [ll.delta_folder(rnd, f) for f in groups] == ["C", "A", "B"]
    assert [n for n in ll.F20 if n != "hard-test-14"] == list(ll.F20)
    v12 = RELEASES["v12"].with_name("minilm-lora-v12.npz")
    assert ll.checked_delta(v12, [n for n in ll.F16 if n != "hard-test-14"]) == v12


def test_route16_round_is_one_arm_of_v12s_recipe_on_f23_over_route15s_folds() -> None:
    """route16's rule: D = v12's recipe on F23 (F22 + hard-train-v16-extra), folds hard-test-7
    ... -14 as route15; no A or B arm (A's and C's figures are route15's table's)."""
    ll = research_script("loso_lora")
    rnd = ll.ROUNDS["route16"]
    assert rnd.files == ll.F23 == (*ll.F22, "hard-train-v16-extra")
    assert rnd.held_out == ll.ROUNDS["route15"].held_out
    groups = dict(ll.passes(rnd))
    assert list(groups) == [ll.F23]
    assert list(groups[ll.F23].values()) == [ll.V12_SHIPPED]
    assert ll.delta_folder(rnd, ll.F23) == "D"


def test_route17_round_is_e_on_f25_beside_d_rerun_and_e_capped_over_ten_folds() -> None:
    """route17's rule: E = v12's recipe on F25 (F23 + hard-test-15, -16, in that order), D = the
    same on F23 (its own deltas, ``D``), and E with the band capped at 0.15 scored from E's own
    deltas in E's pass; folds hard-test-7 ... -16, each fold's seed column. D's folds -15 and
    -16 learn all of F23, so v13's shipped delta is theirs."""
    ll = research_script("loso_lora")
    rnd = ll.ROUNDS["route17"]
    assert rnd.files == ll.F25 == (*ll.F23, "hard-test-15", "hard-test-16")
    assert rnd.held_out == tuple(f"hard-test-{n}" for n in range(7, 17))
    assert rnd.fold_seeds
    groups = dict(ll.passes(rnd))
    assert list(groups) == [ll.F25, ll.F23]
    e, e15 = groups[ll.F25].values()
    (d,) = groups[ll.F23].values()
    assert e == d == ll.V12_SHIPPED and e15 == ll.V12_SHIPPED._replace(cap=0.15)
    assert [ll.delta_folder(rnd, f) for f in groups] == ["E", "D"]
    v13 = RELEASES["v13"].with_name("minilm-lora-v13.npz")
    for held in ("hard-test-15", "hard-test-16"):
        assert ll.checked_delta(v13, [n for n in ll.F23 if n != held]) == v13


def test_route27_round_is_the_heads_on_f39_beside_v15_on_v13s_delta_for_every_fold() -> None:
    """route27's rule: G = v12's recipe with v15's rules, its heads on F39 (F23 + the spent
    hard-test-15 ... -26 and the four targeted sets) minus the fold; D = v15 as shipped (heads on
    F23); both on v13's shipped delta, which the main arm's folds check against F23
    (``delta_files``), not against F39 minus the fold; the sixteen spent files are the folds."""
    ll = research_script("loso_lora")
    rnd = ll.ROUNDS["route27"]
    spent = (*(f"hard-test-{n}" for n in range(15, 27)),)
    targeted = ("people-code-test", "people-code-test-2", "people-code-test-3")
    assert rnd.held_out == (*spent, *targeted, "purpose-code-test")
    assert rnd.files == ll.F39 == (*ll.F23, *rnd.held_out) and rnd.delta_files == ll.F23
    assert rnd.fold_seeds
    groups = dict(ll.passes(rnd))
    assert list(groups) == [ll.F39, ll.F23]
    (g,) = groups[ll.F39].values()
    (d,) = groups[ll.F23].values()
    assert g == d == ll.V12_SHIPPED._replace(rules=("hazard-floor", "people-floor-wide"))
    assert [ll.delta_folder(rnd, f) for f in groups] == ["D", "D"]
    v13 = RELEASES["v13"].with_name("minilm-lora-v13.npz")
    assert ll.checked_delta(v13, list(ll.F23)) == v13
    with pytest.raises(SystemExit, match="was trained on"):  # the delta never saw F39
        ll.checked_delta(v13, [n for n in ll.F39 if n != "hard-test-26"])


def test_route28_round_adds_one_training_file_to_route27s_and_scores_d_beside() -> None:
    """route28's rule: H = G's recipe on F40 (F39 + hard-train-v28-extra, never a fold), D
    beside it (G's cells are route27's); every arm on v13's delta, checked against F23 whatever
    files its heads learn."""
    ll = research_script("loso_lora")
    rnd, r27 = ll.ROUNDS["route28"], ll.ROUNDS["route27"]
    assert rnd.files == ll.F40 == (*ll.F39, "hard-train-v28-extra")
    assert rnd.held_out == r27.held_out and "hard-train-v28-extra" not in rnd.held_out
    assert rnd.delta_files == ll.F23 and rnd.fold_seeds
    groups = dict(ll.passes(rnd))
    assert list(groups) == [ll.F40, ll.F23]
    assert all(list(g.values()) == [ll.V15_SHIPPED] for g in groups.values())
    assert [ll.delta_folder(rnd, f) for f in groups] == ["D", "D"]


def test_the_people_floor_escalates_in_the_harness_only_where_its_rule_is_named() -> None:
    """route27 serves v15's rules: ``people-floor-wide`` adds its flagged rows to what the
    heads escalate, and a recipe without it is decided as before."""
    ll = research_script("loso_lora")
    lr = ll.lr
    n = 6
    off = np.zeros(n, dtype=bool)
    people = np.array([True, False, False, True, False, False])
    stage = lr.Stage(np.full(n, 0.01), 0.5, 0.3)
    args = (np.ones(n, dtype=bool), off, off, off, stage, stage, 0.3, 0.7, "static")
    with_rule = lr.Scored(*args, off, off, off, off, ("hazard-floor", "people-floor-wide"), people)
    without = lr.Scored(*args, off, off, off, off, ("hazard-floor",), people)
    assert with_rule.escalate(0.0).tolist() == people.tolist()
    assert not without.escalate(0.0).any()


def test_a_folds_scores_cut_at_the_seed_suite_decide_as_the_whole() -> None:
    """route16's per-fold seed column: one ``loso_q8.fold`` call scores the held-out split and
    the seed suite; ``split`` cuts every per-row array at the split's end, so each part decides
    (and counts) exactly as its rows did in the whole, at any threshold shift."""
    ll = research_script("loso_lora")
    lr = ll.lr
    rng = np.random.default_rng(16)
    n, m = 30, 24

    def flags() -> np.ndarray:
        return rng.random(n + m) < 0.2

    whole = lr.Scored(
        rng.random(n + m) < 0.4,
        flags(),
        flags(),
        flags(),
        lr.Stage(rng.random(n + m), 0.5, 0.3),
        lr.Stage(rng.random(n + m), 0.45, 0.35),
        0.3,
        0.7,
        "cascade",
        flags(),
        flags(),
        flags(),
        flags(),
        ("hazard-floor",),
    )
    head, tail = ll.split(whole, n)
    assert (len(head.y), len(tail.y)) == (n, m)
    for delta in (0.0, 0.03, 0.1):
        esc = whole.escalate(delta)
        assert np.array_equal(head.escalate(delta), esc[:n])
        assert np.array_equal(tail.escalate(delta), esc[n:])
        parts = [head.figures(delta), tail.figures(delta)]
        for k in ("high_missed", "med_missed", "over", "cost"):
            assert parts[0][k] + parts[1][k] == whole.figures(delta)[k]
    assert ll.fold_seed_cells(["24/24", "23/24"]) == "24 / 23 (of 24)"


def test_one_arm_is_scored_alone_with_its_own_recipe() -> None:
    """``--arm A:`` keeps A's pass (its files, its recipe, its deltas' folder) and drops B's."""
    ll = research_script("loso_lora")
    rnd = ll.ROUNDS["route14"]
    groups = dict(ll.passes(rnd))
    kept = {f: ll.filter_arms(g, "A:") for f, g in groups.items()}
    assert kept[ll.F20] == {} and kept[ll.F16] == groups[ll.F16]
    assert ll.filter_arms(groups[ll.F20], "B:") == groups[ll.F20]


def test_a_lora_arm_on_other_files_needs_its_own_deltas() -> None:
    ll = research_script("loso_lora")
    rnd = ll.ROUNDS["route13"]
    a = rnd.more[0]
    with pytest.raises(SystemExit, match="deltas' files"):  # F16's arm reading F17's deltas
        ll.passes(rnd._replace(more=(a._replace(deltas=""),)))
    with pytest.raises(SystemExit, match="folders of deltas"):  # two folders for one pass
        ll.passes(rnd._replace(more=(a, a._replace(name="A again", deltas="A2"))))


def test_cached_embeddings_encode_only_the_prompts_the_file_lacks(tmp_path: Path) -> None:
    """A fold's delta met again with a split more (route13's A folds, route12's caches) is
    encoded only for the new prompts; the vectors read back are the ones written."""
    ll = research_script("loso_lora")
    asked: list[list[str]] = []

    def encode(texts: list[str]) -> np.ndarray:
        asked.append(list(texts))
        return np.array([[float(len(t)), float(sum(map(ord, t)))] for t in texts])

    path = tmp_path / "emb.npz"
    first = ll.cached(path, ["a", "bb"], encode)
    second = ll.cached(path, ["ccc", "bb", "a", "ccc"], encode)
    assert asked == [["a", "bb"], ["ccc"]]
    assert list(second) == ["ccc", "bb", "a"]
    for p in ("a", "bb"):
        assert np.array_equal(first[p], second[p])
    assert ll.cached(path, ["bb"], encode)["bb"].tolist() == [2.0, 196.0] and len(asked) == 2
