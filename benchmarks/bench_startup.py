"""Start-up and check cost, each as a ratio to a baseline measured in the same run.

    python benchmarks/bench_startup.py [--repeats 7] [--before TREE] [--json FILE]

Every figure is a fresh process (what a user waits for), timed by wall clock. Each repeat runs
every arm once, loomc and baselines alternated in a new shuffled order, so a machine that gets
busier or quieter during the run moves both sides of a ratio alike; the ratios are of medians.

- ``loomc --help`` / ``python -c pass``: the cost of reaching the command line.
- ``loomc check`` on this repository / ``ruff check --no-cache`` on a generated tree of Python
  files of the same size in bytes: a checker against a linter. Twice: with loomc's content
  caches warm (the AST of each `.loom` file, the data of each policy: every check after the
  first, in a cache folder of the benchmark's own), cold (a new empty cache folder for every
  run: the first check, or every file edited since the last) and after one edit (a copy of the
  project whose `code-review.loom` gets a new comment line before each run, the warm cache
  folder: the usual check while working). And each against ruff with its own cache warm too
  (``ruff check`` with a ``--cache-dir`` of the benchmark's).
- ``loomc run`` with the mock provider, cold (a new process; the parser tables cache warm, as
  after any first run): seconds, and its ratio to ``python -c pass``. Three projects: this
  repository with its default policy, this repository with ``policies/demo.yaml`` on the demo's
  high-risk prompt (two calls), and the starter project ``loomc init`` writes (also with its
  policy pinned to ``risk.profiler: keywords``: no numpy, no semantic weights).
- ``loomc check`` on that starter project too, against ``ruff`` on a tree of its size.

Bytecode: an installed wheel has its modules compiled (pip does it at install), a checkout
run with ``PYTHONDONTWRITEBYTECODE`` set (as on the shared development machine) compiles every
loomc module from source in every process, ~100 ms of a ``loomc check``. So the children keep
bytecode in a temporary ``PYTHONPYCACHEPREFIX``, written by the warm-up run and read after, as
an installed loomc would; ``--source`` measures the checkout as it runs without bytecode.

``--breakdown`` / ``--run-breakdown``: CPU ms per stage of a cold ``loomc check`` of this
repository / a cold ``loomc run`` in a ``loomc init`` scaffold (what is left, phase by phase).

``--before TREE`` adds, for every loomc arm, the same command run with ``TREE`` (another
checkout, e.g. ``git archive BASE | tar -x -C /tmp/before``) first on ``PYTHONPATH`` instead of
this one, interleaved with the rest: before and after measured in one run, on the same projects.
- compile + check of generated chains of 1,000 to 10,000 steps, in this process: time per step
  should stay flat (linear growth).
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SIZES = (1_000, 2_000, 4_000, 8_000, 10_000)


BYTECODE: dict[str, str] = {}
"""Set by ``main``: where the children keep bytecode (``PYTHONPYCACHEPREFIX``), or empty."""


def _env(tree: Path = ROOT) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tree), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["NO_COLOR"] = "1"
    if BYTECODE:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.update(BYTECODE)
    return env


def _python_tree(folder: Path, size: int) -> int:
    """Clean Python files totalling about ``size`` bytes (13 files, like this project's)."""
    folder.mkdir(parents=True, exist_ok=True)
    per_file = size // 13
    written = 0
    for i in range(13):
        lines = ['"""A module."""', "", ""]
        n = 0
        while sum(len(x) + 1 for x in lines) < per_file:
            lines += [f"def f{n}(x: int) -> int:", f"    return x + {n}", "", ""]
            n += 1
        text = "\n".join(lines).rstrip() + "\n"
        (folder / f"m{i}.py").write_text(text, encoding="utf-8")
        written += len(text)
    return written


def _project_bytes(root: Path = ROOT) -> int:
    files = [*(root / "pipelines").glob("*.loom"), *(root / "policies").glob("*.y*ml")]
    return sum(p.stat().st_size for p in files)


HIGH = (
    "Customers are sometimes charged twice when they double-click Pay. Review the checkout handler."
)
"""The demo's high-risk prompt (``loomc demo``): two calls at tier balanced."""

Arm = tuple[list[str], Path, Path, str]
"""(command, working folder, the checkout first on PYTHONPATH, the cache: ``warm``, ``cold``
(a new empty folder each run) or the path of a file to edit before each run (warm folder))."""

EDITS = [0]
"""Edits made so far by the ``one file edited`` arm (each appends a new comment line)."""

CACHE: dict[str, str] = {}
"""Set by ``measure``: the folders the loomc arms cache in (``warm``) and under which each cold
run gets a new one (``cold``)."""


def _arms(
    tree: Path,
    scaffold: Path,
    scaffold_tree: Path,
    before: Path | None,
    ruff_cache: Path,
    copy: Path,
) -> dict[str, Arm]:
    py = sys.executable
    ruff = shutil.which("ruff") or str(Path(py).parent / "ruff")
    # -P: no working directory on sys.path (as for the installed `loomc` script); without it a
    # `python -m loomc` run in this repository imports this checkout whatever PYTHONPATH says,
    # and a `--before` arm would time the new code
    loomc = [py, "-P", "-m", "loomc"]
    ours: dict[str, tuple[list[str], Path]] = {
        "loomc --help": ([*loomc, "--help"], ROOT),
        "loomc check (this repo)": ([*loomc, "check", str(ROOT)], ROOT),
        "loomc check (this repo, cold cache)": ([*loomc, "check", str(ROOT)], ROOT),
        "loomc check (this repo, one file edited)": ([*loomc, "check", str(copy)], copy),
        "loomc check (init scaffold)": ([*loomc, "check"], scaffold),
        "loomc run (mock, cold)": ([*loomc, "run", "--no-stream", "Say hello."], ROOT),
        "loomc run (demo policy, cold)": (
            [
                *loomc,
                "run",
                "--policy",
                "policies/demo.yaml",
                *("--tier", "balanced", "--no-stream", HIGH),
            ],
            ROOT,
        ),
        "loomc run (init scaffold, cold)": ([*loomc, "run", "--no-stream", "Say hello."], scaffold),
        # the same with `risk.profiler: keywords`: the run without numpy and the semantic weights
        "loomc run (init scaffold, keywords, cold)": (
            [*loomc, "run", "--no-stream", "Say hello."],
            _keywords_copy(scaffold),
        ),
    }
    cached = ["--cache-dir", str(ruff_cache)]
    arms: dict[str, Arm] = {
        "python -c pass": ([py, "-c", "pass"], ROOT, ROOT, "warm"),
        "ruff check (same size)": (
            [ruff, "check", "--no-cache", "--quiet", str(tree)],
            ROOT,
            ROOT,
            "warm",
        ),
        "ruff check (same size, own cache)": (
            [ruff, "check", *cached, "--quiet", str(tree)],
            ROOT,
            ROOT,
            "warm",
        ),
        "ruff check (scaffold size)": (
            [ruff, "check", "--no-cache", "--quiet", str(scaffold_tree)],
            ROOT,
            ROOT,
            "warm",
        ),
    }
    edited = str(copy / "pipelines" / "code-review.loom")
    for name, (cmd, cwd) in ours.items():
        cache = "cold" if "cold cache" in name else edited if "edited" in name else "warm"
        arms[name] = (cmd, cwd, ROOT, cache)
        if before is not None and cache == "warm":  # the before tree has no content caches
            arms[f"{name} [before]"] = (cmd, cwd, before, "warm")
    return arms


def _keywords_copy(scaffold: Path) -> Path:
    """A copy of the ``loomc init`` scaffold whose policy pins ``risk.profiler: keywords``."""
    copy = scaffold.with_name(f"{scaffold.name}-keywords")
    if not copy.exists():
        shutil.copytree(scaffold, copy, ignore=shutil.ignore_patterns(".loomc"))
        for policy in (copy / "policies").glob("*.yaml"):
            text = policy.read_text(encoding="utf-8")
            policy.write_text(text.replace("profiler: auto", "profiler: keywords"), "utf-8")
    return copy


def _time(arm: Arm) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system, of the child alone) of one run."""
    cmd, cwd, checkout, cache = arm
    env = _env(checkout)
    if CACHE:
        env.pop("LOOMC_NO_CACHE", None)
        env["LOOMC_CACHE_DIR"] = (
            tempfile.mkdtemp(dir=CACHE["cold"]) if cache == "cold" else CACHE["warm"]
        )
    if cache not in ("warm", "cold"):  # a new comment line: the file's next version
        EDITS[0] += 1
        with open(cache, "a", encoding="utf-8") as f:
            f.write(f"# edit {EDITS[0]}\n")
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        cmd,
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=False,
    )
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed in {cwd}: {done.stderr.decode()[-500:]}")
    cpu = after.ru_utime - used.ru_utime + after.ru_stime - used.ru_stime
    return elapsed, cpu


def measure(
    repeats: int, before: Path | None = None, only: str | None = None
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall and CPU seconds per arm, ``repeats`` of each, the arms shuffled in every repeat
    (with ``only``, just the arms whose name contains it, and the baselines)."""
    with tempfile.TemporaryDirectory() as tmp:
        scaffold = Path(tmp) / "starter"
        subprocess.run(
            [sys.executable, "-m", "loomc", "init", str(scaffold)],
            env=_env(),
            stdout=subprocess.DEVNULL,
            check=True,
        )
        tree, scaffold_tree = Path(tmp) / "tree", Path(tmp) / "scaffold-tree"
        _python_tree(tree, _project_bytes())
        _python_tree(scaffold_tree, _project_bytes(scaffold))
        CACHE["warm"], CACHE["cold"] = tempfile.mkdtemp(dir=tmp), tempfile.mkdtemp(dir=tmp)
        copy = Path(tmp) / "copy"
        for folder in ("pipelines", "policies"):
            shutil.copytree(ROOT / folder, copy / folder)
        arms = _arms(tree, scaffold, scaffold_tree, before, Path(tmp) / "ruff-cache", copy)
        if only:
            arms = {k: v for k, v in arms.items() if only in k or not k.startswith("loomc")}
        for arm in arms.values():  # warm the OS cache, the parser tables and the caches once
            _time(arm)
        times: dict[str, list[float]] = {name: [] for name in arms}
        cpu: dict[str, list[float]] = {name: [] for name in arms}
        for _ in range(repeats):
            order = list(arms)
            random.shuffle(order)
            for name in order:
                wall, used = _time(arms[name])
                times[name].append(wall)
                cpu[name].append(used)
    return times, cpu


