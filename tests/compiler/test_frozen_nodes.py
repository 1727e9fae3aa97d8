"""The AST and IR expression nodes are hand-written Frozen classes (loomc/syntax/frozen.py) for
start-up time; they must behave exactly as the frozen slotted dataclasses they replaced. The
oracle: a real dataclass twin of each class, made here from the same field list."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from pathlib import Path
from typing import Any

import pytest

from loomc.diagnostics import Span
from loomc.ir import model
from loomc.project.workspace import Project
from loomc.syntax import ast
from loomc.syntax.frozen import Frozen
from loomc.syntax.parser import parse_file, parse_text

ROOT = Path(__file__).resolve().parents[2]
CLASSES = [
    *(c for c in vars(ast).values() if isinstance(c, type) and issubclass(c, Frozen)),
    *(c for c in vars(model).values() if isinstance(c, type) and issubclass(c, Frozen)),
]
CLASSES = [c for c in CLASSES if c is not Frozen]


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
    twin = dataclasses.make_dataclass(cls.__name__, fields, frozen=True, slots=True)
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
        ir += list(pipeline.requires)
        for step in pipeline.graph.steps():
            ir += [step.guard, step.pricing]
    extra = parse_text(EXTRA, "extra.loom")[0]
    ir.append(model.Not(model.Contains(model.Const("security"), model.Fact(("risk", "signals")))))
    return _nodes((*modules, extra)) + _nodes(tuple(ir))


NODES = _project_nodes()


def test_every_class_is_exercised() -> None:
    seen = {type(n) for n in NODES}
    assert [c for c in CLASSES if c not in seen] == []
    assert len(CLASSES) == 16 + 11  # every AST node; the IR's expressions, Pricing, Require


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
        assert pickle.loads(pickle.dumps(node)) == node
        assert copy.deepcopy(node) == node and copy.copy(node) == node
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
