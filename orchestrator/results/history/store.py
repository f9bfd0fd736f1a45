"""The history's store: every night's rows (history.rows) in one Parquet file, with a CSV
copy for spreadsheets, kept up to date incrementally.

By default it lives in `sixnines-history/` inside the first root (formats.layout), which
is where `sixnines history` is pointed night after night. An update finds the nights
under the roots (history.nights) and reads again only those that are new or whose files'
status digest changed (a file written, replaced, added or removed), each night's checksum
then saying whether its content did; the rows of nights no longer there (deleted, or
under a root not given this time) are dropped, and the others' are kept as they are.
Both files are then written whole or not at all (formats.atomic), and only when something
changed; when nights were only added after every night kept (the nightly case), the CSV
is the old one copied with their lines added. A store that cannot be read, or was
written with other columns, is rebuilt from the nights, as `--rebuild` does: it holds
nothing the results directories do not.

Reading many nights goes to a process per core: reading is parsing (JSON, the .hgrm
files) and the bands' arithmetic, one core's work per night.
"""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Literal, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from sixnines.formats.atomic import atomic_path
from sixnines.formats.errors import BadInput
from sixnines.formats.layout import HISTORY_CSV, HISTORY_DIR, HISTORY_TABLE
from sixnines.formats.run_files import RefusedPath, file_under, open_regular
from sixnines.orchestrator.results.history.nights import NightDir, file_status, find_nights
from sixnines.orchestrator.results.history.rows import COLUMNS, night_rows, table_of

#: Fewer nights than this are read in this process (a pool's start costs more).
PARALLEL_FROM = 16
KEY = ("root", "path")
#: Columns the store keeps for itself, left out of the CSV copy.
BOOKKEEPING = ("checksum", "file_status")
#: The Parquet file's metadata key for the size of the CSV written with it.
CSV_SIZE = "sixnines.csv_size"
#: What a spreadsheet takes for the start of a formula (store._inert).
FORMULA_FIRST = ("=", "+", "-", "@", "\t", "\r")
FORMULA_START = "^([=+\\-@\t\r])"  # a regular expression of the same, as a group
#: The store's order of rows: nights in order of time, then root and path.
IN_ORDER: list[tuple[str, Literal["ascending", "descending"]]] = [
    ("when", "ascending"), ("root", "ascending"), ("path", "ascending")]


class StoreRefused(BadInput):
    """A root that is no directory or holds no results, or a store folder leading out of
    its root."""


@dataclass
class Update:
    """What an update did, and the store it left."""
    table: pa.Table
    location: Path  # the store's folder
    nights: int
    added: int = 0
    changed: int = 0  # read again, their content changed
    rechecked: int = 0  # read again, their content the same (files touched or copied)
    removed: int = 0
    rebuilt: str | None = None  # why the whole store was read again

    @property
    def written(self) -> bool:
        return bool(self.added or self.changed or self.rechecked or self.removed
                    or self.rebuilt)


def default_location(roots: Sequence[Path]) -> Path:
    """`sixnines-history/` in the first root, refused when a link takes it elsewhere (a
    results root may come from anywhere)."""
    root = roots[0]
    try:
        file_under(root, HISTORY_DIR, HISTORY_TABLE)
    except RefusedPath as refused:
        raise StoreRefused(f"{refused}: the history is not written there; give --store") \
            from None
    return root / HISTORY_DIR


