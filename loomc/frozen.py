"""Immutable value classes without ``dataclasses``' code generation, for modules on the path of
every ``loomc check``.

On Python 3.11 ``@dataclass(frozen=True, slots=True)`` compiles each generated method (init,
repr, eq, hash, setattr, delattr, the orderings) with its own ``exec`` and then builds the class
a second time for its slots: about 1 ms per class; and importing ``dataclasses`` imports
``inspect`` (with ``ast``, ``dis``, ``tokenize``), ~10 ms more. A class deriving from
:class:`Frozen` is written like such a dataclass (annotated fields, defaults, :func:`field` for
``compare``/``repr``/``default_factory``, ``order=True`` as a class keyword) and gets exactly the
dataclass's behaviour, for a fraction of the cost: equality and hash over the compared fields as
one tuple (the same hash values, so the same set orders), the orderings, the same ``repr``,
``FrozenInstanceError`` on assignment, slots, pattern matching by keyword and position,
pickling and copying. Type checkers see a frozen dataclass (``dataclass_transform``).

What callers and libraries ask of a dataclass by introspection — ``dataclasses.replace``,
``fields``, ``asdict``, ``is_dataclass``, pydantic fields typed with the class — is answered by a
real dataclass twin of the class, built from the same fields on first use (so ``dataclasses`` is
imported only by whoever introspects). :func:`replace` does the common job without it.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from types import FunctionType
from typing import Any, ClassVar, TypeVar, dataclass_transform, overload

set_field = object.__setattr__
_T = TypeVar("_T")
_F = TypeVar("_F", bound="Frozen")


class _Absent:
    """The default of a parameter whose field has a ``default_factory``."""

    def __repr__(self) -> str:
        return "<factory>"


_ABSENT: Any = _Absent()


class _Spec:
    """What :func:`field` returns: read (and removed) by the metaclass."""

    __slots__ = ("compare", "default", "factory", "repr")

    def __init__(
        self, default: Any, factory: Callable[[], Any] | None, compare: bool, repr: bool
    ) -> None:
        self.default, self.factory, self.compare, self.repr = default, factory, compare, repr


@overload
def field(*, default: _T, compare: bool = ..., repr: bool = ...) -> _T: ...
@overload
def field(*, default_factory: Callable[[], _T], compare: bool = ..., repr: bool = ...) -> _T: ...
def field(
    *,
    default: Any = _ABSENT,
    default_factory: Callable[[], Any] | None = None,
    compare: bool = True,
    repr: bool = True,
) -> Any:
    """``dataclasses.field`` for a :class:`Frozen` class: a default or a factory, and whether the
    field is compared (equality, hash, order) and shown in the ``repr``."""
    return _Spec(default, default_factory, compare, repr)


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
class FrozenMeta(type):
    """Makes the annotated names of a class body its fields and slots (defaults kept aside)."""

    def __new__(
        mcls, name: str, bases: tuple[type, ...], ns: dict[str, Any], order: bool = False
    ) -> FrozenMeta:
        notes = ns.get("__annotations__", {})
        fields = tuple(f for f, note in notes.items() if not str(note).startswith("ClassVar"))
        defaults: dict[str, Any] = {}
        factories: dict[str, Callable[[], Any]] = {}
        uncompared, hidden = [], list(ns.get("_hidden", ()))
        for f in fields:
            if f not in ns:
                continue
            value = ns.pop(f)
            if isinstance(value, _Spec):
                if value.factory is not None:
                    factories[f] = value.factory
                elif value.default is not _ABSENT:
                    defaults[f] = value.default
                if not value.compare:
                    uncompared.append(f)
                if not value.repr:
                    hidden.append(f)
            else:
                defaults[f] = value
        ns["__slots__"] = fields
        cls = super().__new__(mcls, name, bases, ns)
        if not fields:  # the base class itself
            return cls
        compared = ns.get("_compared") or tuple(f for f in fields if f not in uncompared)
        getter = attrgetter(*compared) if compared else (lambda _: ())
        derived = {
            "__init__": _init(cls, fields, defaults, factories),
            "_fields": fields,
            "_compared": compared,
            "_hidden": tuple(hidden),
            "_defaults": defaults,
            "_factories": factories,
            "_key": staticmethod(getter if len(compared) != 1 else lambda o: (getter(o),)),
            "_shown": tuple(f for f in fields if f not in hidden),
            "__match_args__": fields,
        }
        if order:
            derived.update(_ORDER)
        for attr, value in derived.items():
            setattr(cls, attr, value)
        return cls


def _init(
    cls: type,
    fields: tuple[str, ...],
    defaults: dict[str, Any],
    factories: dict[str, Callable[[], Any]],
) -> Any:
    """The class's ``__init__``: as fast as a dataclass's (one ``object.__setattr__`` per
    field), positional or keyword arguments, defaults, and Python's own errors for a wrong call.
    (One ``__init__`` shared by every class, reading ``_fields``, costs nothing to create but is
    ~2.5x slower per node: ~2,500 nodes per check.) Compiling its source for every class cost
    ~0.15 ms a class, ~45 classes at every check: classes without a factory get a copy of one
    compiled template per number of fields, with the field names swapped in."""
    first_default = len(fields)
    for i, f in enumerate(fields):
        if f in defaults or f in factories:
            first_default = min(first_default, i)
        elif first_default < i:
            raise TypeError(f"non-default argument {f!r} follows default argument")
    if factories:
        init = _compiled_init(fields, defaults, factories)
    else:
        template = _template(len(fields))
        names = dict(zip(_placeholders(len(fields)), fields, strict=True))
        code = template.__code__.replace(
            co_varnames=("self", *fields),
            co_consts=tuple(
                names.get(c, c) if type(c) is str else c for c in template.__code__.co_consts
            ),
            co_qualname=f"{cls.__qualname__}.__init__",
        )
        init = FunctionType(code, template.__globals__, "__init__")
        init.__defaults__ = tuple(defaults[f] for f in fields[first_default:]) or None
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _placeholders(n: int) -> list[str]:
    return [f"_field_{i}_" for i in range(n)]


_TEMPLATES: dict[int, Any] = {}


def _template(n: int) -> Any:
    """``def __init__(self, _field_0_, ...): _set(self, "_field_0_", _field_0_) ...``, compiled
    once per number of fields."""
    found = _TEMPLATES.get(n)
    if found is None:
        names = _placeholders(n)
        params = "".join(f", {f}" for f in names)
        body = "".join(f"\n    _set(self, {f!r}, {f})" for f in names) or "\n    pass"
        namespace: dict[str, Any] = {"_set": set_field}
        exec(f"def __init__(self{params}):{body}", namespace)  # placeholder names only
        found = _TEMPLATES[n] = namespace["__init__"]
    return found


def _compiled_init(
    fields: tuple[str, ...], defaults: dict[str, Any], factories: dict[str, Callable[[], Any]]
) -> Any:
    """An ``__init__`` compiled from the fields' source: for classes with a default factory."""
    params = ", ".join(
        f"{f}=_default_{f}" if f in defaults else f"{f}=_absent" if f in factories else f
        for f in fields
    )
    body = "".join(
        f"\n    _set(self, {f!r}, _factory_{f}() if {f} is _absent else {f})"
        if f in factories
        else f"\n    _set(self, {f!r}, {f})"
        for f in fields
    )
    namespace: dict[str, Any] = {f"_default_{f}": value for f, value in defaults.items()}
    namespace.update({f"_factory_{f}": make for f, make in factories.items()})
    namespace["_set"], namespace["_absent"] = set_field, _ABSENT
    exec(f"def __init__(self, {params}):{body}", namespace)  # our field names only
    return namespace["__init__"]


