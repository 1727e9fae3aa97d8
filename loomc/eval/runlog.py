"""The finished runs of an eval, in matrix order, without keeping them in memory.

Keeping every ``RunRecord`` (its result, steps, usage: 10-20 KiB of Python objects each) made an
eval's memory grow with its runs: 1.6 GB at 100,000. A ``RunLog`` writes each record's JSON to an
anonymous temporary file as it finishes (the text the journal just wrote, when it is the same)
and keeps its offset (8 bytes) and its aggregates (a ``Tally``); the receipt reads the records
back one at a time when it is rendered. The file is gone when the log is closed or collected."""

from __future__ import annotations

import pickle
import tempfile
import weakref
from array import array
from collections.abc import Iterator, Sequence
from typing import IO, overload

from pydantic_core import PydanticSerializationError

from loomc.eval.records import RunRecord
from loomc.eval.tally import Tally


class RunLog(Sequence[RunRecord]):
    """A read-only sequence of the runs added so far, in matrix order (``add`` by index)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.tally = Tally(size)
        self._offsets = array("q", [-1]) * size
        # the log owns the file for its whole life (the receipt reads it after the eval)
        self._file: IO[bytes] = tempfile.TemporaryFile(prefix="loomc-eval-runs-")  # noqa: SIM115
        self._closer = weakref.finalize(self, self._file.close)  # closed when dropped
        self._end = 0
        self._reading = False  # whether a read moved the file position off the end
        self._order: array[int] | None = None  # indices of the runs present, when not all are

    def add(self, index: int, record: RunRecord, text: str | None = None) -> None:
        """Keep the run at ``index`` of the matrix; ``text``: its ``model_dump_json()`` when the
        caller already has it."""
        self.tally.add(record, index)  # refuses an index added twice
        try:
            data = b"J" + (record.model_dump_json() if text is None else text).encode() + b"\n"
        except PydanticSerializationError:  # a lone surrogate in an answer: JSON cannot carry it
            raw = pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL)
            data = b"P" + len(raw).to_bytes(8, "little") + raw
        if self._reading:  # a read moved the position; a seek also flushes the write buffer,
            self._file.seek(self._end)  # so it is paid only after a read, not per run
            self._reading = False
        self._file.write(data)
        self._offsets[index] = self._end
        self._end += len(data)
        self._order = None

    def indices(self) -> Iterator[int]:
        """The matrix indices that have a run, in order."""
        return (i for i, offset in enumerate(self._offsets) if offset >= 0)

    def close(self) -> None:
        self._closer()

    def __len__(self) -> int:
        return self.tally.count

    @overload
    def __getitem__(self, position: int) -> RunRecord: ...

    @overload
    def __getitem__(self, position: slice) -> list[RunRecord]: ...

    def __getitem__(self, position: int | slice) -> RunRecord | list[RunRecord]:
        if isinstance(position, slice):
            return [self[i] for i in range(*position.indices(len(self)))]
        count = len(self)
        if position < 0:
            position += count
        if not 0 <= position < count:
            raise IndexError("run index out of range")
        if count == self.size:
            return self._read(self._offsets[position])
        if self._order is None:
            self._order = array("q", self.indices())
        return self._read(self._offsets[self._order[position]])

    def __iter__(self) -> Iterator[RunRecord]:
        for offset in self._offsets:
            if offset >= 0:
                yield self._read(offset)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<RunLog of {len(self)} run(s)>"

    def _read(self, offset: int) -> RunRecord:
        self._reading = True
        self._file.seek(offset)
        if self._file.read(1) == b"P":  # our own pickle, written by ``add`` above
            size = int.from_bytes(self._file.read(8), "little")
            record = pickle.loads(self._file.read(size))
            assert isinstance(record, RunRecord)
            return record
        return RunRecord.model_validate_json(self._file.readline())
