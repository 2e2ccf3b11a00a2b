"""Delimited access logs (space-separated with ``"`` quoting: NGINX/Apache combined and common,
AWS ALB; tab-separated: CloudFront) read by pyarrow's CSV parser (multithreaded C++) one block of
the bounded line stream at a time (``stream.py``), so memory stays bounded whatever the file's
size and no byte reaches the parser that the bounds have not passed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as csv

from .source import LogBatch, LogReader, batch_of, canonical
from .stream import DEFAULT_BOUNDS, Block, LogError, ReadBounds
from .times import WHOLE_SECOND, parse_times


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
    def __init__(self, path: Path, name: str, shape: Layout, bounds: ReadBounds = DEFAULT_BOUNDS) -> None:
        super().__init__(path, bounds)
        self.name = name
        self.layout = shape
        self.whole_second = shape.time_variable in WHOLE_SECOND
        self._block: Block | None = None

    def _invalid(self, row: csv.InvalidRow) -> str:
        number = self._block.number(row.number - 1) if self._block is not None and (row.number or 0) > 0 else None
        self.bad.add(number, row.text)
        self.lines += 1
        return "skip"

    def _read(self) -> Iterator[LogBatch]:
        shape = self.layout
        names = [f"c{i}" for i in range(shape.count)]
        wanted = sorted({*shape.names, *shape.time})
        read_options = csv.ReadOptions(column_names=names, use_threads=True,  # a block must hold the longest line
                                       block_size=max(1 << 20, 2 * self.bounds.max_line_bytes))
        parse_options = csv.ParseOptions(delimiter=shape.delimiter, quote_char='"' if shape.delimiter == " " else False,
                                         escape_char="\\" if shape.delimiter == " " else False,
                                         invalid_row_handler=self._invalid, newlines_in_values=False)
        convert_options = csv.ConvertOptions(column_types={n: pa.string() for n in names},
                                             include_columns=[names[i] for i in wanted],
                                             strings_can_be_null=False, quoted_strings_can_be_null=False)
        # the first block on one thread: its unreadable rows then come in file order with their
        # numbers (threads report them in any order, unnumbered), so a refusal quotes line 1 on
        first_options = csv.ReadOptions(column_names=names, use_threads=False, block_size=read_options.block_size)
        for i, block in enumerate(self._blocks(skip_rows=shape.skip_rows)):
            self._block = block
            try:
                table = csv.read_csv(pa.BufferReader(block.data), read_options=read_options if i else first_options,
                                     parse_options=parse_options, convert_options=convert_options)
            except pa.ArrowInvalid as exc:
                raise LogError(f"{self.path}: lines {block.first_line:,} on cannot be read as {self.name} "
                               f"({str(exc).splitlines()[0]})") from None
            if table.num_rows == 0:
                continue
            self.lines += table.num_rows
            yield self._batch(table.combine_chunks().to_batches()[0])

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
