"""``loomc.risk.options``: the one list of what ``risk.options`` may hold, as properties.

The oracle for "valid" is written here from the documented option table (docs/routing.md,
"Options"), not derived from the module; and ``make_profiler`` refusing exactly the values the
checker calls errors is what keeps ``loomc check`` and ``loomc run`` from disagreeing."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loomc.policy.models import RiskSettings
from loomc.risk.base import RiskSettingsError
from loomc.risk.factory import make_profiler
from loomc.risk.options import (
    KNOWN,
    ROUTER_MEMBERS,
    first_error,
    option_problems,
    router_file_problem,
)
from loomc.risk.releases import RELEASES


def _documented_ok(key: str, value: Any) -> bool:
    real = isinstance(value, int | float) and not isinstance(value, bool)
    word = value if isinstance(value, str) else None
    if key == "release":
        return word in RELEASES
    if key == "backend":
        return word in ("auto", "numpy", "onnxruntime")
    if key == "dtype":
        return word in ("float32", "float64")
    if key in ("threshold", "signal_threshold", "medium_threshold", "band_low", "band_high"):
        return real and 0 <= value <= 1
    if key in ("threads", "cache"):
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0
    if key in ("cascade", "negation", "trivia"):
        return isinstance(value, bool)
    assert key == "data"
    return isinstance(value, str) and bool(value.strip())


values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5000),
    st.floats(-2, 2),
    st.just(float("nan")),
    st.sampled_from(
        [
            "v4",
            "v8",
            "v9",
            "v10",
            "v11",
            "v99",
            "onnxruntime",
            "float64",
            "numpy",
            "auto",
            "gpu",
            "float32",
            "float16",
            "",
        ]
    ),
    st.text(max_size=8),
    st.lists(st.integers(), max_size=2),
)


@given(
    st.dictionaries(
        st.sampled_from([*KNOWN, "relase", "x"]), st.one_of(values, st.floats(0, 1)), max_size=5
    )
)
@settings(max_examples=300, deadline=None)
def test_an_option_is_an_error_exactly_when_the_documentation_says(opts: dict[str, Any]) -> None:
    problems = option_problems(opts, files=False)
    errors = {p.key for p in problems if p.error}
    warned = {p.key for p in problems if not p.error}
    assert warned == {k for k in opts if k not in KNOWN}
    bad = {k for k, v in opts.items() if k in KNOWN and not _documented_ok(k, v)}
    # the int8 MiniLM (v10-v30; v27, the default, where none is named) has one precision:
    # dtype does not apply
    int8 = (opts.get("release") or "v22") in (
        "v10",
        "v11",
        "v12",
        "v13",
        "v14",
        "v15",
        "v16",
        "v17",
        "v18",
        "v19",
        "v20",
        "v21",
        "v22",
        "v23",
        "v24",
        "v25",
        "v26",
        "v27",
        "v28",
        "v30",
        "v31",
        "v33",
        "v34",
        "v35",
    )
    combo = opts.get("backend") == "onnxruntime" and opts.get("dtype") == "float64" and not int8
    # the band's two edges, each a valid fraction, must leave room between them
    edges = [opts.get("band_low"), opts.get("band_high")]
    empty = all(_documented_ok("band_low", v) for v in edges) and edges[0] >= edges[1]
    assert errors == bad | ({"backend"} if combo else set()) | ({"band_low"} if empty else set())
    for p in problems:
        assert "\n" not in p.message and p.message.startswith(("risk.options.", "unknown"))


@given(st.dictionaries(st.sampled_from(["cascade", "threads", "release", "threshold"]), values))
@settings(max_examples=60, deadline=None)
def test_make_profiler_refuses_exactly_the_errors(opts: dict[str, Any]) -> None:
    settings_ = RiskSettings(profiler="keywords", options=opts)
    error = first_error(opts)
    if error is None:
        assert make_profiler(settings_).name == "keywords"
    else:
        with pytest.raises(RiskSettingsError, match=r"policy risk section: risk\.options\."):
            make_profiler(settings_)


def test_a_missing_data_file_is_refused_not_a_quiet_fallback(tmp_path: Any) -> None:
    """It used to fall back to the keyword rules without a word under ``auto``."""
    missing = str(tmp_path / "nope.npz")
    with pytest.raises(RiskSettingsError, match="no such file"):
        make_profiler(RiskSettings(options={"data": missing}))
    assert option_problems({"data": missing}, files=False) == []


@pytest.mark.parametrize("what", ["garbage", "an archive of something else", "a policy file"])
def test_a_data_file_that_is_not_a_router_is_one_line(tmp_path: Any, what: str) -> None:
    """A damaged or foreign file given by ``data`` raised numpy's ``BadZipFile`` or a missing
    member's ``KeyError`` out of ``loomc run`` as a traceback."""
    np = pytest.importorskip("numpy")
    path = tmp_path / "router.npz"
    if what == "garbage":
        path.write_bytes(b"PK\x03\x04 not a zip")
    elif what == "a policy file":  # numpy took text for a pickle: its own message, no router's
        path.write_text("risk:\n  profiler: semantic\n")
    else:
        np.savez(path, table=np.zeros(3))
    with pytest.raises(RiskSettingsError) as info:
        make_profiler(RiskSettings(profiler="semantic", options={"data": str(path)}))
    message = str(info.value)
    reason = "(no member 'weights')" if what.startswith("an archive") else "(not an .npz archive)"
    assert message == (
        f"policy risk section: risk.options.data: 'router.npz' is not a router file {reason}"
    )
    # loomc check says the same, without numpy: the file is there, so it can be opened
    assert [p.message for p in option_problems({"data": str(path)}, files=False)] == [
        message.removeprefix("policy risk section: ")
    ]


