"""Start-up stays cheap: `loomc --help` imports no command module and no heavy package, `loomc
check` none of the runtime's, and the lazy command list says what each command's module says."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from loomc.cli.main import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("networkx", "pydantic", "lark", "anyio", "httpx", "rich", "yaml")


def _modules_after(argv: list[str]) -> list[str]:
    """``sys.modules`` of a fresh interpreter after ``loomc ARGV`` (output discarded)."""
    code = (
        "import contextlib, io, json, sys\n"
        "from loomc.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        "    try:\n"
        f"        main({argv!r})\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    modules: list[str] = json.loads(out.stdout)
    return modules


def test_help_imports_no_command_and_no_heavy_package() -> None:
    modules = _modules_after(["--help"])
    heavy = [m for m in modules if m.split(".")[0] in HEAVY]
    assert heavy == []
    ours = [m for m in modules if m.startswith("loomc")]
    assert ours == ["loomc", "loomc.cli", "loomc.cli.main"]
    assert "typing" not in modules  # `import loomc` does not need it either


def test_import_of_the_entry_point_is_light() -> None:
    code = "import sys, loomc.cli.main; print(sorted(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert not [m for m in HEAVY if f"'{m}'" in out.stdout]


def test_check_imports_nothing_of_the_runtime() -> None:
    modules = _modules_after(["check", str(ROOT)])
    assert "loomc.project.checking" in modules  # it did check
    assert [m for m in modules if m.split(".")[0] in ("networkx", "anyio", "httpx", "rich")] == []
    assert [
        m for m in modules if m.startswith(("loomc.exec", "loomc.providers", "loomc.eval"))
    ] == []


def _listed(parser: object) -> list[tuple[str, str | None]]:
    sub = next(a for a in parser._actions if a.dest == "command")  # type: ignore[attr-defined]
    return [(a.dest, a.help) for a in sub._choices_actions]


def test_the_lazy_list_says_what_each_command_module_says() -> None:
    full, lazy = build_parser(), build_parser("")
    assert _listed(lazy) == _listed(full)
    assert lazy.format_help() == full.format_help()
    assert [name for name, _ in _listed(full)] == list(COMMANDS)


def test_one_command_is_registered_in_full() -> None:
    parser = build_parser("check")
    args = parser.parse_args(["check", "--format", "json", "x.loom"])
    assert args.format == "json"
    assert args.handler.__module__ == "loomc.cli.check"


def test_check_and_run_compile_no_regex_they_do_not_need() -> None:
    """lark imports the third-party ``regex`` module when it can (~10 ms) though our grammar
    needs only ``re``; ``difflib`` (a did-you-mean) compiles patterns at import and is needed
    only for an unknown name. Neither comes back into a clean check or run unnoticed."""
    for argv in (["check", str(ROOT)], ["run", "--project", str(ROOT), "--no-stream", "Hi."]):
        modules = _modules_after(argv)
        assert "loomc.syntax.parser" in modules  # it did parse
        assert [m for m in modules if m.split(".")[0] in ("regex", "difflib")] == [], argv
