"""An eval collects the young generation less often while it runs and gives the caller's
process back its own GC setting: after an eval, after one that raises, after evals that
overlap in any order; a collector the caller turned off, or a threshold the caller changed
during the eval, is theirs. The provider seeing the setting mid-eval is injected through the
public API (``providers=``), not patched in."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

import loomc
from loomc.eval.collecting import YOUNG_THRESHOLD, fewer_collections
from loomc.providers.mock import MockProvider

ROOT = Path(__file__).resolve().parents[2]
CALLERS = (900, 11, 12)  # a setting of the caller's own, not the interpreter's default


@pytest.fixture(autouse=True)
def callers_setting() -> Iterator[None]:
    saved, enabled = gc.get_threshold(), gc.isenabled()
    gc.set_threshold(*CALLERS)
    try:
        yield
    finally:
        gc.set_threshold(*saved)
        if enabled:
            gc.enable()


class Watching:
    """The policy's mock, noting the GC threshold during each call; case 'boom' raises a
    non-provider error and 'retune' sets a threshold of its own, as a caller's code might."""

    name = "mock"

    def __init__(self, delay: float = 0.0) -> None:
        self.inner = MockProvider("mock")
        self.delay = delay
        self.seen: list[tuple[int, int, int]] = []

    async def complete(self, request: Any, on_event: Any = None) -> Any:
        text = request.messages[-1].content
        self.seen.append(gc.get_threshold())
        await anyio.sleep(self.delay)
        if "boom" in text:
            raise ZeroDivisionError("division by zero in a provider")
        if "retune" in text:
            gc.set_threshold(5000, 7, 7)
        return await self.inner.complete(request, on_event)

    async def aclose(self) -> None:
        await self.inner.aclose()


def _eval(tmp: Path, ids: list[str], name: str = "d") -> Any:
    data = tmp / f"{name}.jsonl"
    data.write_text("".join(json.dumps({"id": i, "prompt": f"Task {i}."}) + "\n" for i in ids))
    return loomc.prepare_eval(data, "lean", project=ROOT, concurrency=4)


def test_raised_during_the_eval_and_restored_after(tmp_path: Path) -> None:
    seen = Watching()
    receipt = _eval(tmp_path, ["a", "b", "c"]).run(providers={"mock": seen})
    assert len(receipt.runs) == 3
    assert seen.seen == [(YOUNG_THRESHOLD, 11, 12)] * 3
    assert gc.get_threshold() == CALLERS


def test_restored_when_the_eval_raises(tmp_path: Path) -> None:
    seen = Watching()
    with pytest.raises(loomc.EvalAborted):
        _eval(tmp_path, ["a", "boom"]).run(providers={"mock": seen})
    assert (YOUNG_THRESHOLD, 11, 12) in seen.seen
    assert gc.get_threshold() == CALLERS


@pytest.mark.parametrize("first_slower", [True, False])
def test_overlapping_evals_restore_once_both_end(tmp_path: Path, first_slower: bool) -> None:
    slow, fast = Watching(delay=0.3), Watching(delay=0.0)
    one = _eval(tmp_path, ["a", "b"], "one")
    two = _eval(tmp_path, ["c", "d"], "two")

    async def both() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: one.arun(providers={"mock": slow if first_slower else fast}))
            tg.start_soon(lambda: two.arun(providers={"mock": fast if first_slower else slow}))

    anyio.run(both)
    assert set(slow.seen) == set(fast.seen) == {(YOUNG_THRESHOLD, 11, 12)}
    assert gc.get_threshold() == CALLERS


def test_a_threshold_the_caller_set_during_the_eval_stays(tmp_path: Path) -> None:
    _eval(tmp_path, ["retune"]).run(providers={"mock": Watching()})
    assert gc.get_threshold() == (5000, 7, 7)


def test_a_disabled_collector_is_left_alone(tmp_path: Path) -> None:
    gc.disable()
    seen = Watching()
    _eval(tmp_path, ["a"]).run(providers={"mock": seen})
    assert seen.seen == [CALLERS]
    assert not gc.isenabled() and gc.get_threshold() == CALLERS


def test_a_rarer_setting_is_not_lowered() -> None:
    gc.set_threshold(YOUNG_THRESHOLD * 5, 3, 4)
    with fewer_collections():
        assert gc.get_threshold() == (YOUNG_THRESHOLD * 5, 3, 4)
    assert gc.get_threshold() == (YOUNG_THRESHOLD * 5, 3, 4)


@given(st.data())
def test_scopes_left_in_any_order_restore_the_callers_setting(data: st.DataObject) -> None:
    """Any interleaving of scopes entered and left (each left after it was entered): raised
    while one is open, the caller's setting back once the last closes."""
    gc.set_threshold(*CALLERS)
    n = data.draw(st.integers(1, 5))
    open_: list[Any] = []
    waiting = list(range(n))
    while waiting or open_:
        enter = bool(waiting) and (not open_ or data.draw(st.booleans()))
        if enter:
            waiting.pop()
            scope = fewer_collections()
            scope.__enter__()
            open_.append(scope)
        else:
            scope = open_.pop(data.draw(st.integers(0, len(open_) - 1)))
            scope.__exit__(None, None, None)
        expected = (YOUNG_THRESHOLD, 11, 12) if open_ else CALLERS
        assert gc.get_threshold() == expected
