"""The base of the result classes: plain objects with pydantic's interface, pydantic only when asked.

Why not pydantic models: importing pydantic and building the result schemas costs ~0.1 s (quiet)
at every cold ``loomc run`` (issue #16), for objects the runtime builds itself from values of
the right types (:func:`loomc.exec.result.trusted`) and reads attribute by attribute. So each
class lists its fields with their defaults and writes its own ``model_dump``; the jobs that need
pydantic's exact behaviour use the core schema of the class's pydantic twin
(:mod:`loomc.exec.result_models`) with the twin classes in it swapped for the plain ones, so that
pydantic-core builds and writes plain instances itself: validating (``Cls(**data)``,
``model_validate``, a result read back inside a pydantic model such as the eval's
``RunRecord``), ``model_dump_json`` (the bytes journals and receipts have always held, errors
included) and any dump with options. It is the policy records' pattern
(:mod:`loomc.policy.record`), whose field markers these share, but mutable like the pydantic
models it replaces: the executor fills a step's record as the step runs.

An instance keeps pydantic's state under pydantic's names (``__dict__`` holds exactly the
fields in order, ``__pydantic_fields_set__``, ``__pydantic_extra__``, ``__pydantic_private__``),
which is what pydantic-core reads and writes, and equality means what it meant.
"""

from __future__ import annotations

import copy
import functools
import math
import sys
from collections.abc import Callable, Iterator
from decimal import Decimal
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from loomc.policy.record import REQUIRED, Factory, Unsure, dict_of, list_of
from loomc.units import Usage

if TYPE_CHECKING:
    from pydantic import BaseModel, GetCoreSchemaHandler
    from pydantic_core import CoreSchema

P = TypeVar("P", bound="PlainModel")

__all__ = ["REQUIRED", "Factory", "PlainModel", "Unsure"]


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
    model_config: ClassVar[Any] = {}  # the twin's, once a schema was built
    # how ``dump`` writes the fields that are not plain scalars: (value, json mode) -> data
    kinds: ClassVar[dict[str, Callable[[Any, bool], Any]]] = {}
    omit_empty: ClassVar[frozenset[str]] = frozenset()  # includes ``never_dumped``
    never_dumped: ClassVar[frozenset[str]] = frozenset()
    __hash__ = None  # type: ignore[assignment]  # mutable, as pydantic's models are
    __pydantic_fields_set__: set[str]
    __pydantic_extra__: None
    __pydantic_private__: dict[str, Any] | None

    def __init__(self, **data: Any) -> None:
        """Validates ``data`` as pydantic did (the twin's schema): a value of another type is
        coerced or refused with pydantic's ``ValidationError``."""
        _core(type(self)).validator.validate_python(data, self_instance=self)

    @classmethod
    def trusted(cls: type[P], values: dict[str, Any]) -> P:
        """An instance from values the runtime built, unvalidated (see ``result.trusted``)."""
        made = filled(cls.__name__, _SHAPES.get(cls) or _shape(cls), values)
        obj = cls.__new__(cls)
        private = cls.private
        _adopt(obj, made, set(values), {k: f() for k, f in private.items()} if private else None)
        return obj

    # --- what pydantic does -------------------------------------------------------------------

    @classmethod
    def model_validate(cls: type[P], obj: Any) -> P:
        """``obj`` validated by the twin's schema (an instance of ``cls`` is returned as it is,
        as pydantic does); raises pydantic's ``ValidationError``."""
        if type(obj) is cls:
            return obj
        made: P = _core(cls).validator.validate_python(obj)
        return made

    @classmethod
    def model_validate_json(cls: type[P], data: str | bytes) -> P:
        made: P = _core(cls).validator.validate_json(data)
        return made

    @classmethod
    def model_json_schema(cls, mode: str = "validation") -> dict[str, Any]:
        schema: dict[str, Any] = cls.twin().model_json_schema(mode=mode)  # type: ignore[arg-type]
        return schema

    def model_dump(self, *, mode: str = "python", **options: Any) -> dict[str, Any]:
        """The fields as pydantic dumps them: written by hand for the common call (no options)
        and checked against the twin; anything else (or a value it is unsure of) is pydantic's."""
        if not options:
            try:
                return self.dump(mode == "json")
            except Unsure:
                pass
        out: dict[str, Any] = _core(type(self)).serializer.to_python(self, mode=mode, **options)
        return out

    def model_dump_json(self, **options: Any) -> str:
        """Pydantic's JSON, from the twin's schema: the bytes journals and receipts hold, and its
        ``PydanticSerializationError`` for text JSON cannot carry (a lone surrogate)."""
        return str(_core(type(self)).serializer.to_json(self, **options), "utf-8")

    def dump(self, json: bool) -> dict[str, Any]:
        """``model_dump`` without options, field by field in order: a field named in ``kinds``
        is dumped by its function, any other must hold a plain scalar; ``omit_empty`` fields
        are left out while empty, ``never_dumped`` ones always (pydantic's ``exclude_if`` and
        ``exclude``). Raises ``Unsure`` to leave a value it is not sure of to pydantic."""
        values, kinds, skip = self.__dict__, self.kinds, self.omit_empty
        out = {}
        for name in self.fields:
            value = values[name]
            if name in skip and (not value or name in self.never_dumped):
                continue
            kind = kinds.get(name)
            if kind is not None:
                out[name] = kind(value, json)
            elif type(value) in _SCALARS:
                out[name] = value
            else:
                raise Unsure
        return out

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

    def model_post_init(self, context: Any) -> None:
        """Called by pydantic on an instance its validator built (a class with private
        attributes): the private attributes at their defaults, as pydantic's models start."""
        private = type(self).private
        object.__setattr__(self, "__pydantic_private__", {k: f() for k, f in private.items()})

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self.fields:
            self.__dict__[name] = value
            self.__pydantic_fields_set__.add(name)
        elif name in self.private and self.__pydantic_private__ is not None:
            self.__pydantic_private__[name] = value
        else:
            raise ValueError(f'"{type(self).__name__}" object has no field "{name}"')

    def __copy__(self: P) -> P:
        """``copy.copy``: its own field dict, as pydantic's copy has (the state alone would be
        shared, not copied)."""
        return self.model_copy()

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
        return twin

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        """Inside a pydantic model (the eval's ``RunRecord``), a field of this class is
        validated and serialised by pydantic-core itself, with the twin's schema."""
        return _plain_schema(cls)


