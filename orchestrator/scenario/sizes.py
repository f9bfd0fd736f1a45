"""`message_size:` as a distribution, as a scenario writes it.

`{uniform: [64, 4KB]}`, `{lognormal: {median: 512, p99: 16KB}}`, weighted choices
(`{64: 0.7, 1KB: 0.25, 64KB: 0.05}`, or the same under `weighted:`) and `{file: PATH}` (one
size a line, relative to the scenario file, read by the controller). The numbers agents
draw from are formats.sizes'; a file is read here, bounded in size.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, model_serializer, model_validator

from sixnines.formats.keys import MAX_KEYED_SIZE, MIN_KEYED_SIZE, MIN_PERIOD
from sixnines.formats.payload import HEADER_SIZE
from sixnines.formats.sizes import CHOICES, LOGNORMAL, UNIFORM, Sizes
from sixnines.orchestrator.scenario import units
from sixnines.orchestrator.scenario.problems import shown
from sixnines.orchestrator.scenario.side_files import read_side_file

WEIGHTED, FILE = "weighted", "file"
FORMS = ("{uniform: [LOW, HIGH]}, {lognormal: {median: SIZE, p99: SIZE}}, weighted "
         "choices {SIZE: WEIGHT, ...} or {file: PATH}")
#: Largest file of sizes read (one size a line): ample for a production sample.
MAX_SIZES_FILE = 4 << 20


class SizeDistribution(BaseModel):
    """A size distribution as written (sizes in bytes); exactly one field is set."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    uniform: tuple[int, int] | None = None
    lognormal: tuple[int, int] | None = None  # (median, p99)
    weighted: tuple[tuple[int, float], ...] | None = None
    file: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _written(cls, value: Any) -> Any:
        if isinstance(value, SizeDistribution):
            return value
        if not isinstance(value, dict) or not value:
            raise ValueError(f"must be a size or a distribution: {FORMS} (got {shown(value)})")
        if len(value) == 1:
            ((key, given),) = value.items()
            if key == UNIFORM:
                return {UNIFORM: _uniform(given)}
            if key == LOGNORMAL:
                return {LOGNORMAL: _lognormal(given)}
            if key == WEIGHTED:
                return {WEIGHTED: _weighted(given)}
            if key == FILE:
                if not isinstance(given, str) or not given.strip() or not given.isprintable():
                    raise ValueError(f"{FILE}: must be a path (got {shown(given)})")
                return {FILE: given.strip()}
        if any(key in (UNIFORM, LOGNORMAL, WEIGHTED, FILE) for key in value):
            raise ValueError(f"a distribution is one of {FORMS} (got {shown(value)})")
        return {WEIGHTED: _weighted(value)}

    @model_serializer
    def _as_written(self) -> dict:
        """The one field set, sizes in bytes: what params, run ids and manifests show."""
        if self.uniform is not None:
            return {UNIFORM: list(self.uniform)}
        if self.lognormal is not None:
            return {LOGNORMAL: {"median": self.lognormal[0], "p99": self.lognormal[1]}}
        if self.weighted is not None:
            return {WEIGHTED: {str(size): weight for size, weight in self.weighted}}
        return {FILE: self.file}

    def largest_without_file(self) -> int | None:
        """The largest size drawn, when no file must be read to know it."""
        return None if self.file is not None else self.sizes(Path()).largest

    def sizes(self, folder: Path) -> Sizes:
        """The numbers agents draw from (a file read now, relative to `folder`);
        ValueError for a file that cannot be read or holds no sizes."""
        if self.uniform is not None:
            return Sizes(UNIFORM, low=self.uniform[0], high=self.uniform[1])
        if self.lognormal is not None:
            return Sizes(LOGNORMAL, median=self.lognormal[0], p99=self.lognormal[1])
        if self.weighted is not None:
            return Sizes(CHOICES, values=tuple(size for size, _ in self.weighted),
                         weights=tuple(weight for _, weight in self.weighted))
        assert self.file is not None
        values = read_sizes(folder / Path(self.file).expanduser())
        return Sizes(CHOICES, values=values, weights=(1.0,) * len(values))


