"""Shared pieces of the `loomc serve` benchmarks: every server in its own process.

- ``upstream(delay_ms)``: a minimal OpenAI-compatible upstream (``serve_upstream.py``), the one
  mock every arm calls, so loomc, a direct call and LiteLLM's proxy are compared on equal terms;
- ``loomc_serve(upstream_url)``: ``python -m loomc serve`` on a policy whose every worker is that
  upstream (``general@lean`` = one upstream call per request);
- ``litellm_proxy(upstream_url)``: LiteLLM's proxy (its own venv) serving the same upstream;
- ``interleaved(arms, rounds)``: the arms alternated in shuffled order, a median per arm and round.
"""

from __future__ import annotations

import os
import random
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import yaml

ROOT = Path(__file__).resolve().parents[1]
# the loomc whose server is measured: this checkout, or another tree (a "before" measurement)
TREE = Path(os.environ.get("LOOMC_BENCH_TREE", ROOT))
LITELLM = Path(os.environ.get("LOOMC_LITELLM_VENV", "/work/main/.venv-litellm")) / "bin" / "litellm"
# another checkout measured beside this one in the same run (the "before" arm), when set
BEFORE = Path(os.environ["LOOMC_BENCH_BEFORE"]) if os.environ.get("LOOMC_BENCH_BEFORE") else None


def tree_env(tree: Path) -> dict[str, str]:
    """The environment of a server from ``tree``: the tree first on the path, the caller's
    PYTHONPATH after it (e.g. a folder with uvloop and httptools)."""
    path = [str(tree), str(tree / "research"), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path)}


