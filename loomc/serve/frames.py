"""The SSE frames of one streamed chat completion, rendered from byte templates.

Why templates: every frame of a stream shares its id, model and timestamp, and a content
delta differs from the next only by its text. Rendering each as a dict through ``json.dumps``
cost ~2-5 µs a frame (a new encoder per call, the whole chunk walked again); a stream writes
the chunk's head (id, object, created, model) and its content delta's two halves once, and each
delta is then those halves around the text escaped by ``json``'s own C escaper — the bytes
``json.dumps`` would have written. The role, finish and usage chunks are the same head with
their own tails (serve13: the last frames cost ~15 µs through dicts), and the ``loomc``
object, which the finish and usage chunks both carry last, is encoded once for both.

Every frame is byte-for-byte what ``sse(chunk(...))`` renders (``tests/serve/test_frames.py``
checks it for any model name and text).
"""

from __future__ import annotations

from json.encoder import encode_basestring_ascii
from typing import Any

from loomc.studio.sse import frame

_str = encode_basestring_ascii  # what ``json.dumps`` writes for a str (ASCII, escaped)


def sse(item: dict[str, Any] | str) -> bytes:
    return b"data: " + frame(item).encode() + b"\n\n"


class Frames:
    """The frames of the stream ``cid`` for ``model``, created at ``created``."""

    __slots__ = ("after", "before", "head", "null_usage")

    def __init__(self, cid: str, model: str, created: int, with_usage: bool) -> None:
        # the chunk's keys in ``wire.chunk``'s order, written directly: ``json.dumps`` of a
        # dict with a placeholder, then cut around it, cost ~5 µs a stream
        self.head = (
            f'{{"id":{_str(cid)},"object":"chat.completion.chunk","created":{int(created)!r},'
            f'"model":{_str(model)},"choices":['
        ).encode()
        self.null_usage = with_usage  # every chunk but the usage chunk carries `"usage":null`
        usage = b',"usage":null' if with_usage else b""
        self.before = b"data: " + self.head + b'{"index":0,"delta":{"content":'
        self.after = b'},"finish_reason":null,"logprobs":null}],"system_fingerprint":null' + usage
        self.after += b"}\n\n"

    def delta(self, text: str) -> bytes:
        """A content chunk carrying ``text``."""
        return self.before + _str(text).encode() + self.after

    def role(self) -> bytes:
        """The first chunk: the assistant's role and empty content."""
        return (
            b"data: " + self.head + b'{"index":0,"delta":{"role":"assistant","content":""'
        ) + self.after

    def last(self, finish: str, usage: dict[str, int], ext: dict[str, Any]) -> bytes:
        """The finish chunk and, when asked for, the usage chunk; both end with ``ext``, whose
        JSON is rendered once for both."""
        loomc = b',"loomc":' + frame(ext).encode() + b"}\n\n"
        out = (
            b"data: " + self.head + b'{"index":0,"delta":{},"finish_reason":'
            + _str(finish).encode() + b',"logprobs":null}],"system_fingerprint":null'
        )  # fmt: skip
        if not self.null_usage:
            return out + loomc
        out += b',"usage":null' + loomc
        out += b"data: " + self.head + b'],"system_fingerprint":null,"usage":'
        return out + frame(usage).encode() + loomc
