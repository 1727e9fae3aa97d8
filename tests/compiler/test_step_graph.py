"""StepGraph answers exactly as networkx did before it replaced it (same cycle, same order, same
neighbours), on arbitrary graphs with cycles, self-loops and edges of several kinds.

networkx is a test-only dependency now: it is the reference implementation here."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loomc.ir.model import StepFact, StepGraph, StepNode

nx = pytest.importorskip("networkx")


def _step(sid: str, sees: tuple[str, ...], after: tuple[str, ...], guard: str | None) -> StepNode:
    return StepNode(
        id=sid,
        role="writer",
        worker="w",
        model="p/m",
        provider="p",
        provider_type="mock",
        group="g",
        task="t",
        max_tokens=10,
        timeout_ms=1000,
        retries=0,
        credits=Decimal(1),
        p95_ms=None,
        pricing=None,
        guard=StepFact(guard, "ok") if guard else None,
        sees=sees,
        after=after,
    )


@st.composite
def graphs(draw: st.DrawFn) -> dict[str, StepNode]:
    n = draw(st.integers(1, 9))
    ids = [f"s{i}" for i in range(n)]
    refs = st.sampled_from([*ids, "missing"])  # an unknown step is left out of the graph
    order = draw(st.permutations(ids))  # declaration order is not the numbering
    return {
        sid: _step(
            sid,
            tuple(draw(st.lists(refs, max_size=3))),
            tuple(draw(st.lists(refs, max_size=2))),
            draw(st.none() | refs),
        )
        for sid in order
    }


def _reference(steps: dict[str, StepNode]) -> object:
    """The graph networkx built from the same steps, in the same order."""
    g = nx.DiGraph()
    for step in steps.values():
        g.add_node(step.id)
    for step in steps.values():
        deps = [*step.sees, *step.after, *([step.guard.step] if step.guard else [])]
        for dep in deps:
            if dep in g:
                g.add_edge(dep, step.id)
    return g


@settings(max_examples=400, deadline=None)
@given(graphs())
def test_step_graph_matches_networkx(steps: dict[str, StepNode]) -> None:
    ours = StepGraph(steps)
    ref = _reference(steps)
    assert ours.ids() == list(ref.nodes)
    assert [(u, v) for u, v, _ in ours.edges()] == list(ref.edges)
    for sid in ref.nodes:
        assert ours.predecessors(sid) == list(ref.predecessors(sid))
        assert ours.successors(sid) == list(ref.successors(sid))
        assert ours.ancestors(sid) == nx.ancestors(ref, sid)
    assert ours.is_acyclic() == nx.is_directed_acyclic_graph(ref)
    try:
        edges = nx.find_cycle(ref)
    except nx.NetworkXNoCycle:
        index = {sid: i for i, sid in enumerate(ref.nodes)}
        expected = list(nx.lexicographical_topological_sort(ref, key=lambda s: index[s]))
        assert ours.find_cycle() is None
        assert ours.topological_order() == expected
    else:
        path = [u for u, _v in edges]
        assert ours.find_cycle() == [*path, path[0]]
        with pytest.raises(ValueError, match="cycle"):
            ours.topological_order()


def _longest_path_reference(graph: StepGraph, weight: dict[str, int]) -> tuple[int, list[str]]:
    """The straightforward version (a path copied per step) the linear one replaced."""
    best: dict[str, tuple[int, list[str]]] = {}
    for sid in graph.topological_order():
        preds = [best[p] for p in graph.predecessors(sid)]
        base = max(preds, key=lambda t: t[0]) if preds else (0, [])
        best[sid] = (base[0] + weight.get(sid, 0), [*base[1], sid])
    return max(best.values(), key=lambda t: t[0]) if best else (0, [])


@settings(max_examples=300, deadline=None)
@given(graphs(), st.lists(st.integers(0, 5), min_size=9, max_size=9))
def test_longest_path_matches_the_reference(steps: dict[str, StepNode], w: list[int]) -> None:
    graph = StepGraph(steps)
    if graph.is_acyclic():  # small weights: many ties, which must break the same way
        weight = {f"s{i}": w[i] for i in range(9)}
        assert graph.longest_path(weight) == _longest_path_reference(graph, weight)


def test_edge_kinds_are_merged_per_pair() -> None:
    a = _step("a", (), (), None)
    b = _step("b", ("a",), ("a",), "a")
    graph = StepGraph({"a": a, "b": b})
    assert graph.edges() == [("a", "b", frozenset({"sees", "after", "guard"}))]
    assert graph.longest_path({"a": 5, "b": 7}) == (12, ["a", "b"])