def update_store(roots: Sequence[Path], location: Path, rebuild: bool = False) -> Update:
    """Bring the store at `location` up to date with the nights under `roots`."""
    for root in roots:
        if not root.is_dir():
            raise StoreRefused(f"{root}: no such directory")
    previous, why = (None, "asked (--rebuild)") if rebuild else read_store(location)
    nights = find_nights([root.absolute() for root in roots])
    if not nights:
        raise StoreRefused(f"{', '.join(map(str, roots))}: no results directory there (a "
                           "scenario's output: <root>/<scenario>/<stamp>/)")
    known = _indexed(previous) if previous is not None else {}
    statuses = {_key(night): file_status(night.path) for night in nights}
    unchanged = {key for key, status in statuses.items()
                 if key in known and known[key][1] == status}
    stale = [(night, statuses[_key(night)]) for night in nights
             if _key(night) not in unchanged]
    parts = _map(_rows_of, stale)
    removed = len(set(known) - set(statuses))
    appended: pa.Table | None = None  # rows that go after every row of the store's
    if previous is not None and not (stale or removed):
        table = previous
    elif previous is not None and not removed and len(unchanged) == len(known):
        table, appended = _in_order(previous, table_of(parts))  # only nights added
    else:
        kept = table_of([]) if previous is None else previous.filter(
            pc.is_in(_keys(previous), value_set=pa.array(sorted(unchanged), pa.string())))
        table, _ = _in_order(kept, table_of(parts))
    update = Update(table, location, nights=len(nights), removed=removed, rebuilt=why)
    for (night, _), rows in zip(stale, parts, strict=True):
        if _key(night) not in known:
            update.added += 1
        elif known[_key(night)][0] != rows["checksum"][0]:
            update.changed += 1
        else:
            update.rechecked += 1
    if update.written:
        write_store(update.table, location,
                    appended if _csv_size(previous) == _size(location / HISTORY_CSV) else None)
    return update


def _in_order(kept: pa.Table, read: pa.Table) -> tuple[pa.Table, pa.Table | None]:
    """The rows kept and those read, nights in order of time (then root and path), and
    the rows read when they simply follow the rows kept: the nights read are sorted, and
    the whole sorted again only when one of them is not later than every night kept (the
    nightly case — one more night — needs no sort)."""
    read = read.sort_by(IN_ORDER)
    if kept.num_rows and read.num_rows and \
            pc.min(read["when"]).as_py() <= pc.max(kept["when"]).as_py():
        return pa.concat_tables([kept, read]).sort_by(IN_ORDER), None
    return pa.concat_tables([kept, read]), read


def read_store(location: Path) -> tuple[pa.Table | None, str | None]:
    """The store's table, or None and why it is to be rebuilt (None: there is none yet)."""
    path = location / HISTORY_TABLE
    try:
        with open_regular(path) as source:
            table = pq.ParquetFile(source).read()
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError, pa.ArrowException) as error:  # RefusedPath is a ValueError
        return None, f"{path} could not be read ({str(error).splitlines()[0]})"
    if not table.schema.equals(COLUMNS):
        return None, f"{path} has other columns (another version of sixnines wrote it)"
    return table, None


def write_store(table: pa.Table, location: Path, appended: pa.Table | None = None) -> None:
    """history.csv (without the BOOKKEEPING columns, formulas made inert) and
    history.parquet (recording the CSV's size), each whole or not at all. `appended`: the
    last rows of `table`, all that is new since the CSV there was written; the CSV is then
    a copy of it with their lines added."""
    location.mkdir(parents=True, exist_ok=True)
    csv = location / HISTORY_CSV
    with atomic_path(csv) as temp:
        if appended is not None:
            shutil.copyfile(csv, temp)
            with open(temp, "ab") as sink:
                pa_csv.write_csv(_csv_rows(appended), sink,
                                 pa_csv.WriteOptions(include_header=False))
        else:
            pa_csv.write_csv(_csv_rows(table), temp)
        size = os.stat(temp).st_size
    with atomic_path(location / HISTORY_TABLE) as temp:
        pq.write_table(table.replace_schema_metadata({CSV_SIZE: str(size)}), temp)


def _csv_rows(table: pa.Table) -> pa.Table:
    return _inert(table.drop_columns(list(BOOKKEEPING)))


def _csv_size(previous: pa.Table | None) -> int | None:
    """The size of the CSV written with the store `previous` (its Parquet metadata): a
    CSV of another size was deleted or edited since, and is written whole."""
    metadata = (previous.schema.metadata if previous is not None else None) or {}
    try:
        return int(metadata[CSV_SIZE.encode()])
    except (KeyError, ValueError):
        return None


