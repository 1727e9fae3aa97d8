"""The AST and IR nodes, diagnostics, budgets and worst cases are hand-written Frozen classes
(loomc/frozen.py) for start-up time; they must behave exactly as the frozen slotted dataclasses
they replaced. The oracle: a real dataclass twin of each class, made here from the same field
list."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from loomc import diagnostics, frozen, units
from loomc.checker import worstcase
from loomc.diagnostics import Span
from loomc.frozen import Frozen
from loomc.ir import model
from loomc.project.workspace import Project
from loomc.syntax import ast
from loomc.syntax.parser import parse_file, parse_text

ROOT = Path(__file__).resolve().parents[2]
MODULES = (ast, model, diagnostics, units, worstcase)
CLASSES = list(
    {
        c: None
        for module in MODULES
        for c in vars(module).values()
        if isinstance(c, type) and issubclass(c, Frozen) and c is not Frozen
    }
)


def _twin(cls: type[Frozen]) -> type[Any]:
    """The dataclass this class replaced: same name, fields, compare and repr flags."""
    compared = cls._fields if cls._compared is None else cls._compared
    fields = [
        (
            name,
            Any,
            dataclasses.field(compare=name in compared, repr=name not in cls._hidden),
        )
        for name in cls._fields
    ]
    order = "__lt__" in vars(cls)
    twin = dataclasses.make_dataclass(cls.__name__, fields, frozen=True, slots=True, order=order)
    twin.__qualname__ = cls.__qualname__
    return twin


def _as_twin(value: Any, twins: dict[type[Any], type[Any]]) -> Any:
    if isinstance(value, Frozen):
        twin = twins[type(value)]
        return twin(*(_as_twin(getattr(value, f), twins) for f in value._fields))
    if isinstance(value, tuple):
        return tuple(_as_twin(v, twins) for v in value)
    return value


def _nodes(value: Any) -> list[Any]:
    """Every Frozen node in ``value``, depth first."""
    found = []
    if isinstance(value, Frozen):
        found.append(value)
        for f in value._fields:
            found += _nodes(getattr(value, f))
    elif isinstance(value, tuple):
        for v in value:
            found += _nodes(v)
    return found


EXTRA = """pipeline extra {
  step a : w(w) when not ("security" in risk.signals) and input.length > 5 and true
}
"""
"""What the project's pipelines do not write: `not`, `in`, literals in a guard."""


def _project_nodes() -> list[Any]:
    modules = [parse_file(p, cache=False)[0] for p in sorted((ROOT / "pipelines").glob("*.loom"))]
    project = Project.load(ROOT)
    pipelines, _ = project.pipelines()
    ir: list[Any] = []
    for pipeline in pipelines:
        ir += [pipeline, *pipeline.requires, worstcase.worst_case(pipeline)]
        for step in pipeline.graph.steps():
            ir += [step, step.guard, step.pricing]
    ir += [*project.diagnostics, units.Usage(1, 2, Decimal("0.5"))]
    span = Span.point("a.loom", 2)
    ir.append(diagnostics.Diagnostic("LOOM1", diagnostics.Severity.ERROR, "m", span, "h", (
        diagnostics.Related(span, "here"),
    )))  # fmt: skip
    extra = parse_text(EXTRA, "extra.loom")[0]
    ir.append(model.Not(model.Contains(model.Const("security"), model.Fact(("risk", "signals")))))
    return _nodes((*modules, extra)) + _nodes(tuple(ir))


NODES = _project_nodes()


def test_every_class_is_exercised() -> None:
    seen = {type(n) for n in NODES}
    assert [c for c in CLASSES if c not in seen] == []
    # every AST node; the IR's expressions, Pricing, Require, StepNode, Pipeline; Span, Related,
    # Diagnostic; Budget, Usage; StepCost, WorstCase
    assert len(CLASSES) == 16 + 13 + 3 + 2 + 2


