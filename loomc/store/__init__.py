"""Where runs and shared budgets live: an embedded SQLite file by default (see ``base.py``).

``open_store`` picks the backend from the URL: a path (or ``sqlite:///path``) opens SQLite;
``postgresql://user@host:port/db`` opens PostgreSQL (``psycopg``), shared by any number of
server replicas.
"""

from __future__ import annotations

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
    "BudgetExhausted",
    "RunFilter",
    "Scope",
    "Store",
    "StoreError",
    "StoredRun",
    "open_store",
    "today",
]

DEFAULT_STORE = Path(".loomc") / "store.db"


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
