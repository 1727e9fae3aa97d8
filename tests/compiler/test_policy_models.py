"""The hand-checked policy records (`loomc.policy.models`) against their pydantic twins.

The records accept only what they are sure of and leave everything else to pydantic, so the
property that matters: whatever the fast path accepts, pydantic accepts too and makes the very
same value (types included: ``Decimal("5")`` is not ``5``), with the same fields marked as set.
Inputs are generated from the twins' own annotations, valid and invalid values mixed.
"""

from __future__ import annotations

import math
import subprocess
import sys
import types
import typing
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from loomc.policy import models, pydantic_models
from loomc.policy.record import Record, Unsure, _from_twin

ROOT = Path(__file__).resolve().parents[2]
TWINS = {
    name: cls
    for name, cls in vars(pydantic_models).items()
    if isinstance(cls, type)
    and issubclass(cls, BaseModel)
    and cls.__module__.endswith("models")
    and name != "_Model"
}

STRINGS = [
    "", "x", "5", " 5 ", "-1", "1_000", "1e3", "nan", "inf", "abc", "45s", "1_500ms", "2min",
    "1.5min", ".5s", "$0.08", "0.08", "$ 2", "openai/gpt-4o", "x/", "/x", "mock", "status",
    "auto", "semantic", "env:KEY", "env:1X", "a-b.c", "a b", "(", "true", "on", "1", "0",
]  # fmt: skip
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 130_000),
    st.sampled_from([10**15, 10**15 + 1, -(10**15) - 1, 2**53 + 1, 10**20]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 0.1, 1e15, 1e20]),
    st.sampled_from(STRINGS),
    st.decimals(allow_nan=True, allow_infinity=True, places=3, max_value=10**16),
    st.lists(st.sampled_from(STRINGS), max_size=2),
    st.just({}),
)


DURATIONS = st.integers(0, 10**6) | st.sampled_from(["45s", "1_500ms", "2min", "1.5min", ".5s"])
AMOUNTS = st.one_of(
    st.decimals(0, 100, places=3),
    st.floats(0, 10),
    st.integers(0, 100),
    st.sampled_from(["$0.08", "0.08", "1_000", "2"]),
)
PLAIN = {
    int: st.integers(-1, 200),
    float: st.floats(0, 2) | st.integers(0, 2),
    bool: st.booleans(),
    str: st.sampled_from(STRINGS) | st.sampled_from(["openai/gpt-4o", "env:KEY", "a-b.c"]),
    Decimal: AMOUNTS,
}


def _values(tp: Any, *extra: Any) -> st.SearchStrategy[Any]:
    """Values for an annotation: mostly of its type (nested records included), one in six not."""
    typed = _typed(tp, *extra)
    return st.integers(0, 5).flatmap(lambda n: typed if n else SCALARS)


def _typed(tp: Any, *extra: Any) -> st.SearchStrategy[Any]:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    funcs = {getattr(m, "func", None) for m in extra}
    if models._duration in funcs:
        return DURATIONS
    if models._decimal in funcs:
        return AMOUNTS
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return _record(tp)
    if origin is typing.Annotated:
        return _typed(args[0], *args[1:])
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*[_typed(a) for a in args])
    if origin is list:
        return st.lists(_values(args[0]), max_size=3)
    if origin is dict:
        keys = st.sampled_from(["a", "b", "lean", "balanced", "p"]) | st.integers(0, 2)
        return st.dictionaries(keys, _values(args[1]), max_size=3)
    if origin is typing.Literal:
        return st.sampled_from(args)
    if tp is type(None):
        return st.none()
    return PLAIN.get(tp, SCALARS)