def _child_breakdown() -> None:
    """In a fresh process: CPU milliseconds of each stage of a cold ``loomc check`` of this
    repository, cumulative from the interpreter's start (printed as JSON for the parent)."""
    marks: list[tuple[str, float]] = [("interpreter", time.process_time())]

    def mark(name: str) -> None:
        marks.append((name, time.process_time()))

    import loomc.cli.main

    mark("loomc.cli.main")
    import loomc.policy.models

    mark("policy models (records, no pydantic)")
    import loomc.policy.load

    mark("import policy reader" + (" + yaml" if "yaml" in sys.modules else ""))
    import loomc.syntax.parser

    mark("import parser + AST" + (" + lark" if "lark" in sys.modules else ""))
    import loomc.checker.render
    import loomc.project.checking as checking

    mark("import IR, checker, project, render")
    loom, policies = checking.find_files(ROOT)
    modules, _ = checking.load_modules(loom)
    how = "lark" if "lark" in sys.modules else "AST cache"
    mark(f"parse {len(loom)} .loom files ({how})")
    sources = [checking.load_policy(p)[0] for p in policies]
    how = "yaml" if "yaml" in sys.modules else "policy cache"
    mark(f"read + validate {len(policies)} policies ({how})")
    diags = []
    for source in sources:
        assert source is not None
        diags += checking.check_policy(source)
        compiled, found = checking.compile_modules(modules, source, None)
        diags += found
        for pipeline in compiled:
            diags += checking.check_pipeline(pipeline)
    mark("compile + check every pipeline x tier")
    loomc.checker.render.render_text(diags)
    mark("render")
    if "pydantic" in sys.modules:  # a valid policy is read without it (loomc/policy/record.py)
        mark("(pydantic was imported)")
    start = marks[0][1]
    print(json.dumps([(name, (t - start) * 1e3) for name, t in marks]))