def _ordering(name: str, compare: Callable[[Any, Any], bool]) -> Callable[[Any, Any], Any]:
    def method(self: Frozen, other: object) -> Any:
        if other.__class__ is self.__class__:
            return compare(self._key(self), self._key(other))
        return NotImplemented

    method.__name__ = name
    return method


_ORDER = {
    "__lt__": _ordering("__lt__", lambda a, b: a < b),
    "__le__": _ordering("__le__", lambda a, b: a <= b),
    "__gt__": _ordering("__gt__", lambda a, b: a > b),
    "__ge__": _ordering("__ge__", lambda a, b: a >= b),
}
"""``order=True``: tuples of the compared fields, between instances of the same class only."""


class _Twin:
    """``__dataclass_fields__`` / ``__dataclass_params__`` of a Frozen class: those of a real
    dataclass with the same fields, built (importing ``dataclasses``) when first asked for. So
    ``dataclasses.replace``/``fields``/``asdict``/``is_dataclass`` and pydantic see the class as
    the dataclass it is written as; the base class itself has no fields and is no dataclass."""

    def __init__(self, attr: str) -> None:
        self.attr = attr

    def __get__(self, obj: object, owner: type[Frozen]) -> Any:
        if not owner.__dict__.get("_fields"):
            raise AttributeError(self.attr)
        twin = owner.__dict__.get("_twin")
        if twin is None:
            twin = _dataclass_twin(owner)
            type.__setattr__(owner, "_twin", twin)
        return getattr(twin, self.attr)


def _dataclass_twin(cls: type[Frozen]) -> type[Any]:
    import dataclasses

    compared = cls._compared or cls._fields

    def spec(f: str) -> Any:
        extra: dict[str, Any] = {}
        if f in cls._defaults:
            extra["default"] = cls._defaults[f]
        elif f in cls._factories:
            extra["default_factory"] = cls._factories[f]
        return dataclasses.field(compare=f in compared, repr=f in cls._shown, **extra)

    notes = cls.__annotations__
    return dataclasses.make_dataclass(
        cls.__name__,
        [(f, notes[f], spec(f)) for f in cls._fields],
        frozen=True,
        order="__lt__" in cls.__dict__,
        namespace={"__module__": cls.__module__},
    )


def replace(obj: _F, **changes: Any) -> _F:
    """``dataclasses.replace`` for a Frozen instance, without importing ``dataclasses``."""
    values = {f: getattr(obj, f) for f in obj._fields}
    values.update(changes)
    return obj.__class__(**values)


class Frozen(metaclass=FrozenMeta):
    _fields: ClassVar[tuple[str, ...]] = ()
    _compared: ClassVar[tuple[str, ...] | None] = None  # None: every field
    _hidden: ClassVar[tuple[str, ...]] = ()
    _defaults: ClassVar[dict[str, Any]] = {}
    _factories: ClassVar[dict[str, Callable[[], Any]]] = {}
    _key: ClassVar[Any]
    _shown: ClassVar[tuple[str, ...]]
    __dataclass_fields__: ClassVar[Any] = _Twin("__dataclass_fields__")
    __dataclass_params__: ClassVar[Any] = _Twin("__dataclass_params__")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return bool(self._key(self) == self._key(other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._key(self))

    def __repr__(self) -> str:
        shown = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._shown)
        return f"{self.__class__.__qualname__}({shown})"

    def __setattr__(self, name: str, value: Any) -> None:
        from dataclasses import FrozenInstanceError  # the error path only

        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (self.__class__, tuple(getattr(self, f) for f in self._fields))