def _record(twin: type[BaseModel]) -> st.SearchStrategy[dict[str, Any]]:
    fields = twin.model_fields
    strategies = {n: _values(f.annotation, *f.metadata) for n, f in fields.items()}
    required = {n: v for n, v in strategies.items() if fields[n].is_required()}
    optional = {n: v for n, v in strategies.items() if not fields[n].is_required()}
    plain = st.fixed_dictionaries(required, optional=optional)
    bogus = st.fixed_dictionaries(required, optional={**optional, "bogus": SCALARS})
    return st.integers(0, 5).flatmap(lambda n: plain if n else bogus)


def _tree(value: Any) -> Any:
    """A comparison key that tells types apart (``Decimal(5)`` from ``5``, ``True`` from 1)."""
    if isinstance(value, Record | BaseModel):
        fields = value.model_fields_set
        body = {k: _tree(getattr(value, k)) for k in _names(value)}
        return (type(value).__name__, sorted(fields), body)
    if isinstance(value, dict):
        return ("dict", [(_tree(k), _tree(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [_tree(v) for v in value])
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    return (type(value).__name__, repr(value))


def _errors(exc: ValidationError) -> list[tuple[Any, ...]]:
    return [(e["type"], e["loc"], e["msg"]) for e in exc.errors()]


def _names(value: Any) -> list[str]:
    cls = type(value)
    return list(cls.fields) if isinstance(value, Record) else list(cls.model_fields)


def test_same_fields_in_the_same_order_with_the_same_defaults() -> None:
    assert TWINS, "no pydantic twins found"
    for name, twin in TWINS.items():
        plain = getattr(models, name)
        assert list(plain.fields) == list(twin.model_fields), name
        for field, info in twin.model_fields.items():
            default = plain.fields[field][1]
            if info.is_required():
                assert default is models.REQUIRED, (name, field)
                continue
            made = default.make() if isinstance(default, models.Factory) else default
            want = _from_twin(info.get_default(call_default_factory=True))
            assert _tree(made) == _tree(want), (name, field)


@pytest.mark.parametrize("name", sorted(TWINS))
def test_whatever_the_fast_path_accepts_pydantic_makes_identically(name: str) -> None:
    twin, plain = TWINS[name], getattr(models, name)

    @settings(
        max_examples=400 if name == "Policy" else 200,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(data=_record(twin) | SCALARS)
    def check(data: Any) -> None:
        try:
            want = twin.model_validate(data)
        except ValidationError as exc:
            with pytest.raises(Unsure):
                plain.build(data)
            with pytest.raises(ValidationError) as got:  # the record's errors are pydantic's
                plain.model_validate(data)
            assert _errors(got.value) == _errors(exc)
            return
        made = plain.model_validate(data)
        assert _tree(made) == _tree(want)
        try:
            fast = plain.build(data)
        except Unsure:
            return
        assert _tree(fast) == _tree(want)

    check()


def test_a_valid_policy_is_loaded_without_pydantic() -> None:
    """The point of the records: ``loomc check`` and ``loomc run`` never import pydantic for a
    policy that validates (building its schemas cost ~100 ms per process)."""
    probe = (
        "import sys\n"
        "from loomc.policy.load import load_policy\n"
        "src, diags = load_policy('policies/default.yaml')\n"
        "assert src is not None and not diags, diags\n"
        "src.policy.model_copy(update={'name': 'x'}).model_dump_json()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pydantic'))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, check=True, capture_output=True, text=True
    )
    assert out.stdout.strip() == "[]"


def test_records_keep_the_pydantic_interface_loomc_uses() -> None:
    risk = models.RiskSettings(profiler="keywords", signals={"pii": ["iban"]})
    assert risk.model_fields_set == {"profiler", "signals"}
    same = pydantic_models.RiskSettings(profiler="keywords", signals={"pii": ["iban"]})
    assert risk.model_dump() == same.model_dump()
    assert risk.model_dump_json() == same.model_dump_json()
    assert repr(risk) == repr(same)
    copied = risk.model_copy(update={"high_threshold": 0.9})
    assert copied.high_threshold == 0.9 and risk.high_threshold == 0.5
    assert copied.model_fields_set == {"profiler", "signals", "high_threshold"}
    with pytest.raises(AttributeError):
        risk.profiler = "semantic"  # type: ignore[misc]
    price = models.Price(input_per_million="$0.08", output_per_million=2)
    twin_price = pydantic_models.Price(input_per_million="$0.08", output_per_million=2)
    assert price.model_dump(mode="json") == twin_price.model_dump(mode="json")
    assert price.input_per_million == Decimal("0.08")
    assert models.Policy.model_json_schema() == pydantic_models.Policy.model_json_schema()
    lax = models.WorkerConfig(model="p/m", max_tokens="5", temperature=1)  # pydantic coerces
    assert lax.max_tokens == 5 and lax.temperature == 1.0
    with pytest.raises(ValidationError, match="model must be written provider/model-id"):
        models.WorkerConfig(model="nope")
    nested = models.ProviderConfig(type="mock", mock=models.MockScript(latency_ms="2s"), headers={})
    assert nested.mock is not None and nested.mock.latency_ms == 2000
    lax_nested = models.ProviderConfig(type="mock", mock=nested.mock, timeout=1.0)
    assert lax_nested.mock == nested.mock and lax_nested.timeout == 1


def test_a_pattern_that_does_not_compile_is_a_diagnostic_not_a_traceback() -> None:
    """Regression: ``re.error`` escaped pydantic (it is no ValueError) and ``loomc check``
    printed a traceback for a mock rule's bad ``pattern``."""
    from loomc.policy.load import load_policy_text

    text = (
        "providers:\n"
        "  mock:\n"
        "    type: mock\n"
        "    mock:\n"
        '      rules: [{pattern: "(", response: x}]\n'
        "workers:\n"
        "  w: {model: mock/m}\n"
    )
    source, diags = load_policy_text(text, "p.yaml")
    assert source is None
    assert [(d.code, d.span.line, d.message) for d in diags] == [
        (
            "LOOM603",
            5,
            "providers.mock.mock.rules.0.pattern: Value error, not a regular expression: "
            "missing ), unterminated subpattern at position 0",
        )
    ]


# What mock patterns are made of (escaped text, wildcards) and what could break them nearby.
_PATTERN_PIECES = st.sampled_from(
    ["(?s:.*)", ".*", ".", "*", "?", "\\.", "\\-", "\\?", "\\'", "\\ ", "\\", "\\a", "\\d",
     "\\1", "\\é", "(?s:", ")", "(", "ab", "{", "}", "[", "]", "|", "^", "$", "+", "é", "0"]
)  # fmt: skip


@given(
    st.text(alphabet=st.sampled_from(list("ab -_'.^$*+?{}[]\\|()0é")), max_size=12)
    | st.lists(_PATTERN_PIECES, max_size=10).map("".join)
    | st.text()
)
@settings(max_examples=300)
def test_the_plain_text_shortcut_agrees_with_compiling_the_pattern(pattern: str) -> None:
    """``values._compiles`` skips compiling plain or escaped text with wildcards: same answer
    as re."""
    import re

    from loomc.policy.values import _compiles

    try:
        re.compile(pattern)
        valid = True
    except (re.error, RecursionError, OverflowError):
        valid = False
    assert _compiles(pattern) == valid


def test_the_mock_patterns_of_this_repository_skip_compiling() -> None:
    """The shortcut covers what `policies/` holds: escaped prompts, ``(?s:.*)``, plain text."""
    import re

    from loomc.policy.values import _SURELY_COMPILES

    for pattern in (
        re.escape("What is the plural of 'mouse'?"),
        re.escape("Our feature-flag client treats every flag as ena") + "(?s:.*)### critique",
        "Format 1234\\.5 as US dollars\\.",
    ):
        assert _SURELY_COMPILES.fullmatch(pattern), pattern
    assert not _SURELY_COMPILES.fullmatch("a\\d") and not _SURELY_COMPILES.fullmatch("(?s:.*")
