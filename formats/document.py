"""The base of the JSON documents sixnines writes and reads back (formats.manifest,
formats.summary): pydantic models whose field docstrings are the documentation (they are
the `description`s of the shipped JSON Schemas, formats.schema).

A field the writer never gave is not written: a document holds the keys it was built or
read with (`model_dump(exclude_unset=True)`), so a run that was never analysed has no
latency figures rather than nulls, and a file read and written again keeps its shape.
Readers see the field's default for a key the file lacks (an older file): the default is
the fallback the project promises for it (a manifest without `throughput_window` reads as
100). Keys a model does not know are ignored on reading (summaries) or kept (manifests,
which hold facts other parts add).

Writers give fields at construction or assign them (each assignment is validated); a
default changed in place (appending to a `problems` the writer never gave) is not written.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError

from sixnines.formats.run_files import shown


class Document(BaseModel):
    """A JSON object sixnines writes; see the module doc."""

    model_config = ConfigDict(use_attribute_docstrings=True, validate_by_name=True,
                              validate_by_alias=True, serialize_by_alias=True,
                              json_schema_serialization_defaults_required=True,
                              validate_assignment=True)
    #: fields written even when the writer left them at their default (schema_version)
    ALWAYS_WRITTEN: ClassVar[tuple[str, ...]] = ()

    def model_post_init(self, context: Any, /) -> None:
        self.__pydantic_fields_set__.update(self.ALWAYS_WRITTEN)

    def as_json(self) -> dict[str, Any]:
        """The document as the JSON object written to its file."""
        return self.model_dump(mode="json", exclude_unset=True)

    def text(self, indent: int | None = 2, allow_nan: bool = False) -> str:
        """The file's text, one newline at the end; NaN and infinities (not JSON) raise
        ValueError unless allowed."""
        return json.dumps(self.as_json(), indent=indent, allow_nan=allow_nan) + "\n"


def first_error(error: ValidationError) -> str:
    """One line on why a JSON object is not the document it should be: the first problem,
    with where it is (`agents[0].id: Field required`). A key from the file is shown quoted
    and escaped (`artifacts['/etc/x']`): the file may be anyone's."""
    found = error.errors()[0]
    where = "".join(_step(part) for part in found["loc"] if part != "[key]").lstrip(".")
    message = found["msg"].removeprefix("Value error, ")
    more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
    return f"{f'`{where}`: ' if where else ''}{message}{more}"


def _step(part: int | str) -> str:
    if isinstance(part, int):
        return f"[{part}]"
    return f".{part}" if part.replace("_", "").replace("-", "").isalnum() and \
        part.isascii() else f"[{shown(part)}]"
