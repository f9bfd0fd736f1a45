"""Run statuses, best to worst: ok, partial, failed, corrupt.

- ok: every agent finished and every message is accounted for in the data.
- partial: figures exist, but something is missing or doubtful (an agent died, receivers
  left no data, the hlogs disagree with the raw records).
- failed: the run recorded nothing to analyse (or its analysis could not finish).
- corrupt: files of the run fail their checks (checksum, cut short, unreadable): the tool
  cannot vouch for any figure, so none is given. It ranks below failed because a failure
  is a fact about the system under test, while corrupt means the record itself is
  damaged or was edited: a nightly comparison must flag failed → corrupt too.

Any other value (a manifest still `running`, an unknown word) ranks as failed: no figures
a reader can rely on. Plain Python: the reports and `compare` use it without Spark.
"""

from __future__ import annotations

OK, PARTIAL, FAILED, CORRUPT = "ok", "partial", "failed", "corrupt"
ORDER = (OK, PARTIAL, FAILED, CORRUPT)


def rank(status: str | None) -> int:
    """0 for ok … 3 for corrupt; unknown statuses as failed."""
    return ORDER.index(status) if status in ORDER else ORDER.index(FAILED)


def worst(*statuses: str | None) -> str | None:
    """The worst of the statuses (the first of equally bad ones, so an unknown word such
    as `running` is kept rather than renamed)."""
    return max(statuses, key=rank)
