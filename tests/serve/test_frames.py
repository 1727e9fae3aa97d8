"""The stream's frames from byte templates are byte-for-byte the frames rendered from dicts."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from loomc.serve.frames import Frames, sse
from loomc.serve.wire import chunk

texts = st.text(st.characters(codec="utf-8"), max_size=40)
exts = st.dictionaries(
    st.text(max_size=12),
    st.one_of(st.none(), st.booleans(), st.integers(), texts),
    max_size=6,
)


def reference(
    cid: str, model: str, created: int, with_usage: bool, finish: str, usage: dict[str, int],
    ext: dict[str, Any],
) -> bytes:  # fmt: skip
    """The last frames as the handler rendered them before the templates (dicts, then JSON)."""
    out = sse(chunk(cid, model, created, {}, finish, with_usage=with_usage, loomc=ext))
    if with_usage:
        out += sse(
            {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [],
                "system_fingerprint": None,
                "usage": usage,
                "loomc": ext,
            }
        )
    return out


@given(
    model=texts,
    cid=texts,
    created=st.integers(0, 2**40),
    with_usage=st.booleans(),
    deltas=st.lists(texts, max_size=4),
    finish=st.sampled_from(["stop", "length"]),
    ext=exts,
)
def test_frames_equal_the_dicts_rendered(
    model: str, cid: str, created: int, with_usage: bool, deltas: list[str], finish: str,
    ext: dict[str, Any],
) -> None:  # fmt: skip
    frames = Frames(cid, model, created, with_usage)
    role = {"role": "assistant", "content": ""}
    assert frames.role() == sse(chunk(cid, model, created, role, with_usage=with_usage))
    for text in deltas:
        want = sse(chunk(cid, model, created, {"content": text}, with_usage=with_usage))
        assert frames.delta(text) == want
    usage = {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
    assert frames.last(finish, usage, ext) == reference(
        cid, model, created, with_usage, finish, usage, ext
    )


def test_a_model_name_that_looks_like_the_delta_key_stays_in_its_string() -> None:
    """The role chunk is cut at the last ``"delta":{"content":``: a model name holding that
    text is escaped (its quotes become ``\\"``), so the cut cannot land inside it."""
    model = '"delta":{"content":"x"}'
    frames = Frames("chatcmpl-1", model, 1, True)
    body = json.loads(frames.role()[len(b"data: ") :])
    assert body["model"] == model
    assert body["choices"][0]["delta"] == {"role": "assistant", "content": ""}
