"""Human units: sizes, durations and rates, good and bad."""

from __future__ import annotations

import re

import pytest

from sixnines.orchestrator.scenario.units import parse_duration, parse_rate, parse_size


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (64, 64),
        ("64", 64),
        ("512B", 512),
        ("512 b", 512),
        ("1KB", 1024),
        ("1kib", 1024),
        ("1.5KB", 1536),
        ("1.5 KiB", 1536),
        ("4MB", 4 * 1024**2),
        ("2MiB", 2 * 1024**2),
        ("1GB", 1024**3),
        ("1gib", 1024**3),
        (64.0, 64),
    ],
)
def test_sizes(text: object, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["10 parsecs", "1k", "KB", "", "1..5KB", True, None, [64]])
def test_bad_sizes(text: object) -> None:
    with pytest.raises(ValueError, match=re.escape("is not a size: use e.g. 64, 512B, 1KB")):
        parse_size(text)


@pytest.mark.parametrize("text", ["1.3KB", "10.5", 10.5])
def test_sizes_must_be_whole_bytes(text: object) -> None:
    with pytest.raises(ValueError, match="not a whole number of bytes"):
        parse_size(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (10, 10_000_000_000),
        (0.5, 500_000_000),
        ("2.5", 2_500_000_000),
        ("10s", 10_000_000_000),
        ("10 s", 10_000_000_000),
        ("500ms", 500_000_000),
        ("250us", 250_000),
        ("250µs", 250_000),
        ("100ns", 100),
        ("2m", 120_000_000_000),
        ("1h", 3_600_000_000_000),
        ("1.5s", 1_500_000_000),
        ("0", 0),
    ],
)
def test_durations(text: object, expected: int) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["10 parsecs", "1d", "s", "", "1s2", False, float("inf")])
def test_bad_durations(text: object) -> None:
    with pytest.raises(ValueError, match=re.escape("is not a duration: use e.g. 10s, 500ms, 2m")):
        parse_duration(text)


def test_duration_message_quotes_the_value() -> None:
    with pytest.raises(ValueError) as info:
        parse_duration("10 parsecs")
    assert str(info.value) == "'10 parsecs' is not a duration: use e.g. 10s, 500ms, 2m"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (2000, 2000.0),
        (2.5, 2.5),
        ("2000", 2000.0),
        ("20k", 20_000.0),
        ("20K", 20_000.0),
        ("1.5M", 1_500_000.0),
        ("500/s", 500.0),
        ("20k msg/s", 20_000.0),
        ("1e3", 1000.0),
    ],
)
def test_rates(text: object, expected: float) -> None:
    value = parse_rate(text)
    assert value == expected
    assert isinstance(value, float)


@pytest.mark.parametrize("text", ["fast", "1.5m", "20kk", "", "10 msg", True, float("nan")])
def test_bad_rates(text: object) -> None:
    with pytest.raises(ValueError, match=re.escape("is not a rate: use e.g. 2000, 20k, 1.5M")):
        parse_rate(text)
