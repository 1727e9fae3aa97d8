"""The Studio's routes, mounted at ``/studio`` by the ``loomc serve`` application.

The page (``static/``) is one HTML file, one stylesheet and one script, all served from the
wheel: no CDN, no font, nothing fetched from elsewhere (the Content-Security-Policy says so to
the browser too). The JSON endpoints under ``api/`` hand the page the view model
(:mod:`loomc.studio.views`); ``api/run`` answers a run as a server-sent event stream.

The Studio runs the project's providers for whoever reaches it, so it answers loopback clients
only (a ``Host`` naming another machine is refused as well: DNS rebinding), and a run must be a
JSON POST (a cross-site form cannot send one without the browser asking first).
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from importlib import resources
from pathlib import Path
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route

import loomc
from loomc.api.running import default_tier
from loomc.eval.receipt import ReceiptError, load_receipt
from loomc.project import Project
from loomc.providers.registry import ProviderPool
from loomc.report.render import render_text
from loomc.risk.factory import make_profiler
from loomc.secrets import redact
from loomc.store import RunFilter, Store
from loomc.studio.runs import BYOK_TYPES, MODES, Runner, StudioError, parse_form
from loomc.studio.sse import EventStream, Write
from loomc.studio.views import check_view, pipelines_view, project_sources

log = logging.getLogger("loomc.studio")

STATIC = {"studio.css": "text/css", "studio.js": "text/javascript"}
PAGE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; frame-src 'self'; base-uri 'none'; form-action 'none'"
)
# an eval report is self-contained (inline styles and SVG); it may run nothing and load nothing
REPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox"
MAX_REPORT_FILES = 500
MAX_REPORT_BYTES = 50_000_000
MAX_RUN_BODY = 200_000
LOCAL_HOSTS = {"127.0.0.1", "::1", "localhost"}

PoolGetter = Callable[[Request], ProviderPool | None]


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _asset(name: str) -> str:
    return resources.files("loomc.studio").joinpath("static", name).read_text(encoding="utf-8")


def _host_name(header: str) -> str:
    host = header.strip()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _check_local(request: Request) -> None:
    client = request.client.host if request.client else ""
    if client not in LOCAL_HOSTS or _host_name(request.headers.get("host", "")) not in LOCAL_HOSTS:
        raise _Refused(403, "the Studio answers on 127.0.0.1 only")


def mount(
    project: Project,
    store: Store,
    *,
    pool: PoolGetter | None = None,
    reports: Path | None = None,
) -> Mount:
    """The Studio under ``/studio``. ``pool`` gives the server's provider pool for
    *configured* runs (a fresh one per run without it); ``reports`` is the folder whose eval
    receipts the Studio lists (default: the project's ``reports/``)."""
    report_dir = reports if reports is not None else project.root / "reports"
    runner = Runner(project, store, make_profiler(project.policy.risk))

    def local(
        handler: Callable[[Request], Awaitable[Response]],
    ) -> Callable[[Request], Awaitable[Response]]:
        async def guarded(request: Request) -> Response:
            try:
                _check_local(request)
                return await handler(request)
            except _Refused as exc:
                return JSONResponse({"error": str(exc)}, status_code=exc.status)
            except StudioError as exc:
                return JSONResponse({"error": str(exc)}, status_code=400)

        return guarded

    async def page(request: Request) -> Response:
        return HTMLResponse(_asset("studio.html"), headers=_page_headers(PAGE_CSP))

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            raise _Refused(404, "no such file")
        return Response(_asset(name), media_type=STATIC[name], headers=_page_headers(None))

    async def project_info(request: Request) -> Response:
        # on the event loop, as the server's own compiles are: the project's cache is not
        # shared across threads
        view = pipelines_view(project)
        view["sources"] = project_sources(project)
        view["modes"] = list(MODES)
        view["byok_types"] = list(BYOK_TYPES)
        view["default_tier"] = default_tier(project) if project.tiers() else None
        return JSONResponse(view)

    async def check(request: Request) -> Response:
        result = await anyio.to_thread.run_sync(loomc.check, project.root)
        return JSONResponse(check_view(project.root, result.diagnostics, result.files))

    async def run(request: Request) -> Response:
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            raise _Refused(415, "a run is a JSON POST")
        raw = await request.body()
        if len(raw) > MAX_RUN_BODY:
            raise _Refused(413, f"the form is over {MAX_RUN_BODY} bytes")
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            raise StudioError("the request body is not valid JSON") from None
        form = parse_form(body)
        del body, raw  # the key, if any, now lives in the form only
        compiled, decision = runner.prepare(form)
        shared = pool(request) if pool is not None else None
        return EventStream(
            lambda write: runner.stream(form, compiled, decision, write, shared),
            cache_control="no-store",
            on_error=_run_failed,
        )

    async def traces(request: Request) -> Response:
        q = request.query_params
        try:
            since = float(q["since"]) if q.get("since") else None
            limit = min(int(q.get("limit") or 200), 1000)
        except ValueError:
            raise StudioError("since and limit must be numbers") from None
        where = RunFilter(
            q.get("pipeline") or None, q.get("tier") or None, q.get("key") or None, since, limit
        )
        runs = await anyio.to_thread.run_sync(store.runs, where)
        return JSONResponse({"runs": [r.summary() for r in runs]})

    async def trace(request: Request) -> Response:
        found = await anyio.to_thread.run_sync(store.run, request.path_params["run_id"])
        if found is None:
            raise _Refused(404, "no single stored run matches that id")
        return JSONResponse(json.loads(json.dumps(found.to_json(), default=str)))

    async def report_list(request: Request) -> Response:
        return JSONResponse({"reports": await anyio.to_thread.run_sync(_receipts, report_dir)})

    async def report(request: Request) -> Response:
        name = request.path_params["name"]
        path = (report_dir / name).resolve()
        if (
            not path.is_relative_to(report_dir.resolve())
            or path.suffix != ".json"
            or not path.is_file()
        ):
            raise _Refused(404, "no such report")
        try:
            receipt = await anyio.to_thread.run_sync(load_receipt, path)
        except ReceiptError as exc:
            raise _Refused(422, str(exc)) from None
        html = await anyio.to_thread.run_sync(render_text, receipt, ".html")
        return HTMLResponse(html, headers=_page_headers(REPORT_CSP))

    routes: list[BaseRoute] = [
        Route("/", local(page), methods=["GET"]),
        Route("/static/{name}", local(static), methods=["GET"]),
        Route("/api/project", local(project_info), methods=["GET"]),
        Route("/api/check", local(check), methods=["GET"]),
        Route("/api/run", local(run), methods=["POST"]),
        Route("/api/traces", local(traces), methods=["GET"]),
        Route("/api/traces/{run_id}", local(trace), methods=["GET"]),
        Route("/api/reports", local(report_list), methods=["GET"]),
        Route("/reports/{name:path}", local(report), methods=["GET"]),
    ]
    return Mount("/studio", routes=routes)


def _page_headers(csp: str | None) -> dict[str, str]:
    headers = {
        "cache-control": "no-store",
        "x-content-type-options": "nosniff",
        "referrer-policy": "no-referrer",
    }
    if csp:
        headers["content-security-policy"] = csp
        headers["x-frame-options"] = "SAMEORIGIN"
    return headers


def _receipts(folder: Path) -> list[dict[str, Any]]:
    """The eval receipts under ``folder`` (newest first): what `loomc eval` wrote there."""
    if not folder.is_dir():
        return []
    found: list[dict[str, Any]] = []
    for path in sorted(folder.rglob("*.json"))[:MAX_REPORT_FILES]:
        if not path.is_file() or path.stat().st_size > MAX_REPORT_BYTES:
            continue
        try:
            receipt = load_receipt(path)
        except ReceiptError:
            continue
        found.append(
            {
                "name": path.relative_to(folder).as_posix(),
                "created_at": receipt.created_at,
                "strategies": [m.strategy for m in receipt.metrics],
                "runs": len(receipt.runs),
                "models": receipt.models,
            }
        )
    found.sort(key=lambda r: r["created_at"] or "", reverse=True)
    return found


async def _run_failed(group: BaseExceptionGroup[Exception], write: Write) -> None:
    """Never a traceback on the page or in the log: the failure, redacted, to the log; a plain
    error event to the page (when it is still there)."""
    for exc in group.exceptions:
        log.error("studio run failed: %s", redact(repr(exc)))
    with contextlib.suppress(OSError):
        await write({"kind": "error", "data": {"message": "internal error"}})
