"""Delimited access logs (space-separated with ``"`` quoting: NGINX/Apache combined and common,
AWS ALB; tab-separated: CloudFront) read by pyarrow's streaming CSV parser: multithreaded C++,
a block of rows at a time, so memory stays bounded whatever the file's size."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as csv

from .source import LogBatch, LogReader, batch_of, canonical, is_gzipped
from .times import WHOLE_SECOND, parse_times

BLOCK_BYTES = 1 << 22


def arrow_stream(path: Path) -> pa.NativeFile:
    """The file as arrow reads it natively, gunzipped when it starts with the gzip magic: a
    Python file object would have the parser's read-ahead buffer tens of MB of Python bytes."""
    gz = is_gzipped(path)
    raw = pa.OSFile(str(path))
    return pa.CompressedInputStream(raw, "gzip") if gz else raw


@dataclass(frozen=True)
class Layout:
    """Which column holds what: ``names`` maps a column to its canonical field, ``time`` lists
    the columns whose text (joined by a space) is the time, in the form ``time_variable``."""

    count: int
    names: dict[int, str]
    time: tuple[int, ...]
    time_variable: str
    delimiter: str = " "
    skip_rows: int = 0
    fix: Callable[[dict[str, pa.Array]], dict[str, pa.Array]] | None = field(default=None, compare=False)
    """A format's own clean-up of the raw columns (ALB's ``client:port``)."""


class DelimitedReader(LogReader):
    def __init__(self, path: Path, name: str, shape: Layout) -> None:
        super().__init__(path)
        self.name = name
        self.layout = shape
        self.whole_second = shape.time_variable in WHOLE_SECOND

    def _invalid(self, row: csv.InvalidRow) -> str:
        self.bad.add(row.number, row.text)
        self.lines += 1
        return "skip"

    def batches(self) -> Iterator[LogBatch]:
        shape = self.layout
        names = [f"c{i}" for i in range(shape.count)]
        wanted = sorted({*shape.names, *shape.time})
        reader = csv.open_csv(
            arrow_stream(self.path),
            read_options=csv.ReadOptions(column_names=names, block_size=BLOCK_BYTES, skip_rows=shape.skip_rows),
            parse_options=csv.ParseOptions(delimiter=shape.delimiter, quote_char='"' if shape.delimiter == " " else False,
                                           escape_char="\\" if shape.delimiter == " " else False,
                                           invalid_row_handler=self._invalid),
            convert_options=csv.ConvertOptions(column_types={n: pa.string() for n in names},
                                               include_columns=[names[i] for i in wanted],
                                               strings_can_be_null=False, quoted_strings_can_be_null=False),
        )
        with reader:
            for block in reader:
                if block.num_rows == 0:
                    continue
                self.lines += block.num_rows
                yield self._batch(block)

    def _batch(self, block: pa.RecordBatch) -> LogBatch:
        shape = self.layout
        parts = [block.column(f"c{i}") for i in shape.time]
        text = parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, " ")
        if shape.time_variable == "time_local":
            text = pc.utf8_trim(text, "[]")
        raw = {target: block.column(f"c{i}") for i, target in shape.names.items()}
        if shape.fix is not None:
            raw = shape.fix(raw)
        return batch_of(parse_times(shape.time_variable, text), canonical(raw), text, self.bad)
