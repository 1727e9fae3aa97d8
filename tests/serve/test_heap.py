"""The garbage collector's setting (``loomc/serve/heap.py``): set in a ``loomc serve`` process,
never in a process that embeds the app (here: the test process itself)."""

from __future__ import annotations

import gc
import re
import subprocess
import sys
from pathlib import Path

import httpx
from servekit import ROOT, SECRET, InProcessServer, ServeProcess

from loomc.project import Project
from loomc.serve import create_app
from loomc.store import open_store

BODY = {"model": "general@lean", "messages": [{"role": "user", "content": "Explain DNS."}]}
AUTH = {"authorization": f"Bearer {SECRET}"}


def _gauge(text: str, name: str) -> int:
    found = re.search(rf"^{re.escape(name)} (\d+)$", text, re.M)
    assert found, text
    return int(found.group(1))


def test_a_served_process_freezes_its_start_up_heap_and_the_first_runs(
    keyed_server: ServeProcess,
) -> None:
    base = keyed_server.url
    before = _gauge(httpx.get(f"{base}/metrics").text, "loomc_gc_frozen_objects")
    assert before > 10_000  # the modules, the compiled project, the profiler
    for stream in (False, True):
        reply = httpx.post(
            f"{base}/v1/chat/completions", json={**BODY, "stream": stream}, headers=AUTH
        )
        assert reply.status_code == 200
    text = httpx.get(f"{base}/metrics").text
    after = _gauge(text, "loomc_gc_frozen_objects")
    assert after > before  # frozen again after the first run (what it imported and built)
    for generation in "012":
        assert f'loomc_gc_collections_total{{generation="{generation}"}} ' in text


def test_settle_sets_the_thresholds_and_after_run_freezes_once() -> None:
    # in a process of its own: a freeze here would hold this test process's objects for good
    script = """
import gc
from loomc.serve.heap import GEN0, GEN1, GEN2, Heap
heap = Heap()
heap.settle()
assert gc.get_threshold() == (GEN0, GEN1, GEN2), gc.get_threshold()
settled = gc.get_freeze_count()
assert settled > 0
held = [[] for _ in range(5000)]
heap.after_run()
first = gc.get_freeze_count()
assert first >= settled + 5000, (settled, first)
more = [[] for _ in range(5000)]
heap.after_run()
assert gc.get_freeze_count() == first  # only the first run freezes
print("ok")
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert out.stdout.strip() == "ok", out.stderr


def test_an_embedded_app_leaves_the_host_process_collector_alone(tmp_path: Path) -> None:
    project = Project.load(ROOT, ROOT / "policies" / "default.yaml")
    threshold, frozen = gc.get_threshold(), gc.get_freeze_count()
    server = InProcessServer(create_app(project, open_store(tmp_path / "store.db")))
    try:
        reply = httpx.post(f"{server.url}/v1/chat/completions", json=BODY)
        assert reply.status_code == 200, reply.text
    finally:
        server.stop()
    assert gc.get_threshold() == threshold
    assert gc.get_freeze_count() == frozen