# --- values dumped as pydantic dumps them (``json``: ``mode="json"``) ----------------------------

_SCALARS = frozenset((str, int, bool, type(None)))  # dumped as they are in both modes


def money(value: Decimal | None, json: bool) -> Decimal | str | None:
    """Exact decimals: written to JSON as their string, kept as they are in Python."""
    return str(value) if json and value is not None else value


def word(value: StrEnum, json: bool) -> StrEnum | str:
    return str(value) if json else value  # a StrEnum's str is its value, the word in JSON


def reservation(value: Usage | None, json: bool) -> dict[str, str | int]:
    """A reservation that may not have happened: ``{}`` in JSON and in Python, ``None`` here."""
    return {} if value is None else value.to_json()


def nested(value: Any, json: bool) -> dict[str, Any]:
    if isinstance(value, PlainModel):
        return value.dump(json)
    raise Unsure


def nested_list(value: Any, json: bool) -> list[dict[str, Any]]:
    if type(value) is list:
        return [nested(v, json) for v in value]
    raise Unsure


def nested_dict(value: Any, json: bool) -> dict[str, dict[str, Any]]:
    if type(value) is dict:
        return {k: nested(v, json) for k, v in value.items()}
    raise Unsure


def strings(value: Any, json: bool) -> list[str]:
    if type(value) is list:
        return list(value)
    raise Unsure


def data_copy(value: Any, json: bool = True) -> Any:
    """A copy of JSON-shaped data (an ``Any`` field); anything else is left to pydantic, whose
    rules for other types (tuples, decimals, infinities, non-string keys) are its own."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is float and math.isfinite(value):
        return value
    if kind is dict:
        return _data_dict(value)
    if kind is list:
        return _data_list(value)
    raise Unsure


_data_dict = dict_of(data_copy)  # the policy records' checks: string keys, each value copied
_data_list = list_of(data_copy)


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


def filled(name: str, shape: Any, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with the defaults of the fields they leave out, in field order, for a class
    whose ``shape`` has the ``names``, ``required``, ``template`` and ``factories`` of
    :class:`_Shape` (this module's classes, or a pydantic model's, in ``result_models``)."""
    keys = values.keys()
    if not keys <= shape.names:  # a typo, not data
        raise TypeError(f"{name}: unknown fields {sorted(keys - shape.names)}")
    if not shape.required <= keys:
        raise TypeError(f"{name}: missing field {min(shape.required - keys)!r}")
    made: dict[str, Any] = shape.template.copy()  # field order kept: update only overwrites
    made.update(values)
    for field, factory in shape.factories:
        if field not in values:
            made[field] = factory()
    return made


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


class _Core:
    """A class's validator and serializer: the twin's core schema with every twin class in it
    (models, and default factories) replaced by its plain class, so that pydantic-core builds
    and reads plain instances itself, with no conversion."""

    __slots__ = ("serializer", "validator")

    def __init__(self, cls: type[PlainModel]) -> None:
        from pydantic_core import SchemaSerializer, SchemaValidator

        schema = _plain_schema(cls)
        config = _model_config(schema)
        self.validator = SchemaValidator(schema, config)
        self.serializer = SchemaSerializer(schema, config)


_CORES: dict[type[PlainModel], _Core] = {}


def _core(cls: type[PlainModel]) -> _Core:
    found = _CORES.get(cls)
    if found is None:
        found = _CORES[cls] = _Core(cls)
    return found


def _plain_schema(cls: type[PlainModel]) -> CoreSchema:
    """A fresh copy of the twin's core schema, twin classes replaced by plain ones."""
    twin = cls.twin()
    module = sys.modules[cls.twin_module]
    plain = {getattr(module, c.__name__): c for c in _subclasses(PlainModel)}
    plain = {k: v for k, v in plain.items() if v.twin_module == cls.twin_module}
    for twin_cls, plain_cls in plain.items():  # read by pydantic's JSON schema of a holder
        plain_cls.model_config = twin_cls.model_config
    schema: CoreSchema = _swap(twin.__pydantic_core_schema__, plain)
    return schema


def _swap(node: Any, plain: dict[type, type[PlainModel]]) -> Any:
    if type(node) is list:
        return [_swap(v, plain) for v in node]
    if type(node) is not dict:
        return node
    out = {k: _swap(v, plain) for k, v in node.items()}
    if out.get("type") == "model" and out.get("cls") in plain:
        out["cls"] = plain[out["cls"]]
    factory = out.get("default_factory")
    if factory in plain:
        out["default_factory"] = functools.partial(plain[factory].trusted, {})
    return out


def _model_config(schema: Any) -> Any:
    """The config of the outermost model in ``schema`` (what pydantic passes beside it)."""
    while isinstance(schema, dict):
        if schema.get("type") == "model":
            return schema.get("config")
        schema = schema.get("schema")
    return None
