"""The base of the policy classes: a frozen record validated by hand, pydantic only when unsure.

Why not pydantic models: building the policy's pydantic schemas costs ~60 ms and importing
pydantic ~45 ms more, at every start of ``loomc check`` and ``loomc run`` (issue #16), for input
that is almost always plain YAML of the right types. Each class lists its fields with a *check*
that accepts only what it is sure of (an ``int`` that is an ``int`` within its bounds, a mapping
with only known keys, ...) and raises :class:`Unsure` otherwise. Anything it is unsure of, an
error or a value pydantic would coerce (``"5"`` for an int, ``1.0`` for an int), is validated by
the pydantic twin of the class (:mod:`loomc.policy.pydantic_models`), whose errors are the
diagnostics users have always seen and whose result is converted back. So a check may defer too
often (slower, never wrong) but must never accept what pydantic would refuse or return another
value: ``tests/compiler/test_policy_models.py`` compares both on generated policies.

The records keep the small part of pydantic's interface that loomc uses: keyword construction,
``model_validate``, ``model_copy(update=...)``, ``model_dump(mode=...)``, ``model_dump_json``,
``model_fields_set``, ``model_json_schema`` (the twin's), equality, hashing, a pydantic-like repr.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any, ClassVar, TypeVar

Check = Callable[[Any], Any]
Fields = dict[str, tuple[Check, Any]]
R = TypeVar("R", bound="Record")


class Unsure(Exception):
    """Raised by a check: the value is left to pydantic (an error, or a lax coercion)."""


class Factory:
    """A field default built anew for each record (a list, a dict, a nested record)."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make


REQUIRED = object()


class Record:
    """A frozen policy record; ``fields`` maps each field to ``(check, default)`` in order."""

    __slots__ = ("__dict__", "_fields_set")
    fields: ClassVar[Fields] = {}
    _fields_set: set[str]

    def __init__(self, **data: Any) -> None:
        made = type(self).model_validate(data)
        object.__setattr__(self, "_fields_set", made._fields_set)
        self.__dict__.update(made.__dict__)

    # --- validation ------------------------------------------------------------------------

    @classmethod
    def model_validate(cls: type[R], obj: Any) -> R:
        """``obj`` (a mapping or a record) as a record; raises pydantic's ``ValidationError``."""
        if type(obj) is cls:
            return obj
        try:
            return cls.build(obj)
        except Unsure:
            return _by_pydantic(cls, obj)

    @classmethod
    def build(cls: type[R], data: Any) -> R:
        """The fast path: raises :class:`Unsure` at the first value it is not sure of."""
        if type(data) is not dict:
            raise Unsure
        fields = cls.fields
        for key in data:
            if key not in fields:
                raise Unsure  # pydantic reports the extra key (extra="forbid")
        values: dict[str, Any] = {}
        for name, (check, default) in fields.items():
            if name in data:
                values[name] = check(data[name])
            elif default is REQUIRED:
                raise Unsure
            elif isinstance(default, Factory):
                values[name] = default.make()
            else:
                values[name] = default
        made = cls._raw(values, set(data))
        made.after()
        return made

    def after(self) -> None:
        """Checks across fields (pydantic's ``model_validator(mode="after")``); raise Unsure."""

    @classmethod
    def _raw(cls: type[R], values: dict[str, Any], fields_set: set[str]) -> R:
        made = object.__new__(cls)
        object.__setattr__(made, "_fields_set", fields_set)
        made.__dict__.update(values)
        return made

    # --- the pydantic interface loomc uses ----------------------------------------------------

    @property
    def model_fields_set(self) -> set[str]:
        return self._fields_set

    def model_copy(self: R, *, update: dict[str, Any] | None = None, deep: bool = False) -> R:
        """A copy with ``update`` applied unvalidated, as pydantic's ``model_copy`` does."""
        import copy  # deep copies only (copy imports weakref: not on the check path)

        values = copy.deepcopy(self.__dict__) if deep else dict(self.__dict__)
        values.update(update or {})
        return type(self)._raw(values, self._fields_set | set(update or {}))

    def model_dump(self, *, mode: str = "python") -> dict[str, Any]:
        return {k: _dump(v, mode == "json") for k, v in self.__dict__.items()}

    def model_dump_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def model_json_schema(cls, mode: str = "validation") -> dict[str, Any]:
        schema: dict[str, Any] = _twin(cls).model_json_schema(mode=mode)
        return schema

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: use model_copy(update=...)")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen")

    def __getstate__(self) -> tuple[dict[str, Any], set[str]]:
        return self.__dict__, self._fields_set

    def __setstate__(self, state: tuple[dict[str, Any], set[str]]) -> None:
        object.__setattr__(self, "_fields_set", state[1])
        self.__dict__.update(state[0])

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash((type(self), *self.__dict__.values()))

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        yield from self.__dict__.items()

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"{type(self).__name__}({body})"


