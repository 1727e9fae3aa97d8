"""Untrusted text made safe for a terminal: model answers, streamed tokens, provider errors.

A model (or a provider, or a dataset) controls these bytes. Written raw, an escape sequence can
set the clipboard (OSC 52), retitle or clear the window, move the cursor over earlier lines or
hide what follows; through rich, a ``[/]`` or ``[link=...]`` in an error is read as markup and
swallows the step line. Every control character except newline and tab is shown as a visible
escape instead (``\\x1b``), so the filter works per character and a sequence split across two
streamed tokens cannot form either. Bidirectional overrides (which reorder what is displayed)
and lone surrogates (which a UTF-8 terminal cannot encode) are escaped the same way.
"""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls; bidi embeddings, overrides and isolates;
# lone surrogates.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def plain(text: object) -> str:
    """``text`` for a plain ``print``/``write``: controls shown as escapes, never executed."""
    return _UNSAFE.sub(_visible, str(text))


def markup(text: object) -> str:
    """``text`` for inside a rich markup string: :func:`plain`, then rich's own escaping, so
    brackets in it print as brackets. (rich is imported here, not above: ``plain`` is on the
    path of every ``loomc run`` and ``loomc check``, which need no rich for it.)"""
    from rich.markup import escape

    return escape(plain(text))


__all__ = ["markup", "plain"]