def test_repr_eq_and_hash_are_the_dataclasses() -> None:
    twins = {c: _twin(c) for c in CLASSES}
    previous: dict[type[Any], Any] = {}
    for node in NODES:
        twin = _as_twin(node, twins)
        assert repr(node) == repr(twin)
        assert hash(node) == hash(twin)  # the same values: sets iterate in the same order
        other = previous.get(type(node), node)  # the last node of its class: equal or not
        assert (node == other) == (twin == _as_twin(other, twins))
        assert (node != other) == (twin != _as_twin(other, twins))
        previous[type(node)] = node
    assert [c.__match_args__ for c in CLASSES] == [twins[c].__match_args__ for c in CLASSES]


def test_fields_left_out_of_equality_and_repr_stay_out() -> None:
    a = model.Require("independent", ("x", "y"), Span.point("a.loom", 1))
    b = model.Require("independent", ("x", "y"), Span.point("b.loom", 9))
    assert a == b and hash(a) == hash(b)
    assert model.Require("independent", ("x",)) != a
    module = ast.Module("p.loom", (), source="secret text")
    assert "secret" not in repr(module)
    assert module != ast.Module("p.loom", (), source="other")  # compared, only not shown


def test_nodes_are_frozen_and_survive_pickle_and_copy() -> None:
    for node in NODES:
        for name in node._fields:
            with pytest.raises(dataclasses.FrozenInstanceError):
                setattr(node, name, None)
            with pytest.raises(dataclasses.FrozenInstanceError):
                delattr(node, name)
        again, deep = pickle.loads(pickle.dumps(node)), copy.deepcopy(node)
        if isinstance(node, model.Pipeline):  # its StepGraph compares by identity, as before
            assert list(again.graph.steps()) == list(node.graph.steps())
            again = dataclasses.replace(again, graph=node.graph)
            deep = dataclasses.replace(deep, graph=node.graph)
        assert again == node and deep == node and copy.copy(node) == node
        with pytest.raises(AttributeError):
            node.__dict__  # noqa: B018 (slots, as before)


def test_construction_by_keyword_with_defaults_and_the_errors_of_a_dataclass() -> None:
    span = Span.point("f.loom")
    name = ast.Name("a", span)
    step = ast.StepDecl(
        name=name, role=name, worker=name, sees=(), after=(), when=None, task=None,
        max_tokens=None, timeout=None, retries=None, span=span,
    )  # fmt: skip
    assert step.duplicates == () and step == ast.StepDecl(
        name, name, name, (), (), None, None, None, None, None, span, ()
    )
    assert ast.Module("p", ()).source == "" and model.Require("k", ()).span is None
    twin = _twin(ast.Name)
    for args, kwargs in (((), {}), (("a",), {}), (("a", span, 1), {}), (("a",), {"value": "b"})):
        with pytest.raises(TypeError):
            twin(*args, **kwargs)
        with pytest.raises(TypeError):
            ast.Name(*args, **kwargs)
    with pytest.raises(TypeError):
        ast.Name("a", span, nickname="b")  # type: ignore[call-arg]


def test_different_classes_with_equal_fields_differ() -> None:
    span = Span.point("f.loom")
    assert ast.Name("x", span) != ast.Str("x", span)
    assert model.And((model.Const(1),)) != model.Or((model.Const(1),))
    assert model.Const(1) == model.Const(1) and model.Const(1) != 1
    match model.Compare("==", model.Fact(("tier",)), model.Const("lean")):
        case model.Compare("==", model.Fact(path), right):
            assert path == ("tier",) and right == model.Const("lean")
        case _:
            pytest.fail("positional patterns match as on the dataclass")


