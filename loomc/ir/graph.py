"""The dependency graph of one pipeline x tier (``Pipeline.graph``)."""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from loomc.ir.model import StepNode


class StepGraph:
    """The dependency graph of one pipeline: nodes are step ids carrying a ``StepNode``, an
    edge ``a -> b`` says b waits for a, with the set of reasons (``kinds``) drawn from
    ``{"sees", "after", "guard"}``.

    A few dicts rather than a graph library: the algorithms needed here (topological order,
    one cycle, ancestors, the heaviest path) are a dozen lines each, and importing networkx
    cost ~270 ms of every ``loomc`` start. Iteration orders are insertion orders (declaration
    order), so every result is deterministic; ``find_cycle`` and ``topological_order`` return
    exactly what networkx's ``find_cycle`` and ``lexicographical_topological_sort`` (keyed on
    declaration order) returned, which the diagnostics' goldens pin.
    """

    def __init__(self, steps: Mapping[str, StepNode] | None = None) -> None:
        self._steps: dict[str, StepNode] = {}
        self._succ: dict[str, dict[str, set[str]]] = {}  # a -> {b: kinds}
        self._pred: dict[str, dict[str, set[str]]] = {}  # b -> {a: kinds}, the same sets
        self._order: list[str] | None = None  # topological order, [] when cyclic
        self._cyclic = False
        for step in (steps or {}).values():
            self.add(step)
        self.link_all()

    def add(self, step: StepNode) -> None:
        if step.id not in self._steps:
            self._succ[step.id] = {}
            self._pred[step.id] = {}
        self._steps[step.id] = step
        self._order = None

    def link_all(self) -> None:
        for step in list(self._steps.values()):
            for dep, kind in step.edges_in():
                if dep in self._steps:
                    kinds = self._succ[dep].get(step.id)
                    if kinds is None:
                        kinds = self._succ[dep][step.id] = self._pred[step.id][dep] = set()
                    kinds.add(kind)
        self._order = None

    def __contains__(self, step_id: object) -> bool:
        return step_id in self._steps

    def __len__(self) -> int:
        return len(self._steps)

    def step(self, step_id: str) -> StepNode:
        return self._steps[step_id]

    def steps(self) -> Iterator[StepNode]:
        yield from self._steps.values()

    def ids(self) -> list[str]:
        return list(self._steps)

    def predecessors(self, step_id: str) -> list[str]:
        return list(self._pred[step_id])

    def successors(self, step_id: str) -> list[str]:
        return list(self._succ[step_id])

    def ancestors(self, step_id: str) -> set[str]:
        seen: set[str] = set()
        stack = list(self._pred[step_id])
        while stack:
            sid = stack.pop()
            if sid not in seen:
                seen.add(sid)
                stack.extend(self._pred[sid])
        seen.discard(step_id)
        return seen

    def edges(self) -> list[tuple[str, str, frozenset[str]]]:
        return [(u, v, frozenset(k)) for u, out in self._succ.items() for v, k in out.items()]

    def is_acyclic(self) -> bool:
        return self._sorted() is not None

    def find_cycle(self) -> list[str] | None:
        """One cycle as a path ``a -> b -> a`` (dbt's habit), or None.

        Depth-first over edges from each step in declaration order, successors in the order
        their edges were added: the first edge that closes the active path ends the search.
        """
        if self.is_acyclic():
            return None
        explored: set[str] = set()
        for start in self._steps:
            if start in explored:
                continue
            path: list[tuple[str, str]] = []
            seen = {start}
            active = {start}
            previous: str | None = None
            for tail, head in self._edge_dfs(start):
                if head in explored:
                    continue
                if previous is not None and tail != previous:
                    # backtracked: drop edges until the path ends where this edge starts
                    while True:
                        if not path:
                            active = {tail}
                            break
                        active.remove(path.pop()[1])
                        if path and path[-1][1] == tail:
                            break
                path.append((tail, head))
                if head in active:
                    first = next(i for i, (u, _v) in enumerate(path) if u == head)
                    cycle = [u for u, _v in path[first:]]
                    return [*cycle, cycle[0]]
                seen.add(head)
                active.add(head)
                previous = head
            explored |= seen
        return None  # unreachable: a graph that is not acyclic has a cycle

    def _edge_dfs(self, start: str) -> Iterator[tuple[str, str]]:
        """Every edge reachable from ``start``, each once, in depth-first order."""
        visited: set[tuple[str, str]] = set()
        pending: dict[str, Iterator[str]] = {}
        stack = [start]
        while stack:
            node = stack[-1]
            if node not in pending:
                pending[node] = iter(list(self._succ[node]))
            head = next(pending[node], None)
            if head is None:
                stack.pop()
            elif (node, head) not in visited:
                visited.add((node, head))
                stack.append(head)
                yield node, head

    def topological_order(self) -> list[str]:
        """Deterministic order: ties broken by declaration order. Raises ValueError on a cycle
        (the checker reports cycles before anything asks for an order)."""
        order = self._sorted()
        if order is None:
            raise ValueError("the step graph has a cycle")
        return list(order)

    def _sorted(self) -> list[str] | None:
        """Kahn's algorithm with a heap on declaration index (None when there is a cycle);
        computed once per graph."""
        if self._order is None:
            index = {sid: i for i, sid in enumerate(self._steps)}
            waiting = {sid: len(preds) for sid, preds in self._pred.items() if preds}
            ready = [index[sid] for sid, preds in self._pred.items() if not preds]
            heapq.heapify(ready)
            ids = list(self._steps)
            order: list[str] = []
            while ready:
                sid = ids[heapq.heappop(ready)]
                order.append(sid)
                for child in self._succ[sid]:
                    waiting[child] -= 1
                    if not waiting[child]:
                        del waiting[child]
                        heapq.heappush(ready, index[child])
            self._cyclic = bool(waiting)
            self._order = [] if self._cyclic else order
        return None if self._cyclic else self._order

    def longest_path(self, weight: Mapping[str, int]) -> tuple[int, list[str]]:
        """Heaviest source-to-sink path by node weight (latency: parallel branches count once).

        Ties go to the first predecessor (in edge order) and the first end step (in topological
        order). Each step keeps its best total and the predecessor it came from, and the path is
        walked back once at the end (copying paths per step made a 10,000-step chain quadratic).
        """
        total: dict[str, int] = {}
        came_from: dict[str, str | None] = {}
        for sid in self.topological_order():
            best_pred: str | None = None
            for pred in self._pred[sid]:
                if best_pred is None or total[pred] > total[best_pred]:
                    best_pred = pred
            came_from[sid] = best_pred
            total[sid] = (total[best_pred] if best_pred is not None else 0) + weight.get(sid, 0)
        if not total:
            return 0, []
        end = max(total, key=total.__getitem__)
        path: list[str] = []
        node: str | None = end
        while node is not None:
            path.append(node)
            node = came_from[node]
        return total[end], path[::-1]


__all__ = ["StepGraph"]