def _child_run_breakdown(project: Path) -> None:
    """In a fresh process: CPU milliseconds of each stage of a cold ``loomc run`` with the mock
    in ``project`` (a ``loomc init`` scaffold: its guard reads the risk, so the semantic
    profiler's static stage loads), cumulative from the interpreter's start."""
    marks: list[tuple[str, float]] = [("interpreter", time.process_time())]

    def mark(name: str) -> None:
        marks.append((name, time.process_time()))

    import loomc.cli.main

    mark("loomc.cli.main")
    import loomc.api.running
    import loomc.cli.live

    mark("import run path (api, exec, providers, trace)")
    import loomc

    loaded = loomc.Project.load(project, None)
    mark("load project (parse, policy, compile)")
    from loomc.api.profiling import policy_profiler

    policy_profiler(loaded.policy.risk).profile("Say hello.")
    mark("semantic profiler: load + first profile (numpy too, where imported)")
    result = loomc.run("Say hello.", project=loaded, stream=False)
    assert result.answer
    mark("the run itself (mock)")
    if "pydantic" in sys.modules:
        mark("(pydantic was imported)")
    if "numpy" in sys.modules:  # the profiler's plain-Python path avoids it (loomc.risk.pure)
        mark("(numpy was imported)")
    start = marks[0][1]
    print(json.dumps([(name, (t - start) * 1e3) for name, t in marks]))


