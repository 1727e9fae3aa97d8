"""The SSE frames of one streamed chat completion, rendered from byte templates.

Why templates: every frame of a stream shares its id, model and timestamp, and a content
delta differs from the next only by its text. Rendering each as a dict through ``json.dumps``
cost ~2-5 µs a frame (a new encoder per call, the whole chunk walked again); a stream renders
its content chunk once with a placeholder, splits it there, and each delta is then the two
halves around the text escaped by ``json``'s own C escaper — the bytes ``json.dumps`` would have
written. The role chunk is the same template with the role's delta, and the ``loomc`` object,
which the finish and usage chunks both carry last, is encoded once for both.

Every frame is byte-for-byte what ``sse(chunk(...))`` renders (``tests/serve/test_frames.py``
checks it for any model name and text).
"""

from __future__ import annotations

from json.encoder import encode_basestring_ascii
from typing import Any

from loomc.serve.wire import chunk
from loomc.studio.sse import frame

_HOLE = "\x00loomc-delta\x00"  # a placeholder for a content delta's text
_CONTENT = '"delta":{"content":'


def sse(item: dict[str, Any] | str) -> bytes:
    return b"data: " + frame(item).encode() + b"\n\n"


class Frames:
    """The frames of the stream ``cid`` for ``model``, created at ``created``."""

    __slots__ = ("after", "before", "cid", "created", "model", "with_usage")

    def __init__(self, cid: str, model: str, created: int, with_usage: bool) -> None:
        self.cid, self.model, self.created, self.with_usage = cid, model, created, with_usage
        # the last match: the client's model name comes before the content
        head, _, tail = frame(
            chunk(cid, model, created, {"content": _HOLE}, with_usage=with_usage)
        ).rpartition(encode_basestring_ascii(_HOLE))
        self.before, self.after = b"data: " + head.encode(), tail.encode() + b"\n\n"

    def delta(self, text: str) -> bytes:
        """A content chunk carrying ``text``."""
        return self.before + encode_basestring_ascii(text).encode() + self.after

    def role(self) -> bytes:
        """The first chunk: the assistant's role and empty content."""
        # the delta's key is the last `"delta":{"content":` of the head: the model name is
        # JSON-escaped before it, so its quotes cannot form that text
        start, _, _ = self.before.rpartition(_CONTENT.encode())
        return start + b'"delta":{"role":"assistant","content":""' + self.after

    def last(self, finish: str, usage: dict[str, int], ext: dict[str, Any]) -> bytes:
        """The finish chunk and, when asked for, the usage chunk; both end with ``ext``."""
        loomc = b',"loomc":' + frame(ext).encode()
        cid, model, created = self.cid, self.model, self.created
        body = _without_brace(chunk(cid, model, created, {}, finish, with_usage=self.with_usage))
        out = b"data: " + body + loomc + b"}\n\n"
        if self.with_usage:
            usage_chunk = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [],
                "system_fingerprint": None,
                "usage": usage,
            }
            out += b"data: " + _without_brace(usage_chunk) + loomc + b"}\n\n"
        return out


def _without_brace(item: dict[str, Any]) -> bytes:
    """``item``'s frame JSON without its closing brace (a key will follow)."""
    return frame(item)[:-1].encode()
