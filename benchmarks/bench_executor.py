"""The executor's own cost per step over real HTTP, beside plain httpx and LiteLLM's proxy.

    python benchmarks/bench_executor.py [--repeats 7] [--n 60] [--no-litellm]
    python benchmarks/bench_executor.py --baseline OLD_CHECKOUT [--rounds 6]   # before / after

The upstream is a zero-latency OpenAI-wire server (streaming and not) in its own process
(uvicorn on 127.0.0.1), so its CPU never shares this interpreter's time slices. Every client
is built and warmed once, outside the timed region: the plain httpx client, loomc's provider
pool (its adapter keeps one httpx client) and the client that talks to LiteLLM. One sample
times ``--n`` back-to-back units of one arm; a repeat takes one sample of every arm in a
freshly shuffled order, so the ratios of a repeat compare arms measured moments apart and hold
on a busy machine. Each figure is reported as min / median / max over the repeats.

Arms (one unit each):
  httpx-stream-1 / -4   1 or 4 sequential streamed requests, read to the end of the body
  httpx-whole-1         1 non-streamed request
  lean-*                the same plain calls through loomc's own http:// transport
                        (loomc.providers.transport): loomc's run over the same transport
  loomc-stream-1 / -4   a 1-step / 4-step chain run by ``execute`` (streaming, the default)
  loomc-whole-1         a 1-step run, not streamed
  instant-stream-1 / -4 the same runs on a provider in this process that answers at once:
                        the executor's own CPU, no HTTP
  litellm-stream-1 / -whole-1   1 plain httpx request to LiteLLM's proxy, which forwards it to
                        the same upstream (``litellm_settings`` as in the repository's tests)

Every loomc run is given the keyword risk profiler (``--profiler auto`` leaves it to the
policy default, the semantic profiler where installed: ~2 ms of CPU per profile, issue #17's
figure, not the executor's). The prompt is the same in every unit, as a client retrying one
question would send it, so the executor's profile cache answers it after the first run.

``--baseline OLD_CHECKOUT`` measures before and after in one run: child processes, each
importing loomc from one tree (the old checkout, or this one) and timing every arm against the
same upstream, alternate in a fresh shuffled order each round (``--rounds``); each figure is
the median over the rounds of each tree's own ratios (each child is its own httpx baseline).
LiteLLM is left out of that mode.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ANSWER = ["The capital", " of France", " is Paris."]
USAGE = {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}
MASTER_KEY = "sk-loomc-bench-0d4c1e"

# --------------------------------------------------------------------------- the upstream


def _chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
    body = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "bench",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


STREAM = [
    _chunk({"role": "assistant", "content": ""}),
    *(_chunk({"content": part}) for part in ANSWER),
    _chunk({}, "stop"),
    b"data: "
    + json.dumps(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "bench",
            "choices": [],
            "usage": USAGE,
        },
        separators=(",", ":"),
    ).encode()
    + b"\n\n",
    b"data: [DONE]\n\n",
]
WHOLE = json.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 1,
        "model": "bench",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "".join(ANSWER)},
                "finish_reason": "stop",
            }
        ],
        "usage": USAGE,
    }
).encode()


async def upstream(scope: Any, receive: Any, send: Any) -> None:
    """``/chat/completions`` on the OpenAI wire with no latency: SSE ending in ``[DONE]``, or
    one JSON body; each SSE event is its own write, as real servers flush."""
    if scope["type"] != "http":
        return
    raw = b""
    while True:
        message = await receive()
        raw += message.get("body", b"")
        if not message.get("more_body"):
            break
    stream = bool(json.loads(raw or b"{}").get("stream"))
    ctype = b"text/event-stream" if stream else b"application/json"
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-type", ctype)]}
    )
    if not stream:
        await send({"type": "http.response.body", "body": WHOLE})
        return
    for frame in STREAM:
        await send({"type": "http.response.body", "body": frame, "more_body": True})
    await send({"type": "http.response.body", "body": b""})


def serve_upstream() -> None:
    """The subprocess: serve ``upstream`` on a free port and print the port once listening."""
    import asyncio

    import uvicorn

    config = uvicorn.Config(
        upstream, host="127.0.0.1", port=0, log_level="critical", lifespan="off", access_log=False
    )
    server = uvicorn.Server(config)

    async def main() -> None:
        task = asyncio.create_task(server.serve())
        while not server.started:  # noqa: ASYNC110 (uvicorn offers no event to wait on)
            await asyncio.sleep(0.01)
        print(server.servers[0].sockets[0].getsockname()[1], flush=True)
        await task

    asyncio.run(main())


# --------------------------------------------------------------------------- processes


def start_upstream() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, __file__, "--upstream"], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    port = proc.stdout.readline().strip()
    if not port:
        raise SystemExit("upstream server did not start")
    return proc, f"http://127.0.0.1:{port}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def litellm_binary() -> str | None:
    for candidate in (
        os.environ.get("LOOMC_LITELLM"),
        str(ROOT / ".venv-litellm/bin/litellm"),
        "/work/main/.venv-litellm/bin/litellm",
        shutil.which("litellm"),
    ):
        if candidate and Path(candidate).exists():
            return candidate
    return None


def start_litellm(upstream_url: str) -> tuple[subprocess.Popen[bytes], str] | None:
    """LiteLLM's proxy forwarding model ``bench`` to the upstream; None when not installed."""
    import httpx

    binary = litellm_binary()
    if binary is None:
        print("LiteLLM proxy not installed (scripts/setup --all): its arms are left out")
        return None
    workdir = Path(tempfile.mkdtemp(prefix="bench-litellm-"))
    (workdir / "config.yaml").write_text(
        "model_list:\n"
        "  - model_name: bench\n"
        "    litellm_params:\n"
        "      model: openai/bench\n"
        f"      api_base: {upstream_url}/v1\n"
        "      api_key: fake\n"
        "general_settings:\n"
        f"  master_key: {MASTER_KEY}\n"
        "litellm_settings:\n"
        "  num_retries: 0\n",
        encoding="utf-8",
    )
    port = _free_port()
    env = {
        **os.environ,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "NO_PROXY": "*",
        "LITELLM_LOG": "ERROR",
    }
    log = (workdir / "server.log").open("wb")
    proc = subprocess.Popen(
        [binary, "--config", "config.yaml", "--host", "127.0.0.1", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=workdir,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            if httpx.get(f"{base}/health/liveliness", timeout=1).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    stop(proc)
    tail = (workdir / "server.log").read_text(errors="replace")[-1500:]
    print(f"LiteLLM did not start; its arms are left out. Log tail:\n{tail}")
    return None


def stop(proc: subprocess.Popen[Any]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


# --------------------------------------------------------------------------- the arms


def chain(steps: int) -> Any:
    """A ``steps``-long chain (each step sees the previous one) on provider ``up``."""
    from decimal import Decimal

    from loomc.ir.model import Pipeline, StepGraph, StepNode
    from loomc.units import Budget

    nodes = {}
    prev: tuple[str, ...] = ()
    for i in range(steps):
        sid = f"s{i}"
        nodes[sid] = StepNode(
            id=sid,
            role="writer",
            worker="w",
            model="up/bench",
            provider="up",
            provider_type="openai-compatible",
            group="g",
            task="Answer briefly.",
            max_tokens=50,
            timeout_ms=5000,
            retries=0,
            credits=Decimal(1),
            p95_ms=None,
            pricing=None,
            sees=prev,
        )
        prev = (sid,)
    return Pipeline(
        name=f"chain{steps}",
        tier=None,
        policy="bench",
        instruction="",
        graph=StepGraph(nodes),
        answer=(f"s{steps - 1}",),
        budget=Budget(calls=steps),
        pipeline_budget=Budget(),
        tier_budget=Budget(),
    )


Arm = Callable[[], Awaitable[None]]


class Instant:
    """A provider that answers at once, in this process: what is left is the executor's cost."""

    name = "up"

    async def complete(self, request: Any, on_event: Any = None) -> Any:
        from loomc.providers.base import Completion, StreamEvent, TokenUsage

        if on_event is not None and request.stream:
            for part in ANSWER:
                await on_event(StreamEvent(kind="token", text=part))
        return Completion("".join(ANSWER), TokenUsage(12, 7), finish_reason="stop")

    async def aclose(self) -> None:
        pass


def make_arms(
    upstream_url: str,
    litellm_url: str | None,
    pool: Any,
    plain: Any,
    gw: Any,
    profiler: Any,
    lean: Any = None,
) -> dict[str, Arm]:
    from loomc.exec.executor import execute
    from loomc.providers.registry import ProviderPool

    def body(stream: bool) -> dict[str, Any]:
        return {
            "model": "bench",
            "stream": stream,
            "messages": [{"role": "user", "content": "What is the capital of France?"}],
        }

    async def streamed(client: Any, n: int) -> None:
        for _ in range(n):
            async with client.stream("POST", "chat/completions", json=body(True)) as response:
                async for _line in response.aiter_lines():
                    pass
                assert response.status_code == 200

    async def whole(client: Any) -> None:
        response = await client.post("chat/completions", json=body(False))
        assert response.status_code == 200 and response.json()["choices"]

    pipelines = {steps: chain(steps) for steps in (1, 4)}
    instant = ProviderPool({})
    instant.put("up", Instant())

    def run(steps: int, stream: bool, providers: Any = pool) -> Arm:
        async def go() -> None:
            result = await execute(
                pipelines[steps],
                "What is the capital of France?",
                pool=providers,
                stream=stream,
                profiler=profiler,
            )
            assert result.calls == steps and result.answer, result.error

        return go

    arms: dict[str, Arm] = {
        "httpx-stream-1": lambda: streamed(plain, 1),
        "httpx-stream-4": lambda: streamed(plain, 4),
        "httpx-whole-1": lambda: whole(plain),
        "loomc-stream-1": run(1, True),
        "loomc-stream-4": run(4, True),
        "loomc-whole-1": run(1, False),
        # the executor alone: a provider in this process that answers at once (no HTTP)
        "instant-stream-1": run(1, True, instant),
        "instant-stream-4": run(4, True, instant),
    }
    if gw is not None:
        arms["litellm-stream-1"] = lambda: streamed(gw, 1)
        arms["litellm-whole-1"] = lambda: whole(gw)
    if lean is not None:  # the same plain calls on loomc's own transport (when the tree has it)
        arms["lean-stream-1"] = lambda: streamed(lean, 1)
        arms["lean-stream-4"] = lambda: streamed(lean, 4)
        arms["lean-whole-1"] = lambda: whole(lean)
    return arms


CPU: dict[str, list[float]] = {}  # this process's CPU seconds per unit, per arm


async def sample(arm: Arm, n: int, name: str = "") -> float:
    """Wall seconds per unit over ``n`` back-to-back units (CPU seconds go to ``CPU``)."""
    gc.collect()
    cpu = time.process_time()
    start = time.perf_counter()
    for _ in range(n):
        await arm()
    wall = (time.perf_counter() - start) / n
    if name:
        CPU.setdefault(name, []).append((time.process_time() - cpu) / n)
    return wall


def make_profiler(kind: str) -> Any:
    """The keyword profiler (``keywords``), or None: the policy default (``auto``)."""
    if kind == "auto":
        return None
    from loomc.policy.models import RiskSettings
    from loomc.risk.factory import make_keywords

    return make_keywords(RiskSettings())


async def measure(
    upstream_url: str,
    litellm_url: str | None,
    repeats: int,
    n: int,
    seed: int,
    profiler: str = "keywords",
) -> list[dict[str, float]]:
    import httpx

    from loomc.policy.models import ProviderConfig
    from loomc.providers.registry import ProviderPool

    rng = random.Random(seed)
    cfg = {"up": ProviderConfig(type="openai-compatible", base_url=f"{upstream_url}/v1")}
    plain = httpx.AsyncClient(base_url=f"{upstream_url}/v1/", timeout=30)
    gw = None
    if litellm_url is not None:
        gw = httpx.AsyncClient(
            base_url=f"{litellm_url}/v1/",
            timeout=60,
            headers={"Authorization": f"Bearer {MASTER_KEY}"},
        )
    lean = None
    try:  # loomc's transport for plain http (loomc.providers.transport), where the tree has it
        from loomc.providers.transport import PlainHTTPTransport

        lean = httpx.AsyncClient(
            base_url=f"{upstream_url}/v1/", timeout=30, transport=PlainHTTPTransport()
        )
    except ImportError:
        pass
    async with ProviderPool(cfg) as pool, plain:
        arms = make_arms(upstream_url, litellm_url, pool, plain, gw, make_profiler(profiler), lean)
        for arm in arms.values():  # warm: connections open, code paths imported
            await sample(arm, 5)
        rows: list[dict[str, float]] = []
        for _ in range(repeats):
            order = list(arms)
            rng.shuffle(order)
            row: dict[str, float] = {}
            for name in order:
                units = max(5, n // 4) if name.startswith("litellm") else n
                row[name] = await sample(arms[name], units, name)
            rows.append(row)
        if gw is not None:
            await gw.aclose()
        if lean is not None:
            await lean.aclose()
    return rows


# --------------------------------------------------------------------------- the report


def figures(
    rows: list[dict[str, float]], cpu_of: dict[str, list[float]] | None = None
) -> list[tuple[str, list[float], str]]:
    """(name, per-repeat values, unit) for each reported figure (``cpu_of``: the CPU seconds
    per unit of each arm, one per repeat; this process's ``CPU`` when not given)."""
    cpu_of = CPU if cpu_of is None else cpu_of
    ms = 1000.0
    out: list[tuple[str, list[float], str]] = [
        (
            "streamed 4-step run / 4 streamed plain httpx calls",
            [r["loomc-stream-4"] / r["httpx-stream-4"] for r in rows],
            "x",
        ),
        (
            "streamed 4-step: loomc overhead per step",
            [(r["loomc-stream-4"] - r["httpx-stream-4"]) / 4 * ms for r in rows],
            "ms",
        ),
        (
            "1-step run / 1 plain httpx call (streamed)",
            [r["loomc-stream-1"] / r["httpx-stream-1"] for r in rows],
            "x",
        ),
        (
            "1-step run / 1 plain httpx call (not streamed)",
            [r["loomc-whole-1"] / r["httpx-whole-1"] for r in rows],
            "x",
        ),
        (
            "1-step: loomc overhead per step (not streamed)",
            [(r["loomc-whole-1"] - r["httpx-whole-1"]) * ms for r in rows],
            "ms",
        ),
    ]
    # The same ratios in this process's CPU time (the upstream's excluded): steadier than wall
    # time on a loaded machine, and what loomc's own code costs.
    cpu = [{name: cpu_of[name][i] for name in cpu_of} for i in range(len(rows))]
    out += [
        (
            "CPU: streamed 4-step run / 4 streamed plain httpx calls",
            [c["loomc-stream-4"] / c["httpx-stream-4"] for c in cpu],
            "x",
        ),
        (
            "CPU: 1-step run / 1 plain httpx call (not streamed)",
            [c["loomc-whole-1"] / c["httpx-whole-1"] for c in cpu],
            "x",
        ),
    ]
    if rows and "lean-stream-4" in rows[0]:  # loomc's run over the same transport's calls
        lean = [
            ("streamed 4-step run / 4 streamed calls on loomc's transport", "loomc-stream-4",
             "lean-stream-4"),
            ("1-step run / 1 call on loomc's transport (streamed)", "loomc-stream-1",
             "lean-stream-1"),
            ("1-step run / 1 call on loomc's transport (not streamed)", "loomc-whole-1",
             "lean-whole-1"),
            ("plain httpx call on loomc's transport / on httpx's (not streamed)", "lean-whole-1",
             "httpx-whole-1"),
        ]  # fmt: skip
        out += [(label, [r[a] / r[b] for r in rows], "x") for label, a, b in lean]
    out += [
        ("executor CPU per run, instant provider, 1 step",
         [c["instant-stream-1"] * ms for c in cpu], "ms"),
        ("executor CPU per run, instant provider, 4-step chain",
         [c["instant-stream-4"] * ms for c in cpu], "ms"),
    ]  # fmt: skip
    if rows and "litellm-whole-1" in rows[0]:
        out += [
            (
                "loomc per-step overhead / LiteLLM per-call overhead (not streamed)",
                [
                    (r["loomc-whole-1"] - r["httpx-whole-1"])
                    / (r["litellm-whole-1"] - r["httpx-whole-1"])
                    for r in rows
                ],
                "x",
            ),
            (
                "loomc per-step overhead / LiteLLM per-call overhead (streamed)",
                [
                    (r["loomc-stream-1"] - r["httpx-stream-1"])
                    / (r["litellm-stream-1"] - r["httpx-stream-1"])
                    for r in rows
                ],
                "x",
            ),
            (
                "LiteLLM per-call overhead (not streamed)",
                [(r["litellm-whole-1"] - r["httpx-whole-1"]) * ms for r in rows],
                "ms",
            ),
        ]
    return out


def report(rows: list[dict[str, float]]) -> None:
    print(f"\nper unit, median over {len(rows)} repeats (ms); this process's CPU per unit:")
    for name in sorted(rows[0]):
        values = [r[name] * 1000 for r in rows]
        cpu = statistics.median(CPU[name]) * 1000
        print(
            f"  {name:18} {statistics.median(values):8.3f}  "
            f"(min {min(values):.3f}, max {max(values):.3f})  cpu {cpu:.3f}"
        )
    print(
        "\nfigure                                                          median     min     max"
    )
    for name, values, unit in figures(rows):
        print(
            f"  {name:62} {statistics.median(values):6.3f}{unit:2} "
            f"{min(values):6.3f}  {max(values):6.3f}"
        )


def child(tree: Path, upstream_url: str, args: argparse.Namespace, seed: int) -> dict[str, Any]:
    """One child process measuring every arm with loomc imported from ``tree``."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", upstream_url]
    cmd += ["--repeats", str(args.repeats)]
    cmd += ["--n", str(args.n), "--seed", str(seed), "--profiler", args.profiler]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(tree / "research")])}
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env, cwd=tree)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def before_after(upstream_url: str, baseline: Path, args: argparse.Namespace) -> None:
    """Children of the old tree and of this one, alternated in a shuffled order per round."""
    trees = {"before": baseline.resolve(), "after": ROOT}
    got: dict[str, list[dict[str, Any]]] = {label: [] for label in trees}
    rng = random.Random(args.seed)
    for round_ in range(args.rounds):
        order = list(trees)
        rng.shuffle(order)
        for label in order:
            got[label].append(child(trees[label], upstream_url, args, args.seed + round_))
    table: dict[str, dict[str, float]] = {}
    units: dict[str, str] = {}
    for label, children in got.items():
        rows = [row for c in children for row in c["rows"]]
        cpu = {name: [v for c in children for v in c["cpu"][name]] for name in children[0]["cpu"]}
        for name, values, unit in figures(rows, cpu):
            table.setdefault(name, {})[label] = statistics.median(values)
            units[name] = unit
    print(
        f"\nbefore = {trees['before']}, after = {trees['after']}; {args.rounds} rounds x "
        f"{args.repeats} repeats x {args.n} units; profiler: {args.profiler}; medians"
    )
    print(f"  {'figure':62} {'before':>9} {'after':>9}")
    for name, cells in table.items():
        print(
            f"  {name:62} {cells['before']:8.3f}{units[name]:1} {cells['after']:8.3f}{units[name]:1}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--n", type=int, default=60, help="units per sample (LiteLLM: n/4)")
    parser.add_argument("--no-litellm", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profiler", choices=("keywords", "auto"), default="keywords")
    parser.add_argument("--baseline", type=Path, metavar="OLD_CHECKOUT")
    parser.add_argument("--rounds", type=int, default=6, help="with --baseline: children per tree")
    parser.add_argument("--upstream", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child", metavar="UPSTREAM_URL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.upstream:
        return serve_upstream()
    import anyio

    if args.child:  # loomc comes from PYTHONPATH: the tree the parent chose
        rows = anyio.run(measure, args.child, None, args.repeats, args.n, args.seed, args.profiler)
        print(json.dumps({"rows": rows, "cpu": CPU}))
        return None
    sys.path.insert(0, str(ROOT))
    up, upstream_url = start_upstream()
    if args.baseline is not None:
        if args.repeats == 7:  # the default: fewer per child, the rounds repeat them
            args.repeats = 2
        try:
            before_after(upstream_url, args.baseline, args)
        finally:
            stop(up)
        return None
    gw = None
    try:
        gw = None if args.no_litellm else start_litellm(upstream_url)
        litellm_url = gw[1] if gw is not None else None
        rows = anyio.run(
            measure, upstream_url, litellm_url, args.repeats, args.n, args.seed, args.profiler
        )
    finally:
        if gw is not None:
            stop(gw[0])
        stop(up)
    report(rows)


if __name__ == "__main__":
    main()
