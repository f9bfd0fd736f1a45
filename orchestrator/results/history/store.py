"""The history's store: every night's rows (history.rows) in one Parquet file, with a CSV
copy for spreadsheets, kept up to date incrementally.

By default it lives in `sixnines-history/` inside the first root (formats.layout), which
is where `sixnines history` is pointed night after night. An update finds the nights
under the roots (history.nights), checksums each, and reads again only those that are new
or whose checksum changed; the rows of nights no longer there (deleted, or under a root
not given this time) are dropped, and the rows of the others are kept as they are. Both
files are then written whole or not at all (formats.atomic), and only when something
changed. A store that cannot be read, or was written with other columns, is rebuilt from
the nights, as `--rebuild` does: it holds nothing the results directories do not.

Reading and checksumming many nights goes to a process per core: reading is parsing
(JSON, the .hgrm files) and the bands' arithmetic, one core's work per night.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import TypeVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from sixnines.formats.atomic import atomic_path
from sixnines.formats.errors import BadInput
from sixnines.formats.layout import HISTORY_CSV, HISTORY_DIR, HISTORY_TABLE
from sixnines.formats.run_files import RefusedPath, file_under, open_regular
from sixnines.orchestrator.results.history.nights import NightDir, checksum, find_nights
from sixnines.orchestrator.results.history.rows import COLUMNS, night_rows, table_of

#: Fewer nights than this are read in this process (a pool's start costs more).
PARALLEL_FROM = 16
KEY = ("root", "path")


class StoreRefused(BadInput):
    """A root that is no directory, or a store folder leading out of its root."""


@dataclass
class Update:
    """What an update did, and the store it left."""
    table: pa.Table
    location: Path  # the store's folder
    nights: int
    added: int
    changed: int
    removed: int
    rebuilt: str | None = None  # why the whole store was read again

    @property
    def written(self) -> bool:
        return bool(self.added or self.changed or self.removed or self.rebuilt)


def default_location(roots: Sequence[Path]) -> Path:
    """`sixnines-history/` in the first root, refused when a link takes it elsewhere (a
    results root may come from anywhere)."""
    root = roots[0]
    try:
        file_under(root, HISTORY_DIR, HISTORY_TABLE)
    except RefusedPath as refused:
        raise StoreRefused(f"{refused}: the history is not written there; give --store") from None
    return root / HISTORY_DIR


def update_store(roots: Sequence[Path], location: Path, rebuild: bool = False) -> Update:
    """Bring the store at `location` up to date with the nights under `roots`."""
    for root in roots:
        if not root.is_dir():
            raise StoreRefused(f"{root}: no such directory")
    roots = [root.absolute() for root in roots]
    previous, why = (None, "--rebuild") if rebuild else read_store(location)
    nights = find_nights(roots)
    sums = _map(checksum, [night.path for night in nights])
    known = _checksums(previous) if previous is not None else {}
    current = {_key(night): total for night, total in zip(nights, sums, strict=True)}
    fresh = [(night, total) for night, total in zip(nights, sums, strict=True)
             if known.get(_key(night)) != total]
    keep = [key for key, total in current.items() if known.get(key) == total]
    parts = _map(_rows_of, fresh)
    kept = previous.filter(pc.is_in(_keys(previous), value_set=pa.array(keep, pa.string()))) \
        if previous is not None else table_of([])
    table = pa.concat_tables([kept, table_of(parts)]).sort_by(
        [("when", "ascending"), ("root", "ascending"), ("path", "ascending")])
    update = Update(table, location, nights=len(nights),
                    added=sum(key not in known for key in map(_key, (n for n, _ in fresh))),
                    changed=sum(key in known for key in map(_key, (n for n, _ in fresh))),
                    removed=len(set(known) - set(current)), rebuilt=why)
    if update.written:
        write_store(table, location)
    return update


def read_store(location: Path) -> tuple[pa.Table | None, str | None]:
    """The store's table, or None and why it is to be rebuilt (None: there is none yet)."""
    path = location / HISTORY_TABLE
    try:
        with open_regular(path) as source:
            table = pq.read_table(source)
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError, pa.ArrowException) as error:  # RefusedPath is a ValueError
        return None, f"{path} could not be read ({str(error).splitlines()[0]})"
    if table.schema != COLUMNS:
        return None, f"{path} has other columns (another version of sixnines wrote it)"
    return table, None


def write_store(table: pa.Table, location: Path) -> None:
    """history.parquet and history.csv, each whole or not at all."""
    location.mkdir(parents=True, exist_ok=True)
    with atomic_path(location / HISTORY_TABLE) as temp:
        pq.write_table(table, temp)
    with atomic_path(location / HISTORY_CSV) as temp:
        pa_csv.write_csv(table, temp)


def _rows_of(item: tuple[NightDir, str]) -> dict:
    return night_rows(*item)


def _key(night: NightDir) -> str:
    return f"{night.root}\0{night.relative}"


def _keys(table: pa.Table) -> pa.Array:
    return pc.binary_join_element_wise(table["root"], table["path"], "\0")


def _checksums(table: pa.Table) -> dict[str, str]:
    """Each night's checksum as the store has it."""
    nights = table.group_by([*KEY, "checksum"]).aggregate([])
    return dict(zip(_keys(nights).to_pylist(), nights["checksum"].to_pylist(), strict=True))


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
