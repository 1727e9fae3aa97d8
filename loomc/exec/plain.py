"""The base of the result classes: plain objects with pydantic's interface, pydantic only when asked.

Why not pydantic models: importing pydantic and building the result schemas costs ~0.1 s (quiet)
at every cold ``loomc run`` (issue #16), for objects the runtime builds itself from values of
the right types (:func:`loomc.exec.result.trusted`) and reads attribute by attribute. So each
class lists its fields with their defaults and writes its own ``model_dump``; the jobs that need
pydantic's exact behaviour are handed to the class's pydantic twin
(:mod:`loomc.exec.result_models`): validating (``Cls(**data)``, ``model_validate``, a result
read back inside a pydantic model such as the eval's ``RunRecord``), ``model_dump_json`` (the
bytes journals and receipts have always held, errors included), the JSON schema, and any dump
with options. It is the policy records' pattern (:mod:`loomc.policy.record`), whose field
markers these share, but mutable like the pydantic models it replaces: the executor fills a
step's record as the step runs.

An instance keeps pydantic's state under pydantic's names (``__dict__`` holds exactly the
fields in order, ``__pydantic_fields_set__``, ``__pydantic_extra__``, ``__pydantic_private__``),
so converting to and from a twin is a dictionary copy and equality means what it meant.
"""

from __future__ import annotations

import copy
import math
import sys
from collections.abc import Callable, Iterator
from decimal import Decimal
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from loomc.policy.record import REQUIRED, Factory, Unsure
from loomc.units import Usage

if TYPE_CHECKING:
    from pydantic import BaseModel, GetCoreSchemaHandler
    from pydantic_core import CoreSchema

P = TypeVar("P", bound="PlainModel")

__all__ = ["REQUIRED", "Factory", "PlainModel", "Unsure", "from_twin", "to_twin"]


