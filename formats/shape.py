"""A rate shape as a run records and follows it: the intended rate over the run, in
segments from the start instant, each going linearly from `rate` to `to` msg/s (equal
for a constant stretch). Steps, ramps, bursts and traces all become such segments; the
first one covers the warm-up, at the shape's opening rate.

`Cumulative` is the shape's integral Λ(t), the messages due by t, and its inverse: the
i-th message of a fixed schedule is due at Λ⁻¹(i), and a Poisson schedule within the shape
maps the arrivals of a unit-rate Poisson process through Λ⁻¹ (time rescaling gives a
nonhomogeneous Poisson process of exactly the shape's rate). Past the last segment the
last rate holds, so a Poisson tail has somewhere to go.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import ConfigDict, Field, model_validator

from sixnines.formats.document import Document

NS = 1_000_000_000

ShapeKind = Literal["steps", "ramp", "bursts", "trace"]
PositiveRate = Annotated[float, Field(gt=0)]
#: Most steps in a shape: the analysis takes each step's figures from every batch of
#: records, so a manifest's steps bound its work.
MAX_STEPS = 1000


class Segment(Document):
    """One stretch of the intended rate (msg/s over all senders), linear within."""

    start_ns: Annotated[int, Field(ge=0)]
    """Its start, from the run's start instant (the warm-up's start)."""
    end_ns: int
    rate: PositiveRate
    """The intended rate at its start."""
    to: PositiveRate
    """The intended rate at its end (equal to `rate`: constant)."""

    @model_validator(mode="after")
    def _forward(self) -> Segment:
        if self.end_ns <= self.start_ns:
            raise ValueError("a segment must end after it starts")
        return self


class RateShape(Document):
    """The intended rate of a shaped run (workload `rate: {steps|ramp|bursts|trace: …}`).
    `steps` and `source` are written only when set."""

    model_config = ConfigDict(json_schema_serialization_defaults_required=False)

    kind: ShapeKind
    label: str
    """The shape in a few words ("steps 500 → 2k msg/s")."""
    segments: Annotated[list[Segment], Field(min_length=1)]
    """Back to back from 0, the first covering the warm-up (when there is one)."""
    steps: list[int] = Field(default_factory=list, max_length=MAX_STEPS)
    """With kind steps: the indexes in `segments` of the scenario's steps, in order (the
    figures per step are taken over these, within the measured time)."""
    source: str | None = None
    """A trace's file, as the scenario named it."""

    @model_validator(mode="after")
    def _back_to_back(self) -> RateShape:
        ends = [0, *(s.end_ns for s in self.segments[:-1])]
        if any(s.start_ns != end for s, end in zip(self.segments, ends, strict=True)):
            raise ValueError("segments must follow each other from 0 without gaps")
        if any(not 0 <= i < len(self.segments) for i in self.steps):
            raise ValueError("a step names no segment")
        if any(later <= i for i, later in zip(self.steps, self.steps[1:], strict=False)):
            raise ValueError("steps must name their segments in order, each once")
        return self

    @property
    def peak(self) -> float:
        """The highest intended rate, msg/s."""
        return max(max(s.rate, s.to) for s in self.segments)

    def mean(self, start_ns: int, end_ns: int) -> float:
        """The mean intended rate (msg/s) from `start_ns` to `end_ns`."""
        due = self.cumulative().at(np.array([start_ns, end_ns]))
        return float(due[1] - due[0]) * NS / (end_ns - start_ns)

    def cumulative(self) -> Cumulative:
        return Cumulative(self.segments)


class Cumulative:
    """Λ(t) of a shape and its inverse, over whole numpy arrays (see the module doc)."""

    def __init__(self, segments: list[Segment]) -> None:
        self.start = np.array([s.start_ns for s in segments], dtype=np.float64)
        self.length = np.array([s.end_ns - s.start_ns for s in segments], dtype=np.float64)
        self.rate = np.array([s.rate for s in segments], dtype=np.float64) / NS  # per ns
        self.slope = (np.array([s.to for s in segments], dtype=np.float64) / NS - self.rate) \
            / self.length  # per ns²
        self.end = float(segments[-1].end_ns)
        self.last = segments[-1].to / NS
        areas = self.rate * self.length + self.slope * self.length ** 2 / 2
        self.before = np.concatenate([[0.0], np.cumsum(areas)])  # messages due at each start

    def at(self, t_ns: np.ndarray | float) -> np.ndarray:
        """Λ(t): messages due by each time."""
        t = np.asarray(t_ns, dtype=np.float64)
        k = np.clip(np.searchsorted(self.start, t, side="right") - 1, 0, len(self.start) - 1)
        tau = np.clip(t - self.start[k], 0.0, self.length[k])
        due = self.before[k] + self.rate[k] * tau + self.slope[k] * tau ** 2 / 2
        return due + np.maximum(t - self.end, 0.0) * self.last

    def inverse(self, due: np.ndarray) -> np.ndarray:
        """Λ⁻¹: when each count of messages falls due, in ns (float64). Within a segment the
        quadratic is solved in the form that stays exact as the slope goes to 0."""
        u = np.asarray(due, dtype=np.float64)
        k = np.clip(np.searchsorted(self.before[:-1], u, side="right") - 1, 0,
                    len(self.start) - 1)
        left = u - self.before[k]
        a, b = self.rate[k], self.slope[k]
        tau = 2 * left / (a + np.sqrt(np.maximum(a * a + 2 * b * left, 0.0)))
        within = self.start[k] + np.minimum(tau, self.length[k])
        past = self.end + np.maximum(u - self.before[-1], 0.0) / self.last
        return np.where(u > self.before[-1], past, within)
