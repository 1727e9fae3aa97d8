"""The few ONNX messages ``minilm_ort.build_graph`` writes, serialised straight to protobuf bytes.

Why not ``onnx.helper``: importing ``onnx`` costs ~11 MiB of RSS for the life of the process
(its C++ extension and protobuf runtime) and the ModelProto it builds is a second copy of the
weights beside the serialised bytes ONNX Runtime reads; an eval with the int8 MiniLM on ORT
peaked over its 150 MiB budget (fast9, benchmarks/README.md). The graph needs only tensors
(raw little-endian data), nodes with int, float and ints attributes, typed inputs and outputs
and an opset: the protobuf wire format of those (varint keys and lengths, fields in number
order as protobuf's own serialiser writes them) fits here, and the tests check every message
against ``onnx.helper``'s, field for field.

Field numbers and enum values are onnx.proto's (onnx 1.x; stable: ONNX never renumbers).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

# TensorProto.DataType
FLOAT, UINT8, INT8, INT32, INT64, DOUBLE = 1, 2, 3, 6, 7, 11
DTYPES = {
    np.dtype(np.float32): FLOAT,
    np.dtype(np.uint8): UINT8,
    np.dtype(np.int8): INT8,
    np.dtype(np.int32): INT32,
    np.dtype(np.int64): INT64,
    np.dtype(np.float64): DOUBLE,
}
# AttributeProto.AttributeType
_ATTR_FLOAT, _ATTR_INT, _ATTR_INTS = 1, 2, 7
_VARINT, _FIXED32, _LEN = 0, 5, 2


def _varint(value: int) -> bytes:
    """A base-128 varint; negative int64s as their 64-bit two's complement (10 bytes)."""
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _int(field: int, value: int) -> bytes:
    return _key(field, _VARINT) + _varint(value)


def _len(field: int, payload: bytes) -> bytes:
    return _key(field, _LEN) + _varint(len(payload)) + payload


def _str(field: int, text: str) -> bytes:
    return _len(field, text.encode("utf-8"))


def tensor(name: str, array: np.ndarray[Any, Any]) -> list[bytes | memoryview]:
    """A TensorProto: dims, data type, name, raw little-endian data (numpy_helper.from_array's
    form for these dtypes), as parts whose last is a view of ``array``'s data, not a copy:
    ``model`` copies each weight once, into the model's bytes."""
    arr = np.asarray(array, dtype=array.dtype.newbyteorder("<"))
    if not arr.flags.c_contiguous:  # (ascontiguousarray would make a scalar one-dimensional)
        arr = arr.copy(order="C")
    head = b"".join(_int(1, d) for d in arr.shape)
    head += _int(2, DTYPES[np.dtype(arr.dtype.type)]) + (_str(8, name) if name else b"")
    data = arr.reshape(-1).view(np.uint8).data
    return [head, _key(9, _LEN) + _varint(data.nbytes), data]


def _attribute(name: str, value: Any) -> bytes:
    if isinstance(value, bool) or not isinstance(value, (int, float, list, tuple)):
        raise TypeError(f"attribute {name}: int, float or a list of ints, got {value!r}")
    if isinstance(value, float):
        return _str(1, name) + _key(2, _FIXED32) + struct.pack("<f", value) + _int(20, _ATTR_FLOAT)
    if isinstance(value, int):
        return _str(1, name) + _int(3, value) + _int(20, _ATTR_INT)
    if not value or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise TypeError(f"attribute {name}: a non-empty list of ints, got {value!r}")
    return _str(1, name) + b"".join(_int(8, v) for v in value) + _int(20, _ATTR_INTS)


def node(op: str, inputs: Sequence[str], outputs: Sequence[str], name: str, **attrs: Any) -> bytes:
    """A NodeProto (default domain), attributes sorted by name as ``helper.make_node`` sorts."""
    out = b"".join(_str(1, i) for i in inputs) + b"".join(_str(2, o) for o in outputs)
    out += (_str(3, name) if name else b"") + _str(4, op)
    return out + b"".join(_len(5, _attribute(k, attrs[k])) for k in sorted(attrs))


def value_info(name: str, elem_type: int, shape: Sequence[int | str]) -> bytes:
    """A ValueInfoProto of a tensor: each dimension a value (int) or a parameter (str)."""
    dims = b"".join(_len(1, _str(2, d) if isinstance(d, str) else _int(1, d)) for d in shape)
    tensor_type = _int(1, elem_type) + _len(2, dims)
    return _str(1, name) + _len(2, _len(1, tensor_type))


def model(
    nodes: Iterable[bytes],
    name: str,
    inputs: Iterable[bytes],
    outputs: Iterable[bytes],
    initializers: Iterable[Sequence[bytes | memoryview]],
    opset: int,
    ir_version: int,
) -> bytes:
    """A ModelProto of one graph and the default domain's opset, joined in one copy."""
    graph: list[bytes | memoryview] = [_len(1, n) for n in nodes]
    graph.append(_str(2, name))
    for parts in initializers:
        graph.append(_key(5, _LEN) + _varint(sum(memoryview(p).nbytes for p in parts)))
        graph.extend(parts)
    graph += [_len(11, v) for v in inputs] + [_len(12, v) for v in outputs]
    size = sum(memoryview(p).nbytes for p in graph)
    opset_id = _str(1, "") + _int(2, opset)
    head = _int(1, ir_version) + _key(7, _LEN) + _varint(size)
    return b"".join([head, *graph, _len(8, opset_id)])