def test_the_members_a_router_must_hold_are_those_the_router_reads() -> None:
    """``ROUTER_MEMBERS`` (what ``loomc check`` asks of a ``data`` file) is exactly what
    ``RouterWeights.from_arrays`` cannot do without: every shipped release's routers hold
    them all, and a router without any one of them is refused."""
    np = pytest.importorskip("numpy")
    from loomc.risk.router import RouterWeights

    for first in RELEASES.values():
        second = first.with_name(first.name.replace("router-static", "router-minilm"))
        for path in (first, second):
            if path.is_file():  # an archived release's files may not be installed
                assert router_file_problem(str(path)) is None, path.name
    with np.load(RELEASES["v4"]) as z:
        arrays = {name: z[name] for name in z.files}
    assert RouterWeights.from_arrays(arrays).train_ids
    for member in ROUTER_MEMBERS:
        with pytest.raises(KeyError):
            RouterWeights.from_arrays({k: v for k, v in arrays.items() if k != member})
    optional = set(arrays) - set(ROUTER_MEMBERS)
    assert RouterWeights.from_arrays({k: arrays[k] for k in ROUTER_MEMBERS}).train_ids
    assert optional  # v4's file holds more (its meta, its CV probabilities), none required


@given(
    st.one_of(
        st.text(min_size=1, max_size=8).map(lambda t: t + "\x00"),
        st.integers(300, 6000).map(lambda n: "x" * n),
    )
)
@settings(max_examples=40, deadline=None)
def test_a_hostile_data_path_is_one_short_line(path: str) -> None:
    """A NUL in the name or a name longer than the file system takes made ``Path.is_file``
    raise (a traceback from ``loomc run``); the message quotes at most 60 characters of it."""
    error = first_error({"data": path})
    assert error is not None and error.startswith("risk.options.data: no such file ")
    assert len(error) < 120 and "\n" not in error


def test_a_band_with_no_room_is_one_error_naming_both_edges() -> None:
    problems = option_problems({"band_low": 0.6, "band_high": 0.4}, files=False)
    assert [(p.key, p.error) for p in problems] == [("band_low", True)]
    assert problems[0].message == ("risk.options.band_low must be below band_high, got 0.6 and 0.4")
    assert option_problems({"band_low": 0.11, "band_high": 0.51}, files=False) == []
    # one edge alone: the other is the release's, so only the profiler can tell
    assert option_problems({"band_high": 0.05}, files=False) == []


@given(
    st.one_of(
        st.binary(max_size=400),
        st.binary(max_size=200).map(lambda b: b"PK\x03\x04" + b),
        st.binary(max_size=200).map(lambda b: b + b"PK\x05\x06" + bytes(18)),
    )
)
@settings(max_examples=150, deadline=None)
def test_any_bytes_given_as_data_are_one_line_never_a_traceback(raw: bytes) -> None:
    """Hostile or damaged files (a zip's signatures at either end, a directory pointing
    anywhere) are said in one short line by ``loomc check``, however they break the reader."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.npz"
        path.write_bytes(raw)
        problem = router_file_problem(str(path))
    assert problem is not None and "\n" not in problem and len(problem) < 120
    assert problem.startswith("'x.npz' is not a router file (")
