"""The ledger under concurrency and lying actuals: reservations never pass a ceiling, committed
usage never goes negative, an overshoot stops every run under the ledger that passed, and a run
refused only because other runs' reservations are in flight waits for them and retries."""

from __future__ import annotations

import gc
from decimal import Decimal

import anyio
import anyio.lowlevel
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loomc.exec.ledger import Ledger, Reservation
from loomc.exec.refusals import Refused
from loomc.exec.result import StopReason
from loomc.units import Budget, Dimension, Usage

AXES = (Dimension.CALLS, Dimension.TOKENS, Dimension.CREDITS)


class Audit:
    """A hook on every ledger: at each grant, what the chain would commit must fit."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.grants = 0
        self.violations: list[str] = []

    def reserved(self, reservation: Reservation) -> None:
        self.grants += 1
        after = self.ledger.committed + reservation.amount
        for dim in AXES:
            ceiling = self.ledger.budget.get(dim)
            if ceiling is not None and after.get(dim) > ceiling:
                self.violations.append(f"{self.ledger.name} {dim}: {after.get(dim)} > {ceiling}")

    def settled(self, reservation: Reservation, actual: Usage) -> None:
        return None


def _nonnegative(usage: Usage) -> bool:
    return usage.calls >= 0 and usage.tokens >= 0 and usage.credits >= 0 and usage.cost >= 0


amounts = st.builds(
    Usage, calls=st.just(1), tokens=st.integers(0, 400), credits=st.decimals(0, 3, places=1)
)
actuals = st.builds(
    Usage,
    calls=st.integers(-3, 3),
    tokens=st.integers(-10_000, 10_000),
    credits=st.decimals(-100, 100, places=1),
    cost=st.decimals(-1, 1, places=3),
)
op = st.tuples(st.integers(0, 3), amounts, actuals, st.integers(0, 3))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=st.lists(op, min_size=1, max_size=40),
    parent_calls=st.integers(1, 30),
    parent_tokens=st.integers(100, 4000),
    parent_credits=st.decimals(1, 20, places=1),
    run_calls=st.integers(1, 12),
)
def test_random_interleavings_never_pass_a_ceiling_or_go_negative(
    ops: list[tuple[int, Usage, Usage, int]],
    parent_calls: int,
    parent_tokens: int,
    parent_credits: Decimal,
    run_calls: int,
) -> None:
    parent = Ledger(
        Budget(calls=parent_calls, tokens=parent_tokens, credits=parent_credits), name="eval"
    )
    audits = [Audit(parent)]
    parent.hook = audits[0]
    runs = []
    for i in range(4):
        run = parent.child(Budget(calls=run_calls), name=f"run{i}")
        audit = Audit(run)
        run.hook = audit
        audits.append(audit)
        runs.append(run)
    seen: list[str] = []

    async def call(run: Ledger, amount: Usage, actual: Usage, yields: int) -> None:
        got = await run.reserve(amount)
        for ledger in (parent, *runs):
            if not _nonnegative(ledger.committed):
                seen.append(f"{ledger.name} committed negative: {ledger.committed}")
        if isinstance(got, Refused):
            if got.over is None and got.ledger == "eval":
                # refused for good only when what is settled plus this amount cannot fit,
                # or nothing is in flight that could make room
                dim = got.dimension
                fits = parent.settled.get(dim) + amount.get(dim) <= got.ceiling
                if fits and parent.pending:
                    seen.append(f"refused while it could still fit: {got.describe()}")
            return
        for _ in range(yields):
            await anyio.lowlevel.checkpoint()
        await run.reconcile(got, actual)
        for ledger in (parent, *runs):
            if not _nonnegative(ledger.committed) or not _nonnegative(ledger.actual):
                seen.append(f"{ledger.name} negative after reconcile: {ledger.committed}")

    async def main() -> None:
        with anyio.fail_after(10):  # a waiting reservation never deadlocks
            async with anyio.create_task_group() as tg:
                for index, amount, actual, yields in ops:
                    tg.start_soon(call, runs[index], amount, actual, yields)

    anyio.run(main)
    assert not seen, seen
    assert not [v for a in audits for v in a.violations]
    for ledger in (parent, *runs):  # everything settled: committed is exactly the actuals
        assert ledger.pending == 0 and ledger.outstanding == Usage()
        assert ledger.committed == ledger.actual
        assert _nonnegative(ledger.actual)


def test_a_run_refused_by_reservations_in_flight_waits_and_then_runs() -> None:
    """Issue 13 item 11: 2 of 3 calls in flight fill the eval-wide budget with their worst
    case, but settle far below it: the third waits for them instead of stopping."""
    parent = Ledger(Budget(credits=Decimal(10)), name="eval")
    worst = Usage(calls=1, credits=Decimal(5))
    order: list[str] = []

    async def run(name: str, actual: Decimal, delay: float) -> None:
        got = await parent.child(Budget(), name=name).reserve(worst)
        assert not isinstance(got, Refused), got.describe()
        order.append(f"{name} granted")
        await anyio.sleep(delay)
        await parent.reconcile(got, Usage(calls=1, credits=actual))
        order.append(f"{name} settled")

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(run, "a", Decimal(1), 0.05)
            tg.start_soon(run, "b", Decimal(1), 0.1)
            await anyio.sleep(0.01)
            tg.start_soon(run, "c", Decimal(1), 0)

    anyio.run(main)
    assert order.index("c granted") > order.index("a settled")
    assert parent.actual.credits == 3 and parent.committed.credits == 3


def test_a_reservation_that_cannot_fit_once_settled_is_refused_without_waiting() -> None:
    parent = Ledger(Budget(credits=Decimal(10)), name="eval")
    worst = Usage(calls=1, credits=Decimal(6))

    async def main() -> tuple[object, object]:
        first = await parent.child(Budget()).reserve(worst)
        assert isinstance(first, Reservation)
        await parent.reconcile(first, Usage(calls=1, credits=Decimal(5)))
        other = await parent.child(Budget()).reserve(Usage(calls=1, credits=Decimal(1)))
        assert isinstance(other, Reservation)  # in flight, settled 5 + 6 > 10 regardless
        with anyio.fail_after(1):
            third = await parent.child(Budget()).reserve(worst)
        return third, other

    third, _ = anyio.run(main)
    assert isinstance(third, Refused) and third.stop_reason is StopReason.MAX_CREDITS


def test_an_overshoot_refuses_every_later_reservation_with_the_amount() -> None:
    parent = Ledger(Budget(credits=Decimal(5)), name="eval")

    async def main() -> list[object]:
        got = await parent.child(Budget()).reserve(Usage(calls=1, credits=Decimal(1)))
        assert isinstance(got, Reservation)
        over = await parent.reconcile(got, Usage(calls=1, credits=Decimal(50)))
        later = await parent.child(Budget()).reserve(Usage(calls=1))  # even 0 credits
        return [over, later]

    over, later = anyio.run(main)
    assert over is not None and over.amount == 45
    assert "credits 50 > ceiling 5 (over by 45)" in over.describe()
    assert isinstance(later, Refused) and later.stop_reason is StopReason.OVER_CEILING


@pytest.mark.parametrize(
    "actual",
    [
        Usage(calls=-1, tokens=-500, credits=Decimal(-100), cost=Decimal("-0.5")),
        Usage(credits=Decimal("NaN")),
    ],
)
def test_reconcile_never_books_below_zero(actual: Usage) -> None:
    ledger = Ledger(Budget(credits=Decimal(3)))

    async def main() -> None:
        got = await ledger.reserve(Usage(calls=1, credits=Decimal(1)))
        assert isinstance(got, Reservation)
        await ledger.reconcile(got, actual)

    anyio.run(main)
    assert ledger.committed == ledger.actual == Usage()


def test_ledgers_built_in_turn_under_different_budgets_keep_their_own_ceilings() -> None:
    """A ledger reuses the ceilings of the budget the ledger before it was built with only when
    it is that very (frozen) budget: alternating budgets, equal or not, each keep their own."""
    one, two, another_one = Budget(calls=1), Budget(calls=2, tokens=50), Budget(calls=1)
    step = Usage(calls=1, tokens=20)

    async def second_reservation(budget: Budget) -> bool:
        ledger = Ledger(budget)
        await ledger.reserve(step)
        return isinstance(await ledger.reserve(step, wait=False), Reservation)

    async def go() -> list[bool]:
        return [await second_reservation(b) for b in (one, two, two, another_one, one, two)]

    assert anyio.run(go) == [False, True, True, False, False, True]
    assert Budget(tokens=7).get(Dimension.TOKENS) == 7 and two.get(Dimension.LATENCY) is None
    assert two.get("calls") == 2  # type: ignore[arg-type]  # a dimension's name, as before


def test_a_run_ledger_is_freed_by_reference_counting_alone() -> None:
    """A run's ledger holds no reference to itself, so it is freed when its run drops it: a
    cycle left each run's ledger (and its hook, and the journal's cell) to the cyclic collector,
    and an eval's memory grew with its runs until a full collection came (issue 16)."""
    parent = Ledger(Budget(credits=Decimal(100)), name="eval")

    async def one() -> None:
        run = parent.child(Budget(calls=5), name="run")
        got = await run.reserve(Usage(calls=1, credits=Decimal(1)))
        assert isinstance(got, Reservation)
        await run.reconcile(got, Usage(calls=1, credits=Decimal(1)))
        assert run.chain() == [run, parent]

    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what the collector finds unreachable is kept to look at
    try:
        for _ in range(3):
            anyio.run(one)
        gc.collect()
        left = [o for o in gc.garbage if isinstance(o, Ledger)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert left == []
    assert parent.committed.calls == 3 and parent.chain() == [parent]
