"""`loomc serve`'s CPU per request, phase by phase, in process (issue 14).

    python benchmarks/serve_phases.py [ROUNDS] [PER_ROUND] [--before TREE]

No sockets: the app from ``create_app`` is called as an ASGI callable with in-memory
``receive``/``send``, on the default policy's mock provider (no latency), with a bearer key and
a daily budget (auth, the ledger's reservation, the settlement and the stored run are on the
path), the store a SQLite file. What is timed is this process's CPU, which holds on a busy
machine where wall times do not. Arms, alternated in a new shuffled order every round (median
per round, then min / median / max over rounds):

- ``direct``: ``loomc.arun`` of the same pipeline x tier on the same provider pool;
- ``request``: one whole ``POST /v1/chat/completions`` through the app (JSON, and ``sse``:
  streamed with usage);
- the server's phases, each on its own: ``parse`` (body JSON + request model), ``admit``
  (model, ceilings, plan cache, reservation), ``record`` (the stored run built from the
  result and its events), ``commit`` (settlement + stored run in one transaction), ``reply``
  (the response JSON).

``request - direct`` is the server's own CPU per request without HTTP parsing and socket
writes (uvicorn's, measured by ``serve_overhead.py``). ``--before TREE`` runs the ``direct``,
``request`` and ``sse`` arms of another checkout too (a child process with it first on the
path), alternating rounds with this tree's.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import yaml

ROOT = Path(__file__).resolve().parents[1]
KEY = "bench-key-0123456789"
PROMPT = "Explain DNS briefly."
BODY = {"model": "general@lean", "messages": [{"role": "user", "content": PROMPT}]}


def project_dir() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="loomc-phases-"))
    policy = yaml.safe_load((ROOT / "policies" / "default.yaml").read_text())
    policy["serve"] = {
        "keys": [{"name": "b", "key": "env:LOOMC_BENCH_KEY", "per_day": {"calls": 10**9}}]
    }
    (folder / "policy.yaml").write_text(yaml.safe_dump(policy, sort_keys=False))
    return folder


async def call(app: Any, body: bytes) -> tuple[int, bytes]:
    """One POST through the ASGI app; (status, body)."""
    messages = [{"type": "http.request", "body": body, "more_body": False}]
    out: list[dict[str, Any]] = []
    gone = anyio.Event()

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop()
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        out.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body"):
            gone.set()

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": "/v1/chat/completions", "raw_path": b"/v1/chat/completions",
        "root_path": "", "query_string": b"", "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8000), "state": {},
        "headers": [
            (b"host", b"127.0.0.1"), (b"content-type", b"application/json"),
            (b"authorization", f"Bearer {KEY}".encode()),
            (b"content-length", str(len(body)).encode()),
        ],
    }  # fmt: skip
    await app(scope, receive, send)
    status = next(m["status"] for m in out if m["type"] == "http.response.start")
    return status, b"".join(m.get("body", b"") for m in out if m["type"] == "http.response.body")


async def lifespan(app: Any) -> Callable[[], Awaitable[None]]:
    """Start the app's lifespan in the background; returns the function that ends it."""
    send_in, receive_in = anyio.create_memory_object_stream[dict[str, Any]](10)
    started, stopped = anyio.Event(), anyio.Event()

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "lifespan.startup.complete":
            started.set()
        elif message["type"].startswith("lifespan.shutdown"):
            stopped.set()
        elif message["type"] == "lifespan.startup.failed":
            raise RuntimeError(message.get("message"))

    async def run() -> None:
        await app(
            {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, receive_in.receive, send
        )

    tg = anyio.create_task_group()
    await tg.__aenter__()
    tg.start_soon(run)
    await send_in.send({"type": "lifespan.startup"})
    await started.wait()

    async def stop() -> None:
        await send_in.send({"type": "lifespan.shutdown"})
        await stopped.wait()
        await tg.__aexit__(None, None, None)

    return stop


async def measure(rounds: int, per_round: int, phases: bool) -> dict[str, list[float]]:
    import loomc
    from loomc.serve import create_app
    from loomc.store import open_store

    folder = project_dir()
    os.environ["LOOMC_BENCH_KEY"] = KEY
    project = loomc.Project.load(ROOT, folder / "policy.yaml")
    app = create_app(project, open_store(folder / "store.db"))
    stop = await lifespan(app)
    svc = app.state.service
    body = json.dumps(BODY).encode()
    streamed = json.dumps(
        {**BODY, "stream": True, "stream_options": {"include_usage": True}}
    ).encode()

    async def request() -> None:
        status, _ = await call(app, body)
        assert status == 200, status

    async def sse() -> None:
        status, got = await call(app, streamed)
        assert status == 200 and got.endswith(b"data: [DONE]\n\n"), got[-200:]

    pipeline = project.compile("general", "lean")

    async def direct() -> None:
        # as a careful caller runs it: compiled and checked once, one profiler, its own pool
        await loomc.arun(
            PROMPT,
            project=project,
            pipeline=pipeline,
            providers=svc.pool,
            profiler=svc.profiler,
            stream=False,
        )

    arms: dict[str, Callable[[], Awaitable[float | None]]] = {
        "direct": direct,
        "request": request,
        "sse": sse,
    }
    if phases:
        from loomc.api.tracing import TraceRecorder, stored_run
        from loomc.serve.auth import Client
        from loomc.serve.chat import dumps, loads
        from loomc.serve.wire import completion_body, extension, parse_request

        client = Client(project.policy.serve.keys[0])
        parsed = parse_request(loads(body))
        memory = TraceRecorder()
        result = await loomc.arun(
            PROMPT, project=project, tier="lean", providers=svc.pool, sinks=[memory]
        )

        async def parse() -> None:
            parse_request(loads(body))

        async def admit() -> float:
            c = time.process_time()
            admitted = await svc.admit(parsed, client)
            spent = time.process_time() - c
            await svc.release(admitted)  # not timed: a request settles in `commit`
            return spent

        async def record() -> None:
            stored_run(result, memory.events, source="serve", started=0.0, key="b")

        run = stored_run(result, memory.events, source="serve", started=0.0, key="b")

        async def commit() -> None:
            await svc.ledger.settle_and_save(None, result.budget.used, run)

        async def reply() -> None:
            dumps(completion_body("chatcmpl-x", "general@lean", result, extension(result)))

        arms.update(parse=parse, admit=admit, record=record, commit=commit, reply=reply)
    for arm in arms.values():  # warm-up: caches, the plan cache, the store's pages
        for _ in range(20):
            await arm()
    cpu: dict[str, list[float]] = {name: [] for name in arms}
    rng = random.Random(14)
    for _ in range(rounds):
        order = list(arms)
        rng.shuffle(order)
        for name in order:
            samples = []
            for _ in range(per_round):
                c = time.process_time()
                timed = await arms[name]()  # an arm that times itself returns its CPU
                samples.append(time.process_time() - c if timed is None else timed)
            cpu[name].append(statistics.median(samples))
    await stop()
    return cpu


def spread(values: list[float]) -> str:
    ordered = sorted(values)
    return " / ".join(
        f"{v * 1e6:7.0f}" for v in (ordered[0], statistics.median(ordered), ordered[-1])
    )


def before_round(tree: Path, per_round: int) -> dict[str, list[float]]:
    """One round of the ``direct``, ``request`` and ``sse`` arms in a child process with
    ``tree`` first on the path."""
    path = os.pathsep.join([str(tree), str(tree / "research")])
    env = {**os.environ, "PYTHONPATH": path, "LOOMC_BENCH_KEY": KEY}
    child = [sys.executable, __file__, "1", str(per_round), "--child"]
    out = subprocess.run(child, env=env, capture_output=True, text=True, check=True, cwd=ROOT)
    got: dict[str, list[float]] = json.loads(out.stdout.strip().splitlines()[-1])
    return got


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    rounds = int(args[0]) if args else 10
    per_round = int(args[1]) if len(args) > 1 else 50
    if "--child" in sys.argv:  # the other tree's arms, printed as JSON for the parent
        print(json.dumps(anyio.run(measure, rounds, per_round, False)))
        return
    tree = Path(sys.argv[sys.argv.index("--before") + 1]) if "--before" in sys.argv else None
    # with --before, rounds alternate between this tree (in this process) and the other tree
    # (a child process per round), so load on the machine hits both alike
    cpu: dict[str, list[float]] = {}
    before: dict[str, list[float]] = {}
    for _ in range(rounds if tree is not None else 1):
        if tree is not None:
            for name, values in before_round(tree, per_round).items():
                before.setdefault(name, []).extend(values)
        got = anyio.run(measure, 1 if tree is not None else rounds, per_round, True)
        for name, values in got.items():
            cpu.setdefault(name, []).extend(values)
    print(f"{rounds} rounds x {per_round} calls per arm; CPU µs per call, min / median / max")
    for name, values in cpu.items():
        print(f"{name:16s} {spread(values)}")
    over = [r - d for r, d in zip(cpu["request"], cpu["direct"], strict=True)]
    over_sse = [r - d for r, d in zip(cpu["sse"], cpu["direct"], strict=True)]
    print(f"{'request - direct':16s} {spread(over)}   (the server's own CPU, JSON)")
    print(f"{'sse - direct':16s} {spread(over_sse)}   (streamed)")
    if before:
        for name in ("direct", "request", "sse"):
            print(f"{'before ' + name:16s} {spread(before[name])}")
        old = [r - d for r, d in zip(before["request"], before["direct"], strict=True)]
        old_sse = [r - d for r, d in zip(before["sse"], before["direct"], strict=True)]
        print(f"{'before req - dir':16s} {spread(old)}")
        print(f"{'before sse - dir':16s} {spread(old_sse)}")


if __name__ == "__main__":
    main()
