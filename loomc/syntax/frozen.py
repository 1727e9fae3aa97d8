"""Immutable value classes without ``dataclasses``' code generation, for modules on the path of
every ``loomc check``.

On Python 3.11 ``@dataclass(frozen=True, slots=True)`` compiles each generated method (init,
repr, eq, hash, setattr, delattr) with its own ``exec`` and then builds the class a second time
for its slots: about 1 ms per class, ~30 ms for the AST and the IR's expression nodes at every
start. A class deriving from :class:`Frozen` writes its ``__init__`` by hand, names its fields
in ``_fields``, and gets from here exactly the dataclass's behaviour: equality and hash over the
compared fields as one tuple (the same hash values, so the same set orders), the same ``repr``,
``FrozenInstanceError`` on assignment, pattern matching by keyword and position, pickling and
copying. What it does not give is ``dataclasses.replace``/``fields``; nothing uses them on these
classes (the IR's ``Pipeline`` and ``StepNode``, which are replaced, stay dataclasses).
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from operator import attrgetter
from typing import Any, ClassVar

set_field = object.__setattr__
"""How a hand-written ``__init__`` sets a field (``__setattr__`` refuses, as frozen ones do)."""


class Frozen:
    __slots__ = ()

    _fields: ClassVar[tuple[str, ...]] = ()
    """Every field, in ``__init__``'s order (pattern matching, pickling, ``repr`` order)."""
    _compared: ClassVar[tuple[str, ...] | None] = None
    """The fields equality and hash use (None: all of them)."""
    _hidden: ClassVar[tuple[str, ...]] = ()
    """Fields left out of ``repr`` (a dataclass's ``field(repr=False)``)."""
    _key: ClassVar[Any]
    _shown: ClassVar[tuple[str, ...]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        compared = cls._fields if cls._compared is None else cls._compared
        getter = attrgetter(*compared) if compared else (lambda _: ())
        cls._key = staticmethod(getter if len(compared) != 1 else lambda o: (getter(o),))
        cls._shown = tuple(f for f in cls._fields if f not in cls._hidden)
        setattr(cls, "__match_args__", cls._fields)  # noqa: B010 (mypy: not on `type`)

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
