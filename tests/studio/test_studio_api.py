"""The Studio's JSON and SSE endpoints, on the `loomc serve` application (Starlette's TestClient
for the app, a real uvicorn for the BYOK upstream and for `loomc studio` itself)."""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from replay import ReplayServer
from starlette.testclient import TestClient
from studiokit import ROOT, StudioProcess, events, files_holding, make_project

from loomc.api.running import open_project
from loomc.checker.worstcase import worst_case
from loomc.providers.mock import MockProvider
from loomc.secrets import held_secret, redact_secrets, register_secret
from loomc.serve.app import create_app
from loomc.serve.service import auto_tier as serve_auto_tier
from loomc.store import open_store
from loomc.studio.runs import auto_tier as studio_auto_tier

LOCAL = {"base_url": "http://127.0.0.1", "client": ("127.0.0.1", 50123)}


class Counting(MockProvider):
    """The mock, counting what reaches it (a configured run must use the server's pool)."""

    def __init__(self) -> None:
        super().__init__("mock")
        self.seen: list[str] = []

    async def complete(self, request: Any, on_event: Any = None) -> Any:
        self.seen.append(request.model)
        return await super().complete(request, on_event)


@pytest.fixture
def project_dir(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


@pytest.fixture
def counting() -> Counting:
    return Counting()


@pytest.fixture
def studio(project_dir: Path, tmp_path: Path, counting: Counting) -> Iterator[TestClient]:
    project = open_project(project_dir)
    app = create_app(project, open_store(tmp_path / "store.db"), providers={"mock": counting})
    with TestClient(app, **LOCAL) as client:  # type: ignore[arg-type]
        yield client


def run(client: TestClient, **form: Any) -> list[dict[str, Any]]:
    response = client.post("/studio/api/run", json=form)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return events(response.text)


def test_page_and_assets_are_self_contained(studio: TestClient) -> None:
    page = studio.get("/studio/")
    assert page.status_code == 200
    csp = page.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp
    links = re.findall(r"(?:src|href|action)=\"([^\"]*)\"", page.text)
    assert links and all(link.startswith(("/studio/", "#", "data:")) for link in links), links
    script = studio.get("/studio/static/studio.js").text
    fetched = re.findall(r"fetch\(\s*([`\"'][^`\"']*)", script)
    assert fetched and all(f[1:].startswith("/studio/") for f in fetched), fetched
    assert "import(" not in script and "XMLHttpRequest" not in script
    css = studio.get("/studio/static/studio.css").text
    assert "@import" not in css and "url(" not in css and "@font-face" not in css
    assert "innerHTML" not in studio.get("/studio/static/studio.js").text
    assert studio.get("/studio/static/../app.py").status_code == 404


def test_pipelines_carry_the_checkers_worst_cases_and_ceilings(
    studio: TestClient, project_dir: Path
) -> None:
    data = studio.get("/studio/api/project").json()
    by_id = {p["id"]: p for p in data["pipelines"]}
    assert {"general@lean", "general@balanced", "general@strict", "baseline"} <= set(by_id)
    project = open_project(project_dir)
    for pid in ("general@balanced", "code-review@strict", "baseline"):
        name, _, tier = pid.partition("@")
        compiled = project.compile(name, tier or None)
        worst = worst_case(compiled)
        shown = by_id[pid]
        assert shown["checks"] is True and shown["errors"] == []
        assert shown["ceilings"] == compiled.budget.to_json()
        assert shown["worst"]["calls"] == worst.calls
        assert shown["worst"]["tokens"] == worst.tokens
        assert shown["worst"]["latency_ms"] == worst.latency_ms
        steps = {s["id"]: s for s in shown["steps"]}
        assert list(steps) == compiled.graph.topological_order()
        for cost in worst.steps:
            assert steps[cost.step]["worst"]["calls"] == cost.attempts
            assert steps[cost.step]["worst"]["credits"] == str(cost.credits)
            assert steps[cost.step]["worst"]["latency_ms"] == cost.latency_ms
    balanced = {s["id"]: s for s in by_id["general@balanced"]["steps"]}
    assert balanced["direct"]["guard_text"] is None
    assert "risk >= high" in balanced["verify"]["guard_text"]
    assert balanced["verify"]["column"] == 1 and balanced["direct"]["column"] == 0
    assert {"from": "direct", "to": "verify", "kinds": ["guard", "sees"]} in by_id[
        "general@balanced"
    ]["edges"]
    source = by_id["general@balanced"]["source"]
    assert source.endswith("general.loom")
    assert data["sources"][source] == (project_dir / "pipelines" / "general.loom").read_text()


def test_check_diagnostics_come_with_their_source_spans(project_dir: Path, tmp_path: Path) -> None:
    loom = project_dir / "pipelines" / "general.loom"
    loom.write_text(loom.read_text().replace("calls <= 4", "calls <= 1"))
    project = open_project(project_dir)
    app = create_app(project, open_store(tmp_path / "s.db"))
    with TestClient(app, **LOCAL) as client:  # type: ignore[arg-type]
        check = client.get("/studio/api/check").json()
        shown = client.get("/studio/api/project").json()
    errors = [d for d in check["diagnostics"] if d["severity"] == "error"]
    assert errors and check["errors"] == len(errors)
    first = next(d for d in errors if d["file"].endswith("general.loom"))
    line = check["sources"][first["file"]].splitlines()[first["line"] - 1]
    assert "calls <= 1" in line  # the span points at the broken ceiling, in the text sent
    strict = next(p for p in shown["pipelines"] if p["id"] == "general@strict")
    assert strict["checks"] is False and strict["errors"]


def test_mock_run_streams_the_runtime_events_in_order_and_is_stored(
    studio: TestClient, counting: Counting
) -> None:
    got = run(studio, prompt="What is 2+2?", pipeline="general", tier="balanced", mode="mock")
    kinds = [e["kind"] for e in got if e["kind"] != "token"]
    assert kinds == [
        "plan",
        "run-started",
        "step-started",
        "step-finished",
        "step-skipped",
        "run-finished",
        "receipt",
    ]
    assert [e["step"] for e in got if e["kind"] == "step-started"] == ["direct"]
    skipped = next(e for e in got if e["kind"] == "step-skipped")
    assert skipped["step"] == "verify" and skipped["data"]["reason"] == "guard is false"
    tokens = "".join(e["data"]["text"] for e in got if e["kind"] == "token")
    receipt = got[-1]["data"]
    assert receipt["answer"] == tokens and receipt["calls"] == 1 and receipt["mode"] == "mock"
    assert counting.seen == []  # mock mode never reaches the configured providers
    listed = studio.get("/studio/api/traces").json()["runs"]
    assert [r["run_id"] for r in listed] == [receipt["run_id"]]
    assert listed[0]["source"] == "studio" and listed[0]["calls"] == 1
    detail = studio.get(f"/studio/api/traces/{receipt['run_id']}").json()
    assert detail["result"]["answer"] == receipt["answer"]
    assert detail["events"][0]["kind"] == "run-started"
    assert studio.get("/studio/api/traces?pipeline=research").json()["runs"] == []
    assert studio.get("/studio/api/traces/nope").status_code == 404


def test_configured_run_uses_the_servers_providers(studio: TestClient, counting: Counting) -> None:
    got = run(studio, prompt="What is 2+2?", pipeline="general", tier="lean", mode="configured")
    assert got[-1]["kind"] == "receipt" and got[-1]["data"]["calls"] == 1
    assert counting.seen == ["finalizer-small"]


def test_simulation_calls_no_provider_and_shows_the_worst_case(
    studio: TestClient, counting: Counting, project_dir: Path
) -> None:
    got = run(studio, prompt="anything", pipeline="general", tier="strict", mode="simulation")
    worst = worst_case(open_project(project_dir).compile("general", "strict"))
    finished = [e for e in got if e["kind"] == "step-finished"]
    assert [e["step"] for e in finished] == ["direct", "critique", "final"]
    assert [e["data"]["calls"] for e in finished] == [c.attempts for c in worst.steps]
    assert got[-1]["data"]["simulated"] is True
    assert got[-1]["data"]["worst"]["calls"] == worst.calls
    assert counting.seen == []
    assert studio.get("/studio/api/traces").json()["runs"] == []  # nothing ran, nothing stored


def test_auto_escalates_a_risky_prompt_like_serve_does(studio: TestClient) -> None:
    risky = "Review this code for a SQL injection vulnerability: eval(input())"
    got = run(studio, prompt=risky, pipeline="general", tier="auto", mode="mock")
    chosen = next(e for e in got if e["kind"] == "tier-chosen")["data"]
    assert chosen["tier"] == "strict" and chosen["risk"]["level"] == "high"
    receipt = got[-1]["data"]
    assert receipt["tier"] == "strict" and receipt["escalated"] is True
    assert receipt["escalation_reason"].startswith("high-risk task")
    plain = run(studio, prompt="What is 2+2?", pipeline="general", tier="auto", mode="mock")
    assert next(e for e in plain if e["kind"] == "tier-chosen")["data"]["tier"] == "lean"


def test_studio_auto_rule_is_serves(project_dir: Path) -> None:
    from loomc.risk.factory import make_profiler

    project = open_project(project_dir)
    profiler = make_profiler(project.policy.risk)
    tiers = project.tiers()
    for prompt in (
        "hi",
        "What is 2+2?",
        "Compare these two designs and investigate the failure in detail, step by step",
        "Audit this contract for a reentrancy exploit and a security vulnerability",
    ):
        served = anyio.run(serve_auto_tier, profiler, prompt, tiers)
        assert studio_auto_tier(profiler, prompt, "general", tiers) == served


def test_the_auto_rule_maps_risk_levels_to_tiers() -> None:
    from loomc.risk.base import tier_for_level

    assert [
        tier_for_level(v, ["lean", "balanced", "strict"]) for v in ("low", "medium", "high")
    ] == [
        "lean",
        "balanced",
        "strict",
    ]
    assert tier_for_level("medium", ["a", "b", "c", "d"]) == "c"  # no balanced: the middle


@pytest.mark.parametrize(
    ("form", "status", "needle"),
    [
        ({"prompt": " ", "mode": "mock"}, 400, "prompt is empty"),
        ({"prompt": "x", "mode": "live"}, 400, "unknown mode"),
        ({"prompt": "x", "pipeline": "nope", "mode": "mock"}, 400, "LOOM203"),
        ({"prompt": "x", "tier": "huge", "mode": "mock"}, 400, "LOOM215"),
        ({"prompt": "x", "mode": "byok"}, 400, "needs a provider"),
        (
            {"prompt": "x", "mode": "byok", "byok": {"base_url": "file:///etc", "key": "k"}},
            400,
            "base URL",
        ),
        (
            {
                "prompt": "x",
                "mode": "byok",
                "byok": {"base_url": "http://h", "key": "k", "models": "mock/other = m"},
            },
            400,
            "no line for mock/finalizer-small",
        ),
    ],
)
def test_bad_forms_are_one_line_400s(
    studio: TestClient, form: dict[str, Any], status: int, needle: str
) -> None:
    response = studio.post("/studio/api/run", json=form)
    assert response.status_code == status
    assert needle in response.json()["error"]
    assert "Traceback" not in response.text


def test_only_loopback_json_posts_are_answered(project_dir: Path, tmp_path: Path) -> None:
    app = create_app(open_project(project_dir), open_store(tmp_path / "s.db"))
    with TestClient(app, base_url="http://127.0.0.1", client=("10.1.2.3", 5000)) as remote:
        assert remote.get("/studio/").status_code == 403
        assert remote.post("/studio/api/run", json={"prompt": "x"}).status_code == 403
    with TestClient(app, base_url="http://evil.example", client=("127.0.0.1", 5000)) as rebound:
        assert rebound.get("/studio/api/project").status_code == 403
    with TestClient(app, **LOCAL) as local:  # type: ignore[arg-type]
        form = local.post(
            "/studio/api/run", content=b"prompt=x", headers={"content-type": "text/plain"}
        )
        assert form.status_code == 415
        assert local.get("/studio/").status_code == 200
        assert local.get("/v1/models").status_code == 200  # the server's own routes are untouched


def test_reports_render_with_the_report_templates(studio: TestClient) -> None:
    listed = studio.get("/studio/api/reports").json()["reports"]
    assert [r["name"] for r in listed] == ["demo.json"]
    assert listed[0]["runs"] > 0 and listed[0]["strategies"]
    page = studio.get("/studio/reports/demo.json")
    assert page.status_code == 200 and page.text.lstrip().lower().startswith("<!doctype html")
    assert "sandbox" in page.headers["content-security-policy"]
    golden = (ROOT / "tests" / "report" / "golden" / "demo.html").read_text()
    assert page.text == golden  # the existing template, byte for byte
    for bad in ("../store.db", "..%2Fstore.db", "nope.json", "demo.html"):
        assert studio.get(f"/studio/reports/{bad}").status_code == 404


def test_byok_key_reaches_the_upstream_and_nothing_else(project_dir: Path, tmp_path: Path) -> None:
    upstream = ReplayServer().start()
    key = "sk-byok-" + secrets.token_hex(16)
    store = tmp_path / "byok-store.db"
    app = create_app(open_project(project_dir), open_store(store))
    models = "mock/finalizer-small = litellm-usage\nmock/critic-small = echo-auth"
    try:
        with TestClient(app, **LOCAL) as client:  # type: ignore[arg-type]
            form = {
                "prompt": "Audit this contract for a security vulnerability",
                "pipeline": "general",
                "tier": "strict",
                "mode": "byok",
                "byok": {
                    "type": "openai-compatible",
                    "base_url": upstream.base_url + "/v1",
                    "models": models,
                    "key": key,
                },
            }
            response = client.post("/studio/api/run", json=form)
            later = [
                client.get("/studio/api/traces").text,
                client.get("/studio/api/project").text,
                client.get("/metrics").text,
            ]
            run_id = events(response.text)[-1]["data"].get("run_id", "")
            later.append(client.get(f"/studio/api/traces/{run_id}").text)
    finally:
        upstream.stop()
    got = events(response.text)
    receipt = got[-1]
    assert receipt["kind"] == "receipt"
    steps = {s["id"]: s for s in receipt["data"]["steps"]}
    assert steps["direct"]["status"] == "ok"
    # the critic's upstream answers 401 and echoes the Authorization header in its body
    assert steps["critique"]["status"] == "failed"
    sent = [r["headers"].get("authorization") for r in upstream.requests]
    assert f"Bearer {key}" in sent
    assert {r["body"]["model"] for r in upstream.requests} == {"litellm-usage", "echo-auth"}
    assert key not in response.text and key[8:24] not in response.text
    for text in later:
        assert key[8:24] not in text
    assert files_holding(key[8:].encode(), tmp_path) == []
    assert redact_secrets(key) == key  # the run is over: the process no longer holds the key


def test_a_held_secret_is_redacted_inside_and_forgotten_after() -> None:
    lent, kept = "lent-" + secrets.token_hex(12), "kept-" + secrets.token_hex(12)
    register_secret(kept)
    with held_secret(lent):
        with held_secret(lent):  # two runs with the same key: the first to end keeps it held
            assert lent not in redact_secrets(f"x {lent} y")
        assert lent not in redact_secrets(f"x {lent[3:20]} y")
        with held_secret(kept):
            pass
    assert redact_secrets(f"x {lent} y") == f"x {lent} y"
    assert kept not in redact_secrets(f"x {kept} y")  # registered for good before: still redacted


def test_loomc_studio_prints_its_url_and_serves_the_page(project_dir: Path, tmp_path: Path) -> None:
    server = StudioProcess(project_dir, tmp_path / "cli")
    try:
        assert server.url.startswith("http://127.0.0.1:")
        page = httpx.get(f"{server.url}/studio/", timeout=10)
        assert page.status_code == 200 and "loomc Studio" in page.text
        assert (
            httpx.get(f"{server.url}/studio", timeout=10, follow_redirects=True).status_code == 200
        )
        assert httpx.get(f"{server.url}/healthz", timeout=10).json()["status"] == "ok"
    finally:
        server.stop()


def test_mapped_provider_renames_models_and_refuses_unmapped_ones() -> None:
    import anyio

    from loomc.providers.base import CompletionRequest, Message, ProviderConfigError
    from loomc.providers.mapped import MappedProvider

    upstream = Counting()
    mapped = MappedProvider("gw", upstream, {"gw/small": "finalizer-small"})
    request = CompletionRequest("small", (Message("user", "hi"),), max_tokens=20)

    async def main() -> None:
        await mapped.complete(request)
        with pytest.raises(ProviderConfigError, match="no model mapped for gw/large"):
            await mapped.complete(CompletionRequest("large", request.messages, max_tokens=20))

    anyio.run(main)
    assert upstream.seen == ["finalizer-small"]
