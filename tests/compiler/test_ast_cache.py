"""The AST cache (loomc/syntax/ast_cache.py) can only save time: a hit is the very AST the parser
builds, and a damaged, foreign or unreadable entry gives exactly what no cache gives."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from loomc import cache as cache_module
from loomc.syntax import ast_cache
from loomc.syntax.parser import parse_file, parse_text

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted((ROOT / "pipelines").glob("*.loom"))
FUNCTION_SCOPED = [HealthCheck.function_scoped_fixture]
Damage = Callable[[Path, st.DataObject], None]


# --- valid sources, generated ---------------------------------------------------------------

KEYWORDS = {
    "pipeline", "instruction", "tiers", "kind", "input_tokens", "budget", "step", "sees",
    "after", "when", "task", "max_tokens", "timeout", "retries", "require", "answer", "or",
    "and", "not", "in", "matches", "true", "false",
}  # fmt: skip
names = st.from_regex(r"[a-z_][a-z0-9_\-]{0,6}", fullmatch=True).filter(lambda n: n not in KEYWORDS)
digits = st.integers(0, 10**6).map(str)
fraction = st.integers(0, 999).map(lambda n: f".{n}")
quantities = st.one_of(
    digits,
    st.builds(lambda d, f: d + f, digits, fraction),
    st.builds(lambda d, u: f"{d} {u}", digits, st.sampled_from(["calls", "token", "credits"])),
    st.builds(lambda d, u: f"{d}{u}", digits, st.sampled_from(["ms", "s", "min"])),
    st.builds(lambda d, f: f"${d}{f}", digits, fraction),
    st.just("1_000 tokens"),
)
plain_text = st.text(
    st.characters(blacklist_characters='"\\\n\r', blacklist_categories=["Cs"]), max_size=20
)
strings = st.one_of(
    plain_text.map(lambda t: f'"{t}"'),
    st.builds(lambda a, b: f'"{a}\\n{b}\\"\\\\"', plain_text, plain_text),
    st.builds(lambda a, b: f'"""\n    {a}\n      {b}\n  """', plain_text, plain_text),
)
atoms = st.one_of(
    st.lists(names, min_size=1, max_size=3).map(".".join),
    digits,
    st.builds(lambda d, f: d + f, digits, fraction),
    strings,
    st.sampled_from(["true", "false"]),
)
comparisons = st.one_of(
    atoms,
    st.builds(lambda a, op, b: f"{a} {op} {b}", atoms, st.sampled_from(["==", "<=", "!="]), atoms),
    st.builds(lambda a, b: f"{a} in {b}", atoms, atoms),
    st.builds(lambda a, s: f"{a} matches {s}", atoms, strings),
)
expressions = st.recursive(
    comparisons,
    lambda inner: st.one_of(
        inner.map(lambda e: f"not {e}"),
        inner.map(lambda e: f"({e})"),
        st.builds(lambda a, op, b: f"{a} {op} {b}", inner, st.sampled_from(["and", "or"]), inner),
    ),
    max_leaves=6,
)


@st.composite
def steps(draw: st.DrawFn) -> str:
    name, role, worker = draw(names), draw(names), draw(names)
    clauses = []
    if draw(st.booleans()):
        seen = draw(st.lists(names, min_size=1, max_size=3))
        clauses.append("sees " + ", ".join(s + draw(st.sampled_from(["", "?"])) for s in seen))
    if draw(st.booleans()):
        clauses.append("after " + ", ".join(draw(st.lists(names, min_size=1, max_size=2))))
    if draw(st.booleans()):
        clauses.append("when " + draw(expressions))
    settings_ = draw(
        st.lists(
            st.one_of(
                strings.map(lambda s: f"task {s}"),
                quantities.map(lambda q: f"max_tokens {q}"),
                quantities.map(lambda q: f"timeout {q}"),
                quantities.map(lambda q: f"retries {q}"),
            ),
            max_size=5,  # repeats are kept as the step's duplicates
        )
    )
    body = " {\n    " + "\n    ".join(settings_) + "\n  }" if draw(st.booleans()) else ""
    return f"  step {name} : {role}({worker}) {' '.join(clauses)}{body}"


@st.composite
def sources(draw: st.DrawFn) -> str:
    out = []
    for _ in range(draw(st.integers(0, 2))):
        members = draw(
            st.lists(
                st.one_of(
                    strings.map(lambda s: f"  instruction {s}"),
                    st.lists(names, min_size=1, max_size=3).map(
                        lambda t: "  tiers " + ", ".join(t)
                    ),
                    names.map(lambda k: f"  kind {k}"),
                    quantities.map(lambda q: f"  input_tokens {q}"),
                    st.lists(st.tuples(names, quantities), max_size=3).map(
                        lambda ls: "  budget { " + "  ".join(f"{n} <= {q}" for n, q in ls) + " }"
                    ),
                    steps(),
                    st.lists(names, min_size=2, max_size=3).map(
                        lambda r: f"  require {r[0]}({', '.join(r[1:])})"
                    ),
                    st.lists(names, min_size=1, max_size=3).map(
                        lambda a: "  answer " + " | ".join(a)
                    ),
                    st.just("  # a comment"),
                ),
                max_size=7,
            )
        )
        out.append(f"pipeline {draw(names)} {{\n" + "\n".join(members) + "\n}")
    return "\n".join(out) + "\n"


@settings(max_examples=120, deadline=None, suppress_health_check=FUNCTION_SCOPED)
@given(text=sources())
def test_a_cached_ast_is_the_parsed_one(ast_cache_dir: Path, text: str) -> None:
    parsed, diags = parse_text(text, "gen.loom")
    assume(parsed is not None)  # a generated clash the grammar rejects (rare)
    assert diags == []
    first = parse_text(text, "gen.loom", cache=True)  # stores it (or finds it from an earlier run)
    hit = ast_cache.load(text, "gen.loom")
    assert hit is not None
    assert first == (parsed, []) and hit == parsed
    assert repr(hit) == repr(parsed)  # Decimal exponents, int vs float, bool: all kept
    moved = ast_cache.load(text, "elsewhere/other.loom")  # spans name the path it is read as
    assert moved == parse_text(text, "elsewhere/other.loom")[0]


def test_the_projects_files_come_back_from_the_cache(ast_cache_dir: Path) -> None:
    for path in SOURCES:
        parsed = parse_file(path, cache=False)
        assert parse_file(path) == parsed  # the first read stores
        hit = ast_cache.load(path.read_text(encoding="utf-8"), str(path))
        assert hit is not None and (hit, []) == parsed
    assert len(sorted(ast_cache_dir.glob("*.json"))) == len(SOURCES)


@settings(max_examples=150, deadline=None, suppress_health_check=FUNCTION_SCOPED)
@given(data=st.data())
def test_a_damaged_entry_gives_what_no_cache_gives(
    ast_cache_dir: Path, damage: Damage, data: st.DataObject
) -> None:
    path = data.draw(st.sampled_from(SOURCES))
    text = path.read_text(encoding="utf-8")
    parse_text(text, str(path), cache=True)
    damage(ast_cache_dir / f"{ast_cache.key(text)}.json", data)
    assert ast_cache.load(text, str(path)) is None
    assert parse_text(text, str(path), cache=True) == parse_text(text, str(path))
    assert ast_cache.load(text, str(path)) is not None  # the entry was replaced


def test_an_entry_for_another_text_or_format_is_a_miss(ast_cache_dir: Path) -> None:
    a, b = (p.read_text(encoding="utf-8") for p in SOURCES[:2])
    parse_text(a, "a.loom", cache=True)
    # the entry of `a` renamed to `b`'s key: its header names the text it was written for
    (ast_cache_dir / f"{ast_cache.key(a)}.json").rename(ast_cache_dir / f"{ast_cache.key(b)}.json")
    assert ast_cache.load(b, "b.loom") is None
    parse_text(a, "a.loom", cache=True)
    entry = ast_cache_dir / f"{ast_cache.key(a)}.json"
    entry.write_bytes(entry.read_bytes().replace(b"loomc-ast-1 ", b"loomc-ast-0 ", 1))
    assert ast_cache.load(a, "a.loom") is None


def test_syntax_errors_are_not_stored_and_read_the_same_every_time(ast_cache_dir: Path) -> None:
    bad = "pipeline p {\n  step a : writer(w) sees\n}\n"
    once = parse_text(bad, "bad.loom", cache=True)
    assert once[0] is None and [d.code for d in once[1]] == ["LOOM101"]
    assert parse_text(bad, "bad.loom", cache=True) == once == parse_text(bad, "bad.loom")
    deep = "pipeline p {\n  step a : w(w) when " + "(" * 70 + "x" + ")" * 70 + "\n}\n"
    assert [d.code for d in parse_text(deep, "deep.loom", cache=True)[1]] == ["LOOM107"]
    assert sorted(ast_cache_dir.glob("*.json")) == []


def test_no_usable_folder_still_parses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = SOURCES[0].read_text(encoding="utf-8")
    expected = parse_text(text, "x.loom")
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("LOOMC_CACHE_DIR", str(blocker / "cache"))  # cannot be created
    assert parse_text(text, "x.loom", cache=True) == expected
    shared = tmp_path / "shared"
    (shared / "ast").mkdir(parents=True)
    (shared / "ast").chmod(0o777)  # others may write there: never read nor written
    monkeypatch.setenv("LOOMC_CACHE_DIR", str(shared))
    assert parse_text(text, "x.loom", cache=True) == expected
    assert sorted((shared / "ast").glob("*.json")) == []


def test_loomc_no_cache_turns_it_off(ast_cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOMC_NO_CACHE", "1")
    assert parse_file(SOURCES[0]) == parse_file(SOURCES[0], cache=False)
    assert sorted(ast_cache_dir.glob("*.json")) == []
    monkeypatch.setenv("LOOMC_NO_CACHE", "0")  # "0" means on
    parse_file(SOURCES[0])
    assert len(sorted(ast_cache_dir.glob("*.json"))) == 1


def test_a_full_folder_keeps_the_newest_half(tmp_path: Path) -> None:
    for i in range(10):
        entry = tmp_path / f"{i}.json"
        entry.write_text("{}")
        os.utime(entry, (1000 + i, 1000 + i))
    cache_module.prune(tmp_path, limit=8)
    assert sorted(p.name for p in tmp_path.glob("*.json")) == [f"{i}.json" for i in range(5, 10)]
    cache_module.prune(tmp_path, limit=8)  # under the limit: nothing goes
    assert len(list(tmp_path.glob("*.json"))) == 5


def test_a_warm_check_reads_neither_grammar_nor_yaml_and_says_the_same(tmp_path: Path) -> None:
    """Byte-identical output with the caches cold, warm and off; neither lark nor yaml even
    imported when warm. A damaged file in the project is reported the same every time."""
    project = tmp_path / "project"
    (project / "pipelines").mkdir(parents=True)
    for path in SOURCES:
        (project / "pipelines" / path.name).write_text(path.read_text(encoding="utf-8"))
    (project / "pipelines" / "broken.loom").write_text('pipeline p {\n  step a : w(w) { task "')
    shutil.copytree(ROOT / "policies", project / "policies")
    probe = (
        "import sys, loomc.cli.main as m\n"
        "code = m.main(['check', sys.argv[1]])\n"
        "print(sorted(n for n in ('lark', 'yaml') if n in sys.modules), code)\n"
    )
    env = {**os.environ, "LOOMC_CACHE_DIR": str(tmp_path / "cache"), "NO_COLOR": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env.pop("LOOMC_NO_CACHE", None)

    def check(**extra: str) -> tuple[str, str]:
        done = subprocess.run(
            [sys.executable, "-P", "-c", probe, str(project)],
            env={**env, **extra},
            capture_output=True,
            text=True,
            check=False,
        )
        return done.stdout, done.stderr

    cold, warm, off = check(), check(), check(LOOMC_NO_CACHE="1")
    assert "LOOM102" in cold[1]  # the broken file's diagnostic, from the parser each time
    assert cold[1] == warm[1] == off[1]
    body = [out.rsplit("\n", 2)[0] for out, _ in (cold, warm, off)]
    assert body[0] == body[1] == body[2] and "checked" in body[0]
    assert cold[0].endswith("['lark', 'yaml'] 1\n") and off[0].endswith("['lark', 'yaml'] 1\n")
    assert warm[0].endswith("['lark'] 1\n")  # the broken file: never cached, parsed each time
    assert len(list((tmp_path / "cache" / "ast").glob("*.json"))) == len(SOURCES)
    (project / "pipelines" / "broken.loom").unlink()
    assert check()[0].endswith("[] 0\n")


def test_a_file_holding_a_key_is_not_copied_into_the_cache(ast_cache_dir: Path) -> None:
    text = 'pipeline p {\n  step a : w(w) { task "use sk-abcdefghijklmnopqrstuvwx" }\n}\n'
    module, diags = parse_text(text, "k.loom", cache=True)
    assert module is not None and diags == []
    assert parse_text(text, "k.loom", cache=True) == (module, [])
    assert sorted(ast_cache_dir.glob("*.json")) == []


def test_an_oversized_or_endless_entry_is_a_miss(ast_cache_dir: Path) -> None:
    text = SOURCES[0].read_text(encoding="utf-8")
    parse_text(text, "a.loom", cache=True)
    entry = ast_cache_dir / f"{ast_cache.key(text)}.json"
    header = entry.read_bytes().partition(b"\n")[0]
    entry.write_bytes(header + b"\n" + b" " * cache_module.MAX_ENTRY_BYTES)
    assert ast_cache.load(text, "a.loom") is None
    entry.unlink()
    entry.symlink_to("/dev/zero")  # read as far as the limit, then a miss
    assert ast_cache.load(text, "a.loom") is None
    assert parse_text(text, "a.loom", cache=True) == parse_text(text, "a.loom")


def test_no_home_folder_means_no_cache_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    """A container's user may have neither $HOME nor a passwd entry: Path.home() raises."""

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    for name in ("LOOMC_CACHE_DIR", "XDG_CACHE_HOME", "LOOMC_NO_CACHE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    assert cache_module.cache_dir() is None
    assert parse_file(SOURCES[0]) == parse_file(SOURCES[0], cache=False)