class PlainModel:
    """A result object; ``fields`` maps each field to its default (``REQUIRED``, a value, or a
    ``Factory``) in order, ``private`` each private attribute to the factory of its default."""

    __slots__ = (
        "__dict__",
        "__pydantic_extra__",
        "__pydantic_fields_set__",
        "__pydantic_private__",
    )
    fields: ClassVar[dict[str, Any]] = {}
    private: ClassVar[dict[str, Callable[[], Any]]] = {}
    twin_module: ClassVar[str] = "loomc.exec.result_models"
    __hash__ = None  # type: ignore[assignment]  # mutable, as pydantic's models are
    __pydantic_fields_set__: set[str]
    __pydantic_extra__: None
    __pydantic_private__: dict[str, Any] | None

    def __init__(self, **data: Any) -> None:
        """Validates ``data`` as pydantic did (through the twin): a value of another type is
        coerced or refused with pydantic's ``ValidationError``."""
        made = type(self).model_validate(data)
        _adopt(self, made.__dict__, made.__pydantic_fields_set__, made.__pydantic_private__)

    @classmethod
    def trusted(cls: type[P], values: dict[str, Any]) -> P:
        """An instance from values the runtime built, unvalidated (see ``result.trusted``)."""
        shape = _SHAPES.get(cls) or _shape(cls)
        keys = values.keys()
        if not keys <= shape.names:  # a typo, not data
            raise TypeError(f"{cls.__name__}: unknown fields {sorted(keys - shape.names)}")
        if not shape.required <= keys:
            raise TypeError(f"{cls.__name__}: missing field {min(shape.required - keys)!r}")
        made = shape.template.copy()  # field order kept: update only overwrites
        made.update(values)
        for name, factory in shape.factories:
            if name not in values:
                made[name] = factory()
        obj = cls.__new__(cls)
        private = cls.private
        _adopt(obj, made, set(keys), {k: f() for k, f in private.items()} if private else None)
        return obj

    # --- what pydantic does -------------------------------------------------------------------

    @classmethod
    def model_validate(cls: type[P], obj: Any) -> P:
        """``obj`` validated by the twin (an instance of ``cls`` is returned as it is, as
        pydantic does); raises pydantic's ``ValidationError``."""
        if type(obj) is cls:
            return obj
        made: P = from_twin(cls.twin().model_validate(to_twin(obj)))
        return made

    @classmethod
    def model_validate_json(cls: type[P], data: str | bytes) -> P:
        made: P = from_twin(cls.twin().model_validate_json(data))
        return made

    @classmethod
    def model_json_schema(cls, mode: str = "validation") -> dict[str, Any]:
        schema: dict[str, Any] = cls.twin().model_json_schema(mode=mode)  # type: ignore[arg-type]
        return schema

    def model_dump(self, *, mode: str = "python", **options: Any) -> dict[str, Any]:
        """The fields as pydantic dumps them: written by hand for the common call (no options)
        and checked against the twin; anything else (or a value it is unsure of) is the twin's."""
        if not options:
            try:
                return self.dump(mode == "json")
            except Unsure:
                pass
        out: dict[str, Any] = to_twin(self).model_dump(mode=mode, **options)
        return out

    def model_dump_json(self, **options: Any) -> str:
        """Pydantic's JSON of the twin: the bytes journals and receipts hold, byte for byte, and
        its ``PydanticSerializationError`` for text JSON cannot carry (a lone surrogate)."""
        text: str = to_twin(self).model_dump_json(**options)
        return text

    def dump(self, json_mode: bool) -> dict[str, Any]:
        """``model_dump`` without options; raises ``Unsure`` to leave a value to the twin."""
        raise Unsure

    @property
    def model_fields_set(self) -> set[str]:
        return self.__pydantic_fields_set__

    def model_copy(self: P, *, update: dict[str, Any] | None = None, deep: bool = False) -> P:
        """A copy with ``update`` applied unvalidated, as pydantic's ``model_copy`` does."""
        if deep:
            made = copy.deepcopy(self)
        else:
            made = type(self).__new__(type(self))
            private = self.__pydantic_private__
            _adopt(
                made,
                dict(self.__dict__),
                set(self.__pydantic_fields_set__),
                None if private is None else dict(private),
            )
        if update:
            made.__dict__.update(update)
            made.__pydantic_fields_set__.update(update)
        return made

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self.fields:
            self.__dict__[name] = value
            self.__pydantic_fields_set__.add(name)
        elif name in self.private and self.__pydantic_private__ is not None:
            self.__pydantic_private__[name] = value
        else:
            raise ValueError(f'"{type(self).__name__}" object has no field "{name}"')

    def __getstate__(self) -> tuple[dict[str, Any], set[str], dict[str, Any] | None]:
        return self.__dict__, self.__pydantic_fields_set__, self.__pydantic_private__

    def __setstate__(self, state: tuple[dict[str, Any], set[str], dict[str, Any] | None]) -> None:
        _adopt(self, *state)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return (
            self.__dict__ == other.__dict__
            and self.__pydantic_private__ == other.__pydantic_private__
        )

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        yield from self.__dict__.items()

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"{type(self).__name__}({body})"

    # --- the twin -------------------------------------------------------------------------------

    @classmethod
    def twin(cls) -> type[BaseModel]:
        """The pydantic model of the same name (imports pydantic and builds its schemas)."""
        module = sys.modules.get(cls.twin_module)
        if module is None:
            import importlib

            module = importlib.import_module(cls.twin_module)
        twin: type[BaseModel] = getattr(module, cls.__name__)
        if twin not in _PLAIN:  # every twin of the module, nested ones too
            for plain in _subclasses(PlainModel):
                if plain.twin_module == cls.twin_module:
                    _PLAIN[getattr(module, plain.__name__)] = plain
        return twin

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        """Inside a pydantic model (the eval's ``RunRecord``), a field of this class validates
        and serialises as the twin does: an instance is kept as it is, anything else is
        validated by the twin and converted; written, it is converted to the twin (a dict copy
        per object) and serialised by pydantic, so the JSON is the twin's, byte for byte."""
        from pydantic_core import core_schema

        inner = handler.generate_schema(cls.twin())

        def validate(value: Any, twin_validator: Callable[[Any], Any]) -> Any:
            if type(value) is cls:
                return value
            return from_twin(twin_validator(to_twin(value)))

        return core_schema.no_info_wrap_validator_function(
            validate,
            inner,
            serialization=core_schema.plain_serializer_function_ser_schema(
                to_twin, return_schema=inner
            ),
        )


# --- values dumped as pydantic dumps them (``json``: ``mode="json"``) ----------------------------


