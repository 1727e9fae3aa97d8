"""The trace flags shared by `loomc run` and `loomc eval`: where finished runs are recorded.

``--store URL`` / ``$LOOMC_STORE`` / the project's ``.loomc/store.db`` (the convention of
``loomc.store.store_url``, the same as ``loomc serve``); ``--no-store`` opts out; ``--otel``
(or ``OTEL_EXPORTER_OTLP_ENDPOINT``) also exports each run as OpenTelemetry spans.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any


def add_trace_flags(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group(
        "traces", "every run is recorded for `loomc traces` and `loomc calibrate`"
    )
    where = g.add_mutually_exclusive_group()
    where.add_argument(
        "--store",
        metavar="URL",
        help="a SQLite path or postgresql://... (default $LOOMC_STORE, else "
        "PROJECT/.loomc/store.db)",
    )
    where.add_argument("--no-store", action="store_true", help="do not record runs")
    g.add_argument(
        "--otel",
        action="store_true",
        help="export runs as OpenTelemetry spans over OTLP/HTTP (also on when "
        "OTEL_EXPORTER_OTLP_ENDPOINT is set; needs loomc[otel])",
    )


def trace_options(args: argparse.Namespace, root: Path, packaged: bool = False) -> dict[str, Any]:
    """``store=`` and ``telemetry=`` for the API call. A folder without a project (``packaged``:
    the defaults in the wheel ran) gets no ``.loomc/`` written into it unless a store was named
    (``--store`` or ``$LOOMC_STORE``). Raises ``OtelUnavailable`` (a ``LoomcError``)."""
    from loomc.api.tracing import otel_from_env
    from loomc.store import STORE_ENV, store_url

    named = args.store is not None or bool(os.environ.get(STORE_ENV, "").strip())
    off = args.no_store or (packaged and not named)
    return {
        "store": None if off else store_url(args.store, root),
        "telemetry": otel_from_env(args.otel),
    }
