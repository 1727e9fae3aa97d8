"""Immutable value classes without ``dataclasses``' code generation, for modules on the path of
every ``loomc check``.

On Python 3.11 ``@dataclass(frozen=True, slots=True)`` compiles each generated method (init,
repr, eq, hash, setattr, delattr) with its own ``exec`` and then builds the class a second time
for its slots: about 1 ms per class, ~25 ms for the AST and the IR's expression nodes at every
start. A class deriving from :class:`Frozen` is written like such a dataclass (annotated fields,
defaults) and gets exactly the dataclass's behaviour, for a fraction of the cost: equality
and hash over the compared fields as one tuple (the same hash values, so the same set orders),
the same ``repr``, ``FrozenInstanceError`` on assignment, slots, pattern matching by keyword and
position, pickling and copying. ``_compared`` (a ``field(compare=False)``) and ``_hidden`` (a
``field(repr=False)``) name the exceptions. Type checkers see a frozen dataclass
(``dataclass_transform``). What it does not give is ``dataclasses.replace``/``fields``; nothing
uses them on these classes (the IR's ``Pipeline`` and ``StepNode``, which are replaced, stay
dataclasses).
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from operator import attrgetter
from typing import Any, ClassVar, dataclass_transform

set_field = object.__setattr__


@dataclass_transform(frozen_default=True)
class FrozenMeta(type):
    """Makes the annotated names of a class body its fields and slots (defaults kept aside)."""

    def __new__(mcls, name: str, bases: tuple[type, ...], ns: dict[str, Any]) -> FrozenMeta:
        notes = ns.get("__annotations__", {})
        fields = tuple(f for f, note in notes.items() if not str(note).startswith("ClassVar"))
        defaults = {f: ns.pop(f) for f in fields if f in ns}
        ns["__slots__"] = fields
        cls = super().__new__(mcls, name, bases, ns)
        if not fields:  # the base class itself
            return cls
        compared = ns.get("_compared") or fields
        getter = attrgetter(*compared) if compared else (lambda _: ())
        derived = {
            "__init__": _init(cls, fields, defaults),
            "_fields": fields,
            "_key": staticmethod(getter if len(compared) != 1 else lambda o: (getter(o),)),
            "_shown": tuple(f for f in fields if f not in ns.get("_hidden", ())),
            "__match_args__": fields,
        }
        for attr, value in derived.items():
            setattr(cls, attr, value)
        return cls


def _init(cls: type, fields: tuple[str, ...], defaults: dict[str, Any]) -> Any:
    """The class's ``__init__``, compiled from its fields in one small ``exec`` (~0.1 ms; a
    dataclass runs six, with more machinery around them, ~1 ms): as fast as a dataclass's,
    positional or keyword arguments, defaults, and Python's own errors for a wrong call. (One
    ``__init__`` shared by every class, reading ``_fields``, costs nothing to create but is
    ~2.5x slower per node: ~2,500 nodes per check.)"""
    params = ", ".join(f"{f}=_default_{f}" if f in defaults else f for f in fields)
    body = "".join(f"\n    _set(self, {f!r}, {f})" for f in fields)
    namespace: dict[str, Any] = {f"_default_{f}": value for f, value in defaults.items()}
    namespace["_set"] = set_field
    exec(f"def __init__(self, {params}):{body}", namespace)  # our field names only
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


class Frozen(metaclass=FrozenMeta):
    _fields: ClassVar[tuple[str, ...]] = ()
    _compared: ClassVar[tuple[str, ...] | None] = None  # None: every field
    _hidden: ClassVar[tuple[str, ...]] = ()
    _key: ClassVar[Any]
    _shown: ClassVar[tuple[str, ...]]

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
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (self.__class__, tuple(getattr(self, f) for f in self._fields))