def money(value: Decimal | None, json: bool) -> Decimal | str | None:
    return str(value) if json and value is not None else value


def word(value: StrEnum, json: bool) -> StrEnum | str:
    return str(value) if json else value  # a StrEnum's str is its value, the word in JSON


def reservation(value: Usage | None) -> dict[str, str | int]:
    """A reservation that may not have happened: ``{}`` in JSON and in Python, ``None`` here."""
    return {} if value is None else value.to_json()


def nested(value: Any, json: bool) -> dict[str, Any]:
    if isinstance(value, PlainModel):
        return value.dump(json)
    raise Unsure


def strings(value: Any) -> list[str]:
    if type(value) is list:
        return list(value)
    raise Unsure


def data_copy(value: Any) -> Any:
    """A copy of JSON-shaped data (an ``Any`` field); anything else is left to the twin, whose
    rules for other types (tuples, decimals, infinities, non-string keys) are its own."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is float and math.isfinite(value):
        return value
    if kind is dict:
        out = {}
        for k, v in value.items():
            if type(k) is not str:
                raise Unsure
            out[k] = data_copy(v)
        return out
    if kind is list:
        return [data_copy(v) for v in value]
    raise Unsure


_PLAIN: dict[type, type[PlainModel]] = {}  # twin class -> plain class, filled by ``twin()``


def _subclasses(cls: type[PlainModel]) -> list[type[PlainModel]]:
    found = cls.__subclasses__()
    return [c for sub in found for c in (sub, *_subclasses(sub))]


class _Shape:
    """What ``trusted`` needs of a class, computed once: the defaults in field order (the
    required ones as placeholders, always overwritten), the fields built by a factory, the
    required fields and every field's name."""

    __slots__ = ("factories", "names", "required", "template")

    def __init__(self, cls: type[PlainModel]) -> None:
        fields = cls.fields
        self.names = frozenset(fields)
        self.template = dict(fields)
        self.factories = tuple(
            (name, default.make) for name, default in fields.items() if type(default) is Factory
        )
        self.required = frozenset(name for name, d in fields.items() if d is REQUIRED)


_SHAPES: dict[type[PlainModel], _Shape] = {}


def _shape(cls: type[PlainModel]) -> _Shape:
    shape = _SHAPES[cls] = _Shape(cls)
    return shape


def _adopt(
    obj: PlainModel, values: dict[str, Any], fields_set: set[str], private: dict[str, Any] | None
) -> None:
    setattr_ = object.__setattr__
    setattr_(obj, "__dict__", values)
    setattr_(obj, "__pydantic_fields_set__", fields_set)
    setattr_(obj, "__pydantic_extra__", None)
    setattr_(obj, "__pydantic_private__", private)


def to_twin(value: Any) -> Any:
    """Plain instances inside ``value`` (lists and dicts walked) as twin instances, state
    copied unvalidated: what pydantic would have held."""
    if isinstance(value, PlainModel):
        twin = type(value).twin()
        made = twin.__new__(twin)
        private = value.__pydantic_private__
        setattr_ = object.__setattr__
        setattr_(made, "__dict__", {k: to_twin(v) for k, v in value.__dict__.items()})
        setattr_(made, "__pydantic_fields_set__", set(value.__pydantic_fields_set__))
        setattr_(made, "__pydantic_extra__", None)
        setattr_(made, "__pydantic_private__", None if private is None else dict(private))
        return made
    if type(value) is list:
        return [to_twin(v) for v in value]
    if type(value) is dict:
        return {k: to_twin(v) for k, v in value.items()}
    return value


def from_twin(value: Any) -> Any:
    """The inverse of :func:`to_twin`: twin instances inside ``value`` as plain instances."""
    cls = _PLAIN.get(type(value))
    if cls is not None:
        made = cls.__new__(cls)
        private = value.__pydantic_private__
        _adopt(
            made,
            {k: from_twin(v) for k, v in value.__dict__.items()},
            set(value.__pydantic_fields_set__),
            None if private is None else dict(private),
        )
        return made
    if type(value) is list:
        return [from_twin(v) for v in value]
    if type(value) is dict:
        return {k: from_twin(v) for k, v in value.items()}
    return value