ENV = tree_env(TREE)
BODY = {"model": "general@lean", "messages": [{"role": "user", "content": "Explain DNS briefly."}]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_http(url: str, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args!r} exited with {proc.returncode}")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


PIDS: dict[str, int] = {}  # a started server's base URL -> its process id


def cpu_seconds(pid: int) -> float:
    """CPU time used so far by every thread of process ``pid`` and of its child processes
    (``loomc serve --workers N``), the scheduler's nanosecond count, not the 10 ms ticks of
    ``/proc/PID/stat``: a per-request figure that holds under load, where wall times do not."""
    total = 0
    children: list[str] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
            with open(f"/proc/{pid}/task/{task}/children") as f:
                children += f.read().split()
        except (FileNotFoundError, ProcessLookupError):
            pass  # a worker thread that just ended
    return total / 1e9 + sum(cpu_seconds(int(child)) for child in children)


@contextmanager
def _process(
    args: list[str],
    ready: str,
    env: dict[str, str] | None = None,
    timeout: float = 60,
    cwd: Path = ROOT,
) -> Iterator[subprocess.Popen[bytes]]:
    fd, log_name = tempfile.mkstemp(prefix="loomc-bench-", suffix=".log")
    proc = subprocess.Popen(args, stdout=fd, stderr=subprocess.STDOUT, env=env or ENV, cwd=cwd)
    os.close(fd)
    try:
        try:
            _wait_http(ready, proc, timeout)
        except RuntimeError as exc:
            raise RuntimeError(f"{exc}; its output is in {log_name}") from None
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def upstream(delay_ms: int = 0) -> Iterator[str]:
    port = free_port()
    script = str(ROOT / "benchmarks" / "serve_upstream.py")
    with _process(
        [sys.executable, script, "--port", str(port), "--delay-ms", str(delay_ms)],
        f"http://127.0.0.1:{port}/healthz",
    ):
        yield f"http://127.0.0.1:{port}/v1"


def upstream_policy(base_url: str, folder: Path, serve: dict[str, object] | None = None) -> Path:
    """The default policy with every worker on the upstream (no mock)."""
    policy = yaml.safe_load((ROOT / "policies" / "default.yaml").read_text())
    policy["providers"] = {"up": {"type": "openai-compatible", "base_url": base_url}}
    for worker in policy["workers"].values():
        worker["model"] = "up/" + worker["model"].split("/", 1)[1]
    policy["pricing"] = {f"up/{k.split('/', 1)[1]}": v for k, v in policy["pricing"].items()}
    if serve is not None:
        policy["serve"] = serve
    path = folder / "policy.yaml"
    path.write_text(yaml.safe_dump(policy, sort_keys=False))
    return path


@contextmanager
def loomc_serve(
    base_url: str,
    serve: dict[str, object] | None = None,
    env: dict[str, str] | None = None,
    tree: Path = TREE,
    extra: tuple[str, ...] = (),
) -> Iterator[str]:
    """``loomc serve`` from ``tree`` (this checkout by default) in its own process; ``extra``
    are more of its options (``--workers 2``)."""
    folder = Path(tempfile.mkdtemp(prefix="loomc-bench-"))
    policy = upstream_policy(base_url, folder, serve)
    port = free_port()
    # LOOMC_BENCH_PROFILE=OUT: under cProfile, started by SIGUSR1, written by SIGUSR2
    launch = ["-m", "loomc"]
    if os.environ.get("LOOMC_BENCH_PROFILE"):
        launch = [str(ROOT / "benchmarks" / "serve_profiled.py")]
    args = [sys.executable, *launch, "serve", str(tree), "--policy", str(policy)]
    args += ["--port", str(port), "--store", str(folder / "store.db"), "--log-level", "error"]
    args += [*extra]
    url = f"http://127.0.0.1:{port}/v1"
    # cwd is the tree: `python -m` puts the working directory first on sys.path, before
    # PYTHONPATH, so from this checkout's folder a "before" server ran this checkout's loomc
    with _process(
        args, f"http://127.0.0.1:{port}/healthz", {**tree_env(tree), **(env or {})}, cwd=tree
    ) as proc:
        PIDS[url] = proc.pid
        yield url


@contextmanager
def litellm_proxy(base_url: str) -> Iterator[str | None]:
    """LiteLLM's proxy serving ``general@lean`` from the same upstream; None when absent."""
    if not LITELLM.exists():
        yield None
        return
    folder = Path(tempfile.mkdtemp(prefix="litellm-bench-"))
    config = {
        "model_list": [
            {
                "model_name": "general@lean",
                "litellm_params": {
                    "model": "openai/worker-small",
                    "api_base": base_url,
                    "api_key": "unused",
                },
            }
        ],
        "general_settings": {"master_key": "sk-bench"},
        "litellm_settings": {"telemetry": False, "drop_params": True},
    }
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    port = free_port()
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR"}
    args = [str(LITELLM), "--config", str(folder / "config.yaml")]
    args += ["--host", "127.0.0.1", "--port", str(port), "--num_workers", "1"]
    # LiteLLM imports for a long while (tens of seconds on a busy machine)
    url = f"http://127.0.0.1:{port}/v1"
    with _process(args, f"http://127.0.0.1:{port}/health/liveliness", env, timeout=300) as proc:
        PIDS[url] = proc.pid
        yield url


def interleaved(
    arms: dict[str, Callable[[], float]], rounds: int, per_round: int, warmup: int = 20
) -> dict[str, list[float]]:
    """Per arm, the median seconds of ``per_round`` calls in each round; arms run in a new
    shuffled order every round so load on the machine hits them alike."""
    for arm in arms.values():
        for _ in range(warmup):
            arm()
    medians: dict[str, list[float]] = {name: [] for name in arms}
    rng = random.Random(14)
    for _ in range(rounds):
        order = list(arms)
        rng.shuffle(order)
        for name in order:
            medians[name].append(statistics.median(arms[name]() for _ in range(per_round)))
    return medians


def spread(values: list[float], scale: float = 1000) -> str:
    """min / median / max, in ms by default."""
    ordered = sorted(values)
    return (
        f"{ordered[0] * scale:7.2f} / {statistics.median(ordered) * scale:7.2f} / "
        f"{ordered[-1] * scale:7.2f}"
    )


def version_of(text: str) -> str:
    found = re.search(r"\d+\.\d+(\.\d+)?", text)
    return found.group(0) if found else "?"
