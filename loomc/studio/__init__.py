"""The Studio: a local, offline page on the ``loomc serve`` application (``/studio``).

It shows what the compiler proved (each pipeline x tier as its graph, worst cases beside the
ceilings, `loomc check`'s diagnostics on the source) and what the runtime did (a run's events
live over SSE, the trace store, eval reports). ``app.py`` holds the routes, ``views.py`` the
JSON view model, ``runs.py`` the four run modes; the page itself is ``static/``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starlette.routing import Mount

__all__ = ["mount"]


def mount(*args: Any, **kwargs: Any) -> Mount:
    """See :func:`loomc.studio.app.mount` (imported on first use: Starlette is an extra)."""
    from loomc.studio.app import mount as build

    return build(*args, **kwargs)