def breakdown(repeats: int, run: bool = False, cold: bool = False) -> None:
    """Medians over fresh processes of :func:`_child_breakdown` (or, with ``run``, of
    :func:`_child_run_breakdown` in a ``loomc init`` scaffold), stage by stage; loomc's content
    caches warm (a folder of this run's, filled by the uncounted first process) or, with
    ``cold``, a new empty one for every process."""
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in _env().items() if k != "LOOMC_NO_CACHE"}
        env["LOOMC_CACHE_DIR"] = str(Path(tmp) / "cache")
        flag = ["--child-breakdown"]
        if run:
            subprocess.run(
                [sys.executable, "-P", "-m", "loomc", "init", tmp],
                env=_env(),
                stdout=subprocess.DEVNULL,
                check=True,
            )
            flag = ["--child-run-breakdown", tmp]
        for i in range(repeats + 1):  # the first run writes the bytecode and is not counted
            if cold:
                env["LOOMC_CACHE_DIR"] = tempfile.mkdtemp(dir=tmp)
            done = subprocess.run(
                [sys.executable, "-P", __file__, *flag],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            if i:
                runs.append(json.loads(done.stdout))
    what = "`loomc run` (mock, init scaffold)" if run else "`loomc check` of this repository"
    caches = "cold (empty)" if cold else "warm"
    print(f"cold {what}, content caches {caches}, CPU ms (median of {repeats} processes)")
    print(f"{'stage':44} {'stage':>7} {'cumulative':>11}")
    previous = 0.0
    for i, (name, _) in enumerate(runs[0]):
        cumulative = statistics.median(run[i][1] for run in runs)
        print(f"{name:44} {cumulative - previous:7.1f} {cumulative:11.1f}")
        previous = cumulative


def compile_growth() -> list[tuple[int, float]]:
    """CPU seconds to compile and check a chain of n steps (best of 3), per size."""
    from loomc.checker.rules import check_pipeline
    from loomc.ir.compile import compile_modules
    from loomc.policy.load import load_policy
    from loomc.syntax.parser import parse_text

    source, _ = load_policy(ROOT / "policies" / "default.yaml")
    assert source is not None
    out = []
    for n in SIZES:
        steps = ['  step s0 : writer(drafter) { task "t" max_tokens 10 }']
        steps += [
            f'  step s{i} : writer(drafter) sees s{i - 1} after s0 {{ task "t" max_tokens 10 }}'
            for i in range(1, n)
        ]
        text = "pipeline big {\n" + "\n".join(steps) + f"\n  answer s{n - 1}\n}}\n"
        module, _ = parse_text(text, "big.loom")
        assert module is not None
        best = float("inf")
        for _ in range(3):
            start = time.process_time()
            for p in compile_modules([module], source)[0]:
                check_pipeline(p)
            best = min(best, time.process_time() - start)
        out.append((n, best))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    parser.add_argument(
        "--before", type=Path, help="another checkout: each loomc arm again with its code"
    )
    parser.add_argument("--no-growth", action="store_true", help="skip the compile growth part")
    parser.add_argument(
        "--breakdown", action="store_true", help="only: where a cold `loomc check` spends CPU"
    )
    parser.add_argument(
        "--run-breakdown", action="store_true", help="only: where a cold `loomc run` spends CPU"
    )
    parser.add_argument(
        "--cold-cache", action="store_true", help="breakdowns: an empty cache folder per process"
    )
    parser.add_argument("--only", help="measure only the arms whose name contains this")
    parser.add_argument("--child-breakdown", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child-run-breakdown", type=Path, help=argparse.SUPPRESS)
    parser.add_argument(
        "--source", action="store_true", help="no bytecode: compile every module in every run"
    )
    args = parser.parse_args()
    child = args.child_breakdown or args.child_run_breakdown
    if not args.source and not child:
        cache = tempfile.mkdtemp(prefix="bench-startup-pyc-")
        BYTECODE["PYTHONPYCACHEPREFIX"] = cache
        atexit.register(shutil.rmtree, cache, True)
        print(f"bytecode kept in {cache} (as an installed wheel has it); --source: without")
    if args.child_breakdown:
        _child_breakdown()
        return
    if args.child_run_breakdown:
        _child_run_breakdown(args.child_run_breakdown)
        return
    if args.breakdown or args.run_breakdown:
        breakdown(args.repeats, run=args.run_breakdown, cold=args.cold_cache)
        return
    before = args.before.resolve() if args.before else None

    times, cpu = measure(args.repeats, before, args.only)
    med = {name: statistics.median(v) for name, v in times.items()}
    cpu_med = {name: statistics.median(v) for name, v in cpu.items()}
    print(
        f"{'arm':44} {'min ms':>9} {'median ms':>10} {'max ms':>9} {'CPU median':>11}"
        f"   ({args.repeats} repeats)"
    )
    for name, values in times.items():
        print(
            f"{name:44} {min(values) * 1e3:9.1f} {med[name] * 1e3:10.1f} {max(values) * 1e3:9.1f}"
            f" {cpu_med[name] * 1e3:11.1f}"
        )
    if before is not None:
        print("\nafter / before, same run (wall medians; CPU medians: steadier on a busy machine)")
        for name in times:
            if f"{name} [before]" in times:
                then = f"{name} [before]"
                print(
                    f"{name:44} wall {med[name] / med[then]:5.2f}"
                    f"   CPU {cpu_med[name] / cpu_med[then]:5.2f}"
                    f"   ({cpu_med[then] * 1e3:.0f} -> {cpu_med[name] * 1e3:.0f} ms CPU)"
                )
    ratios: dict[str, float] = {}
    seconds: dict[str, float] = {}
    ruff, ruff_cached = med["ruff check (same size)"], med["ruff check (same size, own cache)"]
    for tag in ("", " [before]") if before else ("",):
        pairs = {
            f"loomc --help / python -c pass{tag}": (f"loomc --help{tag}", med["python -c pass"]),
            f"loomc check, caches warm / ruff check --no-cache (this repo){tag}": (
                f"loomc check (this repo){tag}",
                ruff,
            ),
            f"loomc check, caches warm / ruff check, its cache warm{tag}": (
                f"loomc check (this repo){tag}",
                ruff_cached,
            ),
            f"loomc check / ruff check (init scaffold){tag}": (
                f"loomc check (init scaffold){tag}",
                med["ruff check (scaffold size)"],
            ),
        }
        for which in ("cold cache", "one file edited") if not tag else ():
            arm = f"loomc check (this repo, {which})"
            pairs[f"loomc check, {which} / ruff check --no-cache (this repo)"] = (arm, ruff)
            pairs[f"loomc check, {which} / ruff check, its cache warm"] = (arm, ruff_cached)
        for run in ("mock", "demo policy", "init scaffold", "init scaffold, keywords"):
            name = f"loomc run ({run}, cold){tag}"
            pairs[f"loomc run ({run}) / python -c pass{tag}"] = (name, med["python -c pass"])
            if name in med:
                seconds[f"{name}, seconds"] = med[name]
        for label, (arm, baseline) in pairs.items():
            if arm in med:  # not left out by --only
                ratios[label] = med[arm] / baseline
    print()
    for name, value in ratios.items():
        print(f"{name:70} {value:6.2f}x")
    for name, value in seconds.items():
        print(f"{name:50} {value:6.3f}")
    if args.no_growth:
        if args.json:
            args.json.write_text(
                json.dumps({"times_s": times, "cpu_s": cpu, "ratios": ratios}, indent=2),
                encoding="utf-8",
            )
        return

    growth = compile_growth()
    print("\ncompile + check of an n-step chain (CPU, best of 3)")
    base_t = growth[0][1]
    for n, t in growth:
        per_step = t / n * 1e6
        print(f"  {n:6,} steps {t * 1e3:8.1f} ms  {per_step:6.1f} us/step  x{t / base_t:5.1f} time")
    print(f"  growth 1,000 -> 10,000 steps: x{growth[-1][1] / base_t:.1f} (linear: x10)")

    if args.json:
        figures = {
            "times_s": times,
            "cpu_s": cpu,
            "ratios": ratios,
            "compile_growth": [{"steps": n, "cpu_s": t} for n, t in growth],
        }
        args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