def test_ordering_is_the_dataclasses() -> None:
    spans = [
        Span("b.loom", 2, 1, 2, 3), Span("a.loom", 9, 1, 9, 2), Span("a.loom", 2, 5, 2, 6),
        Span("a.loom", 2, 5, 2, 6), Span("a.loom", 2, 4, 3, 1),
    ]  # fmt: skip
    twin = _twin(Span)
    as_twins = [twin(*(getattr(s, f) for f in s._fields)) for s in spans]
    assert [repr(s) for s in sorted(spans)] == [repr(t) for t in sorted(as_twins)]
    for a in spans:
        for b in spans:
            assert (a < b, a <= b, a > b, a >= b) == (
                _as_twin(a, {Span: twin}) < _as_twin(b, {Span: twin}),
                _as_twin(a, {Span: twin}) <= _as_twin(b, {Span: twin}),
                _as_twin(a, {Span: twin}) > _as_twin(b, {Span: twin}),
                _as_twin(a, {Span: twin}) >= _as_twin(b, {Span: twin}),
            )
    with pytest.raises(TypeError):
        assert spans[0] < model.Const(1)  # type: ignore[operator]


def test_dataclasses_introspection_still_works() -> None:
    """Callers (and pydantic, for Budget and Usage) use dataclasses' functions on these classes:
    they see the dataclass each class was, built on first use."""
    step = next(n for n in NODES if isinstance(n, model.StepNode))
    pipeline = next(n for n in NODES if isinstance(n, model.Pipeline))
    assert dataclasses.is_dataclass(step) and not dataclasses.is_dataclass(Frozen)
    for cls in CLASSES:
        fields = dataclasses.fields(cls)
        assert [f.name for f in fields] == list(cls._fields)
        twin_fields = dataclasses.fields(_twin(cls))
        assert [f.compare for f in fields] == [f.compare for f in twin_fields]
        assert [f.repr for f in fields] == [f.repr for f in twin_fields]
    assert dataclasses.replace(step, role="judge") == frozen.replace(step, role="judge")
    assert dataclasses.replace(step, role="judge").role == "judge" and step.role != "judge"
    assert dataclasses.replace(pipeline, tier="x").tier == "x"
    budget = units.Budget(calls=3, cost=Decimal("0.5"))
    assert dataclasses.asdict(budget) == {
        "calls": 3, "tokens": None, "credits": None, "cost": Decimal("0.5"), "latency_ms": None,
    }  # fmt: skip
    assert budget.with_value(units.Dimension.LATENCY, 9) == units.Budget(
        3, None, None, Decimal("0.5"), 9
    )
    with pytest.raises(TypeError):
        frozen.replace(budget, seconds=3)


def test_default_factories_give_each_instance_its_own() -> None:
    class Holder(Frozen):
        name: str
        items: dict[str, int] = frozen.field(default_factory=dict, compare=False)
        note: str = frozen.field(default="n", repr=False)

    a, b = Holder("a"), Holder("a")
    assert a.items == {} and a.items is not b.items and a == Holder("a", {"x": 1})
    assert (
        repr(a)
        == "test_default_factories_give_each_instance_its_own.<locals>.Holder(name='a', items={})"
    )
    assert Holder("a", {"x": 1}, "m").note == "m" and a.note == "n"
    assert [f.default_factory for f in dataclasses.fields(Holder)][1] is dict


def test_wrong_calls_raise_the_dataclasses_messages() -> None:
    """Each class's ``__init__`` is a copy of a template per field count with its names swapped
    in: Python's own errors name the class and its fields as the dataclass's do."""
    span = Span.point("f.loom")
    for cls, args, kwargs in (
        (ast.Name, ("a",), {}),
        (ast.Name, ("a", span, 3), {}),
        (ast.Name, ("a",), {"spam": 1}),
        (ast.Name, ("a", span), {"value": "b"}),
        (units.Budget, (1, 2, 3, 4, 5, 6), {}),
        (Span, (), {"file": "f"}),
    ):
        with pytest.raises(TypeError) as ours:
            cls(*args, **kwargs)
        twin = dataclasses.make_dataclass(
            cls.__name__,
            [(f, Any, dataclasses.field(**({"default": cls._defaults[f]} if f in cls._defaults else {})))
             for f in cls._fields],
            frozen=True,
        )  # fmt: skip
        with pytest.raises(TypeError) as theirs:
            twin(*args, **kwargs)
        assert str(ours.value) == str(theirs.value)
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):

        class Bad(Frozen):
            a: int = 1
            b: int
