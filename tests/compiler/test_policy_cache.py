"""The policy cache (loomc/policy/cached.py) can only save time: a policy read back from it is
the one its YAML gives, with the same positions, findings and errors; anything it cannot hold
exactly, or any damaged entry, is read from the YAML as if there were no cache."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loomc.cache import content_key
from loomc.policy import cached
from loomc.policy.bounded_yaml import compose_and_construct
from loomc.policy.load import PolicySource, load_policy, load_policy_text

ROOT = Path(__file__).resolve().parents[2]
POLICIES = sorted((ROOT / "policies").glob("*.yaml"))
DEFAULT = yaml.safe_load((ROOT / "policies" / "default.yaml").read_text(encoding="utf-8"))
FUNCTION_SCOPED = [HealthCheck.function_scoped_fixture]


def _same(
    a: tuple[PolicySource | None, list[Any]], b: tuple[PolicySource | None, list[Any]]
) -> None:
    """Two loads gave the same policy, positions and diagnostics."""
    assert a[1] == b[1]
    assert (a[0] is None) == (b[0] is None)
    if a[0] is not None and b[0] is not None:
        assert a[0].policy == b[0].policy and repr(a[0].policy) == repr(b[0].policy)
        assert list(a[0].positions.items()) == list(b[0].positions.items())
        assert a[0].path == b[0].path


def test_the_projects_policies_come_back_from_the_cache(policy_cache_dir: Path) -> None:
    for path in POLICIES:
        plain = load_policy(path, cache=False)
        _same(load_policy(path), plain)  # stores
        text = path.read_text(encoding="utf-8")
        assert cached.load(text, str(path)) is not None
        _same(load_policy(path), plain)  # a hit
    assert len(sorted(policy_cache_dir.glob("*.json"))) == len(POLICIES)


values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.dates(),
    st.binary(max_size=4),
)
edits = st.lists(
    st.tuples(st.sampled_from(["workers", "tiers", "providers", "limits", "new"]), values),
    max_size=4,
)


@settings(max_examples=80, deadline=None, suppress_health_check=FUNCTION_SCOPED)
@given(edits=edits, int_key=st.booleans())
def test_a_cached_policy_is_what_its_yaml_gives(
    policy_cache_dir: Path, edits: list[tuple[str, Any]], int_key: bool
) -> None:
    """Valid or not, exact in JSON or not (dates, binary, NaN, integer keys), a policy loaded
    through the cache twice says what it says without one."""
    data = dict(DEFAULT)
    for where, value in edits:
        section = data.get(where)
        if isinstance(section, dict) and section:
            first = next(iter(section))
            data[where] = {**section, first: value}
        else:
            data[where] = value
    if int_key:
        data[7] = "seven"
    text = yaml.dump(data, sort_keys=False, allow_unicode=True)
    plain = load_policy_text(text, "p.yaml")
    _same(load_policy_text(text, "p.yaml", cache=True), plain)
    _same(load_policy_text(text, "p.yaml", cache=True), plain)
    stored = cached.load(text, "p.yaml") is not None
    try:
        constructed = compose_and_construct(text)[1]
    except Exception:  # LOOM602/607: nothing to keep
        assert not stored
        return
    assert stored == cached.exact(constructed)  # kept exactly when JSON holds it exactly
    if int_key:  # JSON would give "7" back for 7
        assert not stored


@settings(max_examples=80, deadline=None, suppress_health_check=FUNCTION_SCOPED)
@given(data=st.data())
def test_a_damaged_entry_gives_what_no_cache_gives(
    policy_cache_dir: Path, damage: Callable[[Path, st.DataObject], None], data: st.DataObject
) -> None:
    path = data.draw(st.sampled_from(POLICIES))
    text = path.read_text(encoding="utf-8")
    plain = load_policy_text(text, str(path))
    load_policy_text(text, str(path), cache=True)
    damage(policy_cache_dir / f"{content_key(cached.fingerprint(), text)}.json", data)
    assert cached.load(text, str(path)) is None
    _same(load_policy_text(text, str(path), cache=True), plain)


def test_errors_and_limits_read_the_same_with_the_cache(policy_cache_dir: Path) -> None:
    for text in (
        "workers: [1, 2\n",  # malformed: never stored
        "- a list\n",  # not a mapping: stored, and the same error from the entry
        "version: 1\nworkers:\n  drafter: {model: 3}\n",  # invalid: pydantic's words
        "a: &x [1, 2]\nb: *x\n" + "c: [" * 200 + "]" * 200 + "\n",  # too deep (LOOM607)
    ):
        plain = load_policy_text(text, "e.yaml")
        assert plain[0] is None and plain[1]
        _same(load_policy_text(text, "e.yaml", cache=True), plain)
        _same(load_policy_text(text, "e.yaml", cache=True), plain)


def test_loomc_no_cache_and_an_unusable_folder(
    policy_cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOMC_NO_CACHE", "1")
    _same(load_policy(POLICIES[0]), load_policy(POLICIES[0], cache=False))
    assert sorted(policy_cache_dir.glob("*.json")) == []
    monkeypatch.delenv("LOOMC_NO_CACHE")
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("LOOMC_CACHE_DIR", str(blocker / "cache"))
    _same(load_policy(POLICIES[0]), load_policy(POLICIES[0], cache=False))


def test_a_policy_holding_a_key_is_not_copied_into_the_cache(policy_cache_dir: Path) -> None:
    text = (ROOT / "policies" / "default.yaml").read_text(encoding="utf-8")
    text += "\nnote: sk-abcdefghijklmnopqrstuvwx\n"
    plain = load_policy_text(text, "k.yaml")
    _same(load_policy_text(text, "k.yaml", cache=True), plain)
    assert sorted(policy_cache_dir.glob("*.json")) == []