def size_label(written: object) -> str | None:
    """A distribution as run ids name it, sizes as written: `uniform-64-4KB`,
    `lognormal-512-16KB`, `weighted-64-0.7-1KB-0.3`, `file=PATH`; None when `written` is
    not one."""
    if not isinstance(written, dict):
        return None
    try:
        SizeDistribution.model_validate(written)
    except ValueError:
        return None
    key, given = next(iter(written.items()))
    if len(written) > 1 or key not in (UNIFORM, LOGNORMAL, WEIGHTED, FILE):
        key, given = WEIGHTED, written  # bare weighted choices
    if key == FILE:
        return f"{FILE}={str(given).strip()}"
    if key == UNIFORM:
        parts = list(given)
    elif key == LOGNORMAL:
        parts = [given["median"], given["p99"]]
    else:
        parts = [part for size, weight in given.items() for part in (size, weight)]
    return "-".join([key, *(str(part).strip() for part in parts)])


def _size(value: object) -> int:
    size = units.parse_size(value)
    if size <= 0:
        raise ValueError(f"{shown(value)} is not a size above 0")
    return size


def _uniform(given: object) -> tuple[int, int]:
    if not isinstance(given, list | tuple) or len(given) != 2:
        raise ValueError(f"uniform: must be [LOW, HIGH] (got {shown(given)})")
    low, high = _size(given[0]), _size(given[1])
    if low >= high:
        raise ValueError(f"uniform: LOW must be below HIGH (got {shown(given)})")
    return low, high


def _lognormal(given: object) -> tuple[int, int]:
    if not isinstance(given, dict) or set(given) != {"median", "p99"}:
        raise ValueError(f"lognormal: must be {{median: SIZE, p99: SIZE}} (got {shown(given)})")
    median, p99 = _size(given["median"]), _size(given["p99"])
    if p99 <= median:
        raise ValueError(f"lognormal: p99 must be above the median (got {shown(given)})")
    return median, p99


def _weighted(given: object) -> tuple[tuple[int, float], ...]:
    if not isinstance(given, dict) or not given:
        raise ValueError(f"weighted: must be {{SIZE: WEIGHT, ...}} (got {shown(given)})")
    choices: dict[int, float] = {}
    for size, weight in given.items():
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not weight > 0:
            raise ValueError(f"the weight of {shown(size)} must be a number above 0 "
                             f"(got {shown(weight)})")
        choices[_size(size)] = choices.get(_size(size), 0.0) + float(weight)
    return tuple(sorted(choices.items()))


def read_sizes(path: Path) -> tuple[int, ...]:
    """The sizes of a file, one a line (blank lines and `#` comments skipped); ValueError
    saying which line is not a size."""
    data = read_side_file(path, MAX_SIZES_FILE)
    values = []
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        try:
            values.append(_size(text))
        except ValueError as exc:
            raise ValueError(f"{shown(str(path))} line {number}: {exc}") from None
    if not values:
        raise ValueError(f"{shown(str(path))} holds no sizes")
    return tuple(values)


def header_problem(sizes: Sizes, keyed: bool = False) -> str | None:
    """Why a distribution's sizes cannot all carry the header, and with keys the key index
    after it (None: they can)."""
    floor = MIN_KEYED_SIZE if keyed else HEADER_SIZE
    carried = (f"{floor}-byte keyed header (the key index follows the {HEADER_SIZE}-byte "
               "message header)" if keyed else f"{HEADER_SIZE}-byte message header")
    if sizes.kind == LOGNORMAL:  # truncated below at the header: its median must hold it
        if sizes.median < floor:
            return f"the lognormal's median {sizes.median:g} B is below the {carried}"
        return None
    if sizes.smallest < floor:
        return f"its smallest size, {sizes.smallest} B, is below the {carried}"
    if keyed and sizes.largest > MAX_KEYED_SIZE:
        return (f"its largest size, {sizes.largest} B, is above the largest keyed message, "
                f"{MAX_KEYED_SIZE >> 20} MiB (a sender's ring holds {MIN_PERIOD} keyed "
                "frames)")
    return None
