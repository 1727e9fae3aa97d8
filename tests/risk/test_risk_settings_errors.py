"""A policy whose ``risk`` section names something the profiler cannot be built with (an unknown
release or backend, a threshold outside 0-1) is refused in one line by ``run``, ``eval`` and
``doctor``: it used to leave ``loomc run`` as a ValueError traceback from inside the profiler.
Values it used to take silently (``cascade: "no"`` read as true, negative counts, a ``data`` file
that is not there falling back to keywords) are refused the same way, on every install."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from needs import need

from loomc.cli.main import main
from loomc.policy.models import RiskSettings
from loomc.risk.base import RiskSettingsError
from loomc.risk.factory import make_profiler

BAD = {
    "{backend: gpu}": "risk.options.backend must be one of",
    "{release: v99}": "risk.options.release must be one of",
    "{threshold: 7}": "risk.options.threshold must be between 0 and 1",
    '{cascade: "no"}': "risk.options.cascade must be true or false, got 'no'",
    "{threads: -3}": "risk.options.threads must be a whole number of at least 0, got -3",
    "{cache: 1.5}": "risk.options.cache must be a whole number of at least 0, got 1.5",
    "{dtype: float16}": "risk.options.dtype must be one of float32, float64, got 'float16'",
    "{data: routers/missing.npz}": "risk.options.data: no such file 'routers/missing.npz'",
    "{negation: 0}": "risk.options.negation must be true or false, got 0",
}


def _project(tmp_path: Path, options: str) -> Path:
    project = tmp_path / "p"
    assert main(["init", str(project)]) == 0
    policy = next((project / "policies").glob("*.yaml"))
    text = policy.read_text(encoding="utf-8")
    text, n = re.subn(r"(?m)^  profiler: auto$", f"  profiler: auto\n  options: {options}", text)
    assert n == 1
    policy.write_text(text, encoding="utf-8")
    return project


@pytest.mark.parametrize("options", sorted(BAD))
def test_run_eval_and_doctor_refuse_in_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    options: str,
) -> None:
    monkeypatch.chdir(_project(tmp_path, options))
    capsys.readouterr()
    assert main(["run", "hello"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and BAD[options] in err
    assert err.strip().splitlines()[-1].startswith("loomc run: policy risk section: ")
    data = Path("d.jsonl")
    data.write_text('{"id": "a", "prompt": "hello"}\n', encoding="utf-8")
    assert main(["eval", str(data), "--output", "o.json"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and BAD[options] in err
    assert not Path("o.json").exists()
    assert main(["doctor"]) == 1
    out = capsys.readouterr()
    assert f"FAIL risk profiler: auto (policy risk section: {BAD[options]}" in out.out + out.err


def test_the_error_is_a_loomc_error_and_a_value_error() -> None:
    need("numpy")
    settings = RiskSettings(profiler="semantic", options={"backend": "gpu"})
    with pytest.raises(RiskSettingsError, match="backend must be one of") as caught:
        make_profiler(settings)
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize("options", sorted(BAD))
def test_check_reports_each_at_its_position(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    options: str,
) -> None:
    """``loomc check`` (no numpy needed) names the option's file:line:col, as LOOM608; the
    missing ``data`` file is the run's to judge (its path is read from the run's directory)."""
    monkeypatch.chdir(_project(tmp_path, options))
    policy = next(Path("policies").glob("*.yaml"))
    line = next(
        n for n, text in enumerate(policy.read_text().splitlines(), 1) if "  options:" in text
    )
    capsys.readouterr()
    rc = main(["check"])
    out = capsys.readouterr()
    text = out.out + out.err
    if "no such file" in BAD[options]:
        assert rc == 0 and "LOOM608" not in text
        return
    assert rc == 1
    key = options.strip("{}").split(":")[0]
    col = policy.read_text().splitlines()[line - 1].index(key) + 1
    assert f"{policy}:{line}:{col}: error[LOOM608]: {BAD[options]}" in text


def test_an_unknown_option_is_a_warning_naming_the_nearest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(_project(tmp_path, "{relase: v9, cascad: false}"))
    capsys.readouterr()
    assert main(["check"]) == 0
    text = "".join(capsys.readouterr())
    assert "warning[LOOM609]: unknown risk option 'relase' (ignored)" in text
    assert "did you mean `release`?" in text and "did you mean `cascade`?" in text
    assert main(["run", "hello"]) == 0  # a warning: the run goes on with the defaults


@pytest.mark.parametrize("what", ["a policy file", "a router"])
def test_check_opens_a_data_file_that_is_there(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    what: str,
) -> None:
    """A ``data`` file seen from where ``loomc check`` runs is opened (its archive's directory
    only, no numpy): a file that is not a router is LOOM608 at the option, before any run
    loads it; a router passes. A file that is not there stays the run's to judge (above)."""
    from loomc.risk.releases import RELEASES

    monkeypatch.chdir(_project(tmp_path, "{data: routers/mine.npz}"))
    Path("routers").mkdir()
    mine = Path("routers/mine.npz")
    if what == "a router":
        mine.write_bytes(RELEASES["v4"].read_bytes())
    else:
        mine.write_text("risk:\n  profiler: semantic\n", encoding="utf-8")
    policy = next(Path("policies").glob("*.yaml"))
    line = next(n for n, t in enumerate(policy.read_text().splitlines(), 1) if "  options:" in t)
    col = policy.read_text().splitlines()[line - 1].index("data") + 1
    capsys.readouterr()
    rc = main(["check"])
    text = "".join(capsys.readouterr())
    if what == "a router":
        assert rc == 0 and "LOOM608" not in text
        return
    assert rc == 1 and "Traceback" not in text
    assert (
        f"{policy}:{line}:{col}: error[LOOM608]: risk.options.data: 'mine.npz' is not a router "
        "file (not an .npz archive)"
    ) in text
