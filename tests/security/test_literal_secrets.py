"""LOOM601 and LOOM606: a literal credential anywhere in a policy or a `.loom` file is an error
placed at its line; `env:NAME` references pass; the plan artifact never carries a key."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from loomc.checker.policy_rules import check_policy
from loomc.cli.main import main
from loomc.policy.load import load_policy_text

KEYISH = "sk-proj-AbCdEfGh1234567890XyZ"


def _provider(extra: str) -> str:
    return (
        "version: 1\nproviders:\n  gw:\n    type: openai-compatible\n"
        f"    base_url: http://127.0.0.1:4000/v1\n{extra}"
        "workers:\n  w: {model: gw/m}\n"
    )


LITERALS = {
    "x-goog-api-key": "    headers:\n      X-Goog-Api-Key: AIzaSyA1234567890abcdefghijklmnopqrstu\n",
    "x-auth-token": "    headers:\n      X-Auth-Token: 3f9a8b7c6d5e4f3a2b1c\n",
    "proxy-authorization": "    headers:\n      Proxy-Authorization: Basic dXNlcjpwYXNz\n",
    "authorization-sk": f'    headers:\n      Authorization: "{KEYISH}"\n',
    "authorization-bearer": f"    headers:\n      Authorization: Bearer {KEYISH}\n",
    "custom-header-keyshape": f"    headers:\n      X-Whatever: {KEYISH}\n",
    "extra-body-api-key": f"    extra_body:\n      api_key: {KEYISH}\n",
    "extra-body-nested": "    extra_body:\n      auth: {access_token: abc123def456}\n",
    "url-userinfo": "    base_url: http://user:hunter2@127.0.0.1:4000/v1\n",
    "url-query-key": "    base_url: http://127.0.0.1:4000/v1?key=abc123def456\n",
    "api-key": f"    api_key: {KEYISH}\n",
}


@pytest.mark.parametrize("name", sorted(LITERALS))
def test_literal_credentials_are_refused_at_their_line(name: str) -> None:
    text = _provider(LITERALS[name])
    if name.startswith("url-"):  # the literal base_url replaces the default one
        text = text.replace("    base_url: http://127.0.0.1:4000/v1\n", "", 1)
    source, diags = load_policy_text(text, "p.yaml")
    assert source is not None, diags
    found = [d for d in check_policy(source) if d.code == "LOOM601"]
    assert len(found) == 1, found
    line = text.splitlines()[found[0].span.line - 1]
    assert line.strip() and found[0].span.line >= 5  # placed inside the provider, not file start


@pytest.mark.parametrize(
    "extra",
    [
        "    api_key: env:GW_KEY\n",
        "    headers:\n      Authorization: Bearer env:GW_KEY\n",
        "    headers:\n      X-Auth-Token: env:GW_TOKEN\n      X-Title: loomc\n",
        "    extra_body:\n      api_key: env:GW_KEY\n      max_tokens: 5\n      top_k: 3\n",
        "    headers:\n      Accept: application/json\n",
    ],
)
def test_env_references_and_ordinary_settings_pass(extra: str) -> None:
    source, diags = load_policy_text(_provider(extra), "p.yaml")
    assert source is not None, diags
    assert [d for d in check_policy(source) if d.code == "LOOM601"] == []


def test_key_in_a_loom_file_is_refused_and_never_reaches_the_artifact(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    (tmp_path / "pipelines").mkdir()
    pipeline = tmp_path / "pipelines" / "p.loom"
    pipeline.write_text(
        'pipeline p {\n  instruction "Authenticate with ghp_abcdefghijklmnopqrstuvwxyz0123456789"\n'
        f'  step a : writer(drafter) {{ task "call it with {KEYISH}" max_tokens 100 }}\n'
        "  answer a\n}\n"
    )
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(
            [
                "check",
                str(pipeline),
                "--policy",
                str(root / "policies/default.yaml"),
                "--format",
                "json",
            ]
        )
    doc = json.loads(out.getvalue())
    spans = sorted((d["line"], d["column"]) for d in doc["diagnostics"] if d["code"] == "LOOM606")
    lines = pipeline.read_text().splitlines()
    assert rc == 1 and spans == [(2, lines[1].index("ghp_") + 1), (3, lines[2].index("sk-") + 1)]

    from loomc.ir.artifact import build_artifact
    from loomc.project import load_project

    project = load_project(tmp_path, root / "policies/default.yaml")
    pipelines = project.pipelines()[0]
    assert pipelines
    artifact = json.dumps(build_artifact(pipelines, [{} for _ in pipelines]))
    assert "call it with [REDACTED]" in artifact
    assert KEYISH not in artifact and "ghp_abc" not in artifact


@pytest.mark.parametrize(
    "settings",
    [
        {"headers": {"Authorization": "Bearer env:LOOMC_UNSET_TOKEN"}},
        {"extra_body": {"metadata": {"token": "env:LOOMC_UNSET_TOKEN"}}},
    ],
    ids=["header", "extra_body"],
)
def test_unset_env_reference_is_a_config_error_never_sent_literally(
    settings: dict[str, object],
) -> None:
    from loomc.policy.models import ProviderConfig
    from loomc.providers.base import ProviderConfigError
    from loomc.providers.openai_compat import OpenAICompatProvider

    cfg = ProviderConfig.model_validate(
        {"type": "openai-compatible", "base_url": "http://127.0.0.1:9/v1", **settings}
    )
    provider = OpenAICompatProvider("gw", cfg, env={})
    with pytest.raises(ProviderConfigError, match="LOOMC_UNSET_TOKEN is not set"):
        _ = provider.client, provider.extra_body
