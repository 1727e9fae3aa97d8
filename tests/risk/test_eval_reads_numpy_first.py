"""An eval on a semantic policy reads numpy's router when it is prepared, not mid-run.

Why (benchmarks/README.md, "mem15"): a profiler built before numpy is imported reads the plain
router (``loomc.risk.pure``); an eval then imported numpy and read numpy's router on its first
prompt, among the run's own objects, and v12's eval peak RSS rose from ~145 to ~150 MiB (the
gate is 150). ``prepare_eval`` now does both first. Fresh processes: whether numpy is imported,
and which router a profiler holds, depend on what this test process has already done.
"""

from __future__ import annotations

from typing import Any

from fresh_process import run_fresh

_PREPARE = """
import json, sys, tempfile, weakref
from pathlib import Path
import yaml
import loomc
from loomc.risk import pure

tmp = Path(tempfile.mkdtemp())
policy = yaml.safe_load((Path.cwd() / "policies" / "default.yaml").read_text())
policy["risk"] = {"profiler": PROFILER, "options": {"release": "v12", "backend": "numpy"}}
(tmp / "policy.yaml").write_text(yaml.safe_dump(policy))
(tmp / "cases.jsonl").write_text('{"id": "a", "prompt": "Say hello."}\\n')
ev = loomc.prepare_eval(tmp / "cases.jsonl", "baseline,lean", project=Path.cwd(),
                        policy=tmp / "policy.yaml")
numpy_before = "numpy" in sys.modules
heads = [type(getattr(p, "_head", None)).__name__ for p in ev.profilers.values()]
plain_alive = len(pure._ROUTERS)
receipt = ev.run()
print(json.dumps({"numpy": numpy_before, "heads": heads, "plain": plain_alive,
                  "names": [p.name for p in ev.profilers.values()],
                  "statuses": [r.status for r in receipt.runs]}))
"""


def _prepare(profiler: str) -> dict[str, Any]:
    return run_fresh(_PREPARE.replace("PROFILER", repr(profiler)))


def test_a_semantic_eval_reads_numpys_router_before_it_runs() -> None:
    got = _prepare("semantic")
    assert got["names"] == ["semantic", "semantic"]
    assert got["numpy"] is True
    assert got["heads"] == ["RouterWeights", "RouterWeights"]  # numpy's, shared
    assert got["plain"] == 0  # the plain router was let go before the run
    assert got["statuses"] == ["ok", "ok"]  # and the eval runs on it


def test_an_eval_on_the_keyword_rules_does_not_import_numpy_for_its_idle_semantic_one() -> None:
    got = _prepare("keywords")
    assert got["names"] == ["keywords", "semantic"]
    assert got["numpy"] is False
