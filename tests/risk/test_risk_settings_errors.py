"""A policy whose ``risk`` section names something the profiler cannot be built with (an unknown
release or backend, a threshold outside 0-1) is refused in one line by ``run``, ``eval`` and
``doctor``: it used to leave ``loomc run`` as a ValueError traceback from inside the profiler."""

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
    need("numpy")  # without it `auto` is the keyword rules, which read no options
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