def _dump(value: Any, json_mode: bool) -> Any:
    if isinstance(value, Record):
        return value.model_dump(mode="json" if json_mode else "python")
    if isinstance(value, dict):
        return {k: _dump(v, json_mode) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_dump(v, json_mode) for v in value]
    if json_mode and isinstance(value, Decimal):
        return str(value)
    return value


# --- the slow path: the pydantic twin ------------------------------------------------------------


def _twin(cls: type[Record]) -> Any:
    from loomc.policy import pydantic_models

    return getattr(pydantic_models, cls.__name__)


def _by_pydantic(cls: type[R], obj: Any) -> R:
    made = _twin(cls).model_validate(_to_twin(obj))
    back: R = _from_twin(made)
    return back


def _to_twin(value: Any) -> Any:
    """Records inside the input become pydantic instances, accepted as they are (as before)."""
    if isinstance(value, Record):
        values = {k: _to_twin(v) for k, v in value.__dict__.items()}
        return _twin(type(value)).model_construct(_fields_set=set(value._fields_set), **values)
    if type(value) is dict:
        return {k: _to_twin(v) for k, v in value.items()}
    if type(value) is list:
        return [_to_twin(v) for v in value]
    return value


def _from_twin(value: Any) -> Any:
    from pydantic import BaseModel

    from loomc.policy import models

    if isinstance(value, BaseModel):
        cls: type[Record] = getattr(models, type(value).__name__)
        values = {k: _from_twin(getattr(value, k)) for k in cls.fields}
        return cls._raw(values, set(value.model_fields_set))
    if type(value) is dict:
        return {k: _from_twin(v) for k, v in value.items()}
    if type(value) is list:
        return [_from_twin(v) for v in value]
    return value


# --- checks ------------------------------------------------------------------------------------


def string(value: Any) -> Any:
    if type(value) is str:
        return value
    raise Unsure


def boolean(value: Any) -> Any:
    if type(value) is bool:
        return value
    raise Unsure


def anything(value: Any) -> Any:
    return value


def optional(check: Check) -> Check:
    def run(value: Any) -> Any:
        return None if value is None else check(value)

    return run


def one_of(*choices: object) -> Check:
    kinds = {type(c) for c in choices}

    def run(value: Any) -> Any:
        if type(value) in kinds and value in choices:
            return value
        raise Unsure

    return run


def where(check: Check, ok: Callable[[Any], bool]) -> Check:
    """``check``, then a field validator's condition (pydantic reports the failure)."""

    def run(value: Any) -> Any:
        value = check(value)
        if not ok(value):
            raise Unsure
        return value

    return run


def list_of(check: Check) -> Check:
    def run(value: Any) -> Any:
        if type(value) is not list:
            raise Unsure
        return [check(v) for v in value]

    return run


def dict_of(check: Check) -> Check:
    def run(value: Any) -> Any:
        if type(value) is not dict:
            raise Unsure
        out = {}
        for k, v in value.items():
            if type(k) is not str:
                raise Unsure
            out[k] = check(v)
        return out

    return run


def record(cls: type[Record]) -> Check:
    def run(value: Any) -> Any:
        if type(value) is cls:
            return value  # pydantic keeps an instance as it is (revalidate_instances="never")
        return cls.build(value)

    return run