def _size(path: Path) -> int | None:
    try:
        return os.lstat(path).st_size
    except OSError:
        return None


def _inert(table: pa.Table) -> pa.Table:
    """The table with every text starting as a spreadsheet formula does (=, +, -, @, a
    tab or a carriage return) behind a `'`, which spreadsheets show and never evaluate:
    names come from results directories that may come from anywhere, and a system named
    `=HYPERLINK(…)` must not become a live formula in whoever opens the CSV."""
    first = pa.array(FORMULA_FIRST, pa.string())
    for index, field in enumerate(table.schema):
        column = table.column(index)
        if pa.types.is_string(field.type) and pc.any(pc.is_in(
                pc.utf8_slice_codeunits(column, 0, 1), value_set=first)).as_py():
            table = table.set_column(index, field, pc.replace_substring_regex(
                column, pattern=FORMULA_START, replacement="'\\1"))
    return table


def _rows_of(item: tuple[NightDir, str]) -> dict:
    return night_rows(*item)


def _key(night: NightDir) -> str:
    return f"{night.root}\0{night.relative}"


def _keys(table: pa.Table) -> pa.ChunkedArray:
    """Each row's night, as `_key` names it (called by name: the stubs' signature of
    binary_join_element_wise takes no column beside a text)."""
    return pc.call_function("binary_join_element_wise", [table["root"], table["path"], "\0"])


def _indexed(table: pa.Table) -> dict[str | None, tuple[str | None, str | None]]:
    """Each night's checksum and file status digest as the store has them (every row of a
    night carries the same: its first row's are taken)."""
    if not table.num_rows:
        return {}
    keys = _keys(table).combine_chunks().dictionary_encode()
    _, first = np.unique(keys.indices.to_numpy(zero_copy_only=False), return_index=True)
    rows = table.select(["checksum", "file_status"]).take(first)
    return dict(zip(keys.dictionary.to_pylist(),
                    zip(rows["checksum"].to_pylist(), rows["file_status"].to_pylist(),
                        strict=True), strict=True))


def distinct(table: pa.Table, names: Sequence[str]) -> dict[tuple, int]:
    """The distinct combinations of the columns `names`, in the order they first appear,
    each with its count of rows: what `Table.group_by` gives, without the half second its
    import costs a command."""
    if not table.num_rows:
        return {}
    _, first, counts = np.unique(_combined(table, names), axis=0, return_index=True,
                                 return_counts=True)
    order = np.argsort(first)
    rows = table.take(first[order]).select(list(names))
    return dict(zip(zip(*(column.to_pylist() for column in rows.columns), strict=True),
                    counts[order].tolist(), strict=True))


def _combined(table: pa.Table, names: Sequence[str]) -> np.ndarray:
    """One integer per row that is equal where the columns `names` all are (their codes
    in mixed radix), or the codes side by side where that would not fit 63 bits."""
    codes = [_codes(table[name]) for name in names]
    sizes = [int(code.max()) + 1 for code in codes]
    if math.prod(sizes) >= 1 << 62:
        return np.column_stack(codes)
    combined = np.zeros(table.num_rows, np.int64)
    for code, size in zip(codes, sizes, strict=True):
        combined = combined * size + code
    return combined


def _codes(column: pa.ChunkedArray) -> np.ndarray:
    """Each value's index among the column's distinct values (null one of them)."""
    encoded = column.combine_chunks().dictionary_encode(null_encoding="encode")
    return encoded.indices.to_numpy(zero_copy_only=False)


Item = TypeVar("Item")
Result = TypeVar("Result")


def _map(work: Callable[[Item], Result], items: Iterable[Item]) -> list[Result]:
    """`work` on each item, in order: in a process per core when there are many."""
    items = list(items)
    cores = os.cpu_count() or 1
    if len(items) < PARALLEL_FROM or cores < 2:
        return list(map(work, items))
    with ProcessPoolExecutor(cores, mp_context=get_context("fork")) as pool:
        return list(pool.map(work, items, chunksize=max(1, len(items) // (cores * 8))))
