"""Where runs and shared budgets live: an embedded SQLite file by default (see ``base.py``).

``open_store`` picks the backend from the URL: a path (or ``sqlite:///path``) opens SQLite;
``postgresql://user@host:port/db`` opens PostgreSQL (``psycopg``), shared by any number of
server replicas.

One convention for every command (``serve``, ``run``, ``eval``, ``traces``, ``calibrate``):
``--store URL`` wins, then the ``LOOMC_STORE`` environment variable, then the project's
``.loomc/store.db``. ``run`` and ``eval`` record there by default (``--no-store`` or
``LOOMC_STORE=off`` opts out), so ``loomc traces`` shows what was run without any flag; in a
folder without a project (the packaged defaults) they write nothing unless a store is named.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from loomc.store.base import (
    BudgetExhausted,
    RunFilter,
    Scope,
    Store,
    StoredRun,
    StoreError,
    today,
)

__all__ = [
    "STORE_ENV",
    "BudgetExhausted",
    "RunFilter",
    "Scope",
    "Store",
    "StoreError",
    "StoredRun",
    "open_store",
    "store_url",
    "today",
]

DEFAULT_STORE = Path(".loomc") / "store.db"
STORE_ENV = "LOOMC_STORE"
_OFF = ("off", "none", "0", "false", "no")


def store_url(
    flag: str | Path | None,
    root: str | Path = ".",
    *,
    env: Mapping[str, str] | None = None,
    required: bool = False,
) -> str | None:
    """The store a command uses: ``flag`` (``--store``), else ``$LOOMC_STORE``, else
    ``ROOT/.loomc/store.db``; None when ``LOOMC_STORE`` turns recording off (``off``), unless
    the command needs one (``required``: the server's ledger) — then the project's file."""
    if flag is not None and str(flag):
        return str(flag)
    value = (os.environ if env is None else env).get(STORE_ENV, "").strip()
    if value.lower() in _OFF:
        if not required:
            return None
        value = ""
    return value or str(Path(root) / DEFAULT_STORE)


def open_store(url: str | Path = DEFAULT_STORE) -> Store:
    text = str(url)
    if text.startswith(("postgresql://", "postgres://")):
        from loomc.store.postgres import PostgresStore

        return PostgresStore(text)
    if text.startswith("sqlite:///"):
        text = text.removeprefix("sqlite:///")
    elif "://" in text:
        raise StoreError(f"unknown store URL {text!r}: give a file path or sqlite:///path")
    from loomc.store.sqlite import SQLiteStore

    return SQLiteStore(text)
