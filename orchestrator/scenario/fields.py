"""The value types a scenario's fields are written in: the workload enums, and annotated
types that parse and check one value as written ("1KB", "20k", "500ms") into base units.

They live apart from the models so that systems, workloads and the scenario can all use them
without importing each other.

Every number has an upper bound, named below and stated in its error: generous for a
demanding benchmark, low enough to catch a typo of a few extra zeros before it becomes a
run that cannot start or never ends. (Whether a plan fits the machines is checked apart.)
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Literal, TypeVar

from pydantic import AfterValidator, BeforeValidator, Field, PlainSerializer

from sixnines.formats.keys import MAX_KEYS
from sixnines.formats.payload import HEADER_SIZE
from sixnines.formats.vocabulary import MAX_PARALLEL, MAX_RATE
from sixnines.orchestrator.scenario import units, written
from sixnines.orchestrator.scenario.content import parse_content
from sixnines.orchestrator.scenario.keys import parse_keys
from sixnines.orchestrator.scenario.problems import shown
from sixnines.orchestrator.scenario.sizes import SizeDistribution

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
SECOND_NS = 1_000_000_000
HOUR_NS = 3600 * SECOND_NS
MIN_SAMPLE_NS = 10_000_000

#: Names (scenario, systems, cases, hosts) become directory and run-id parts.
MAX_NAME_LENGTH = 64
#: Paths, addresses and other free text: Linux's PATH_MAX.
MAX_TEXT_LENGTH = 4096
#: A host name as DNS has it: 253 characters, in labels of at most 63.
MAX_HOST_NAME = 253
MAX_LABEL = 63
_LABEL = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?")
ADDRESS_EXAMPLE = "e.g. 127.0.0.1:7000, [::1]:7000 or broker.lab:7000"
#: Largest message: frames are built ahead in memory, a few per connection. Each driver
#: refuses what its system cannot carry below this (NATS and Kafka 64 MiB, RabbitMQ's
#: default 128 MiB, Redis 512 MiB).
MAX_MESSAGE_SIZE = 1024**3
#: Slowest and fastest schedules, in msg/s (in total, across producers).
MIN_RATE_PER_S = 0.001
MAX_RATE_PER_S = 100_000_000
#: Longest measured run (`duration`): a week-long soak test.
MAX_RUN_TIME_NS = 7 * 24 * HOUR_NS
#: Longest `warmup`, `drain` and `cpu_sample` interval.
MAX_WAIT_NS = HOUR_NS
#: Most messages of a `rate: max` run, and of a `throughput_window`: each message sent is
#: kept (24 bytes of timestamps and more) until the run ends.
MAX_MESSAGES = 10_000_000_000
#: Seeds are fed to numpy's generators (non-negative integers), here 32-bit ones.
MAX_SEED = 2**32 - 1
#: Most runs of each case in one scenario (`repeat`): beyond a few dozen, more repeats
#: narrow the run-to-run spread little and a night ends late.
MAX_REPEATS = 100


def _name(value: str) -> str:
    if len(value) > MAX_NAME_LENGTH:
        raise ValueError(f"must be at most {MAX_NAME_LENGTH} characters (names become file "
                         "names)")
    if not _NAME.fullmatch(value):
        raise ValueError("must start with a letter or digit and use only letters, digits, _ . -")
    return value


def check_text(value: str) -> str:
    """`value` if it is free text of at most MAX_TEXT_LENGTH printable characters."""
    if len(value) > MAX_TEXT_LENGTH:
        raise ValueError(f"must be at most {MAX_TEXT_LENGTH} characters")
    if not value.isprintable():
        raise ValueError("must not contain control characters (NUL, newline, tab, ...)")
    return value


def check_host(host: str) -> str:
    """`host` if a connection can be made to it as written: an IPv4 address, an IPv6 one
    (bracketed or not), or a host name (as IDNA encodes it for the resolver: labels of 1
    to 63 letters, digits, '-' and '_', 253 characters in all). What `run` would otherwise
    only find out when it connects (an idna error, or no such host)."""
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if ":" in bare or bare is not host:
        try:
            ipaddress.IPv6Address(bare)
        except ValueError:
            raise ValueError("is not an IPv6 address") from None
        return host
    if re.fullmatch(r"[\d.]+", host):
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            raise ValueError("is not an IPv4 address") from None
        return host
    try:
        name = host.encode("idna").decode("ascii")
    except UnicodeError:
        name = host  # the label checks below say what is wrong
    labels = name.removesuffix(".").split(".")
    if len(name.removesuffix(".")) > MAX_HOST_NAME:
        raise ValueError(f"is not a host name: longer than {MAX_HOST_NAME} characters")
    for label in labels:
        if not label or len(label) > MAX_LABEL:
            raise ValueError(f"is not a host name: each part between dots must have 1 to "
                             f"{MAX_LABEL} characters")
        if not _LABEL.fullmatch(label):
            raise ValueError("is not a host name: letters, digits, '-' and '_' between dots")
    return host


def split_address(address: str, any_port: bool = False) -> tuple[str, int]:
    """HOST:PORT (IPv6 in brackets) as (host, port), each checked (`check_host`; a port
    from 1, or from 0 with `any_port`, to 65535); ValueError naming what is wrong."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or (":" in host and not (host.startswith("[")
                                                    and host.endswith("]"))):
        raise ValueError(f"{shown(address)} is not HOST:PORT ({ADDRESS_EXAMPLE})")
    if not port.isascii() or not port.isdigit() or not (0 if any_port else 1) <= int(port) <= 65535:
        raise ValueError(f"{shown(address)}: the port must be a number from "
                         f"{0 if any_port else 1} to 65535")
    try:
        check_host(host)
    except ValueError as exc:
        raise ValueError(f"{shown(address)}: {shown(host)} {exc}") from None
    return host.strip("[]"), int(port)


def _host(value: str) -> str:
    try:
        return check_host(value)
    except ValueError as exc:
        raise ValueError(f"{shown(value)} {exc}") from None


def _at_most(value: float, limit: float, limit_text: str) -> None:
    if value > limit:
        raise ValueError(f"must be at most {limit_text}")


def _size(value: object) -> int:
    size = units.parse_size(value)
    if size < HEADER_SIZE:
        raise ValueError(f"must be at least {HEADER_SIZE} bytes (the message header)")
    _at_most(size, MAX_MESSAGE_SIZE, units.format_size(MAX_MESSAGE_SIZE))
    return size


def _size_or_distribution(value: object) -> int | SizeDistribution:
    """One size, or a distribution of sizes (orchestrator.scenario.sizes) when a mapping."""
    if isinstance(value, dict | SizeDistribution):
        return SizeDistribution.model_validate(value)
    return _size(value)


def _rate(value: object) -> float | str:
    if isinstance(value, str) and value.strip().lower() == MAX_RATE:
        return MAX_RATE
    try:
        rate = units.parse_rate(value)
    except ValueError as exc:
        raise ValueError(f"{exc}, or max") from None
    if not rate > 0:
        raise ValueError("must be greater than 0 msg/s")
    if rate < MIN_RATE_PER_S:
        raise ValueError(f"must be at least {MIN_RATE_PER_S} msg/s (one message every "
                         f"{1 / MIN_RATE_PER_S:.0f} s)")
    _at_most(rate, MAX_RATE_PER_S, f"{units.format_rate(MAX_RATE_PER_S)} msg/s")
    return rate


def _numeric_rate(value: object) -> float:
    rate = _rate(value)
    if isinstance(rate, str):
        raise ValueError("must be a rate in msg/s here, not max")
    return rate


def _duration_at_most(value: object, limit_ns: int) -> int:
    ns = units.parse_duration(value)
    _at_most(ns, limit_ns, units.format_duration(limit_ns))
    return ns


def _run_time(value: object) -> int:
    ns = _duration_at_most(value, MAX_RUN_TIME_NS)
    if ns <= 0:
        raise ValueError("must be longer than 0")
    return ns


def _wait(value: object) -> int:
    ns = _duration_at_most(value, MAX_WAIT_NS)
    if ns < 0:
        raise ValueError("must not be negative")
    return ns


def _sample_interval(value: object) -> int:
    ns = _duration_at_most(value, MAX_WAIT_NS)
    if ns < MIN_SAMPLE_NS:
        raise ValueError("must be at least 10ms (the resolution of a process's CPU time in /proc)")
    return ns


Name = Annotated[str, Field(strict=True), AfterValidator(_name),
                 written.name(f"^{_NAME.pattern}$", MAX_NAME_LENGTH)]
Text = Annotated[str, Field(strict=True, min_length=1), AfterValidator(check_text)]
#: Where a host is reached: an IP address or a host name (`check_host`).
Host = Annotated[str, Field(strict=True, min_length=1), AfterValidator(check_text),
                 AfterValidator(_host)]
Size = Annotated[int, BeforeValidator(_size), written.size(HEADER_SIZE, MAX_MESSAGE_SIZE)]
#: `message_size`: one size, or a distribution (orchestrator.scenario.sizes).
MessageSize = Annotated[int | SizeDistribution, BeforeValidator(_size_or_distribution),
                        written.message_size(HEADER_SIZE, MAX_MESSAGE_SIZE)]
#: What a message carries after its header (orchestrator.scenario.content), canonical text.
Content = Annotated[str, BeforeValidator(parse_content), written.content()]
#: The keys messages carry (orchestrator.scenario.keys), canonical text.
Keys = Annotated[str, BeforeValidator(parse_keys), written.keys(MAX_KEYS)]
Rate = Annotated[float | Literal["max"], BeforeValidator(_rate),
                 written.rate(MIN_RATE_PER_S, MAX_RATE_PER_S, or_max=True)]
NumericRate = Annotated[float, BeforeValidator(_numeric_rate),
                        written.rate(MIN_RATE_PER_S, MAX_RATE_PER_S, or_max=False)]
RunTime = Annotated[int, BeforeValidator(_run_time), written.duration(MAX_RUN_TIME_NS, above=True)]
Wait = Annotated[int, BeforeValidator(_wait),
                 written.duration(MAX_WAIT_NS, examples=("1s", "500ms", 0))]
#: in ns; written back as "<n>ns" so a dumped scenario reloads the same
SampleInterval = Annotated[int, BeforeValidator(_sample_interval),
                           PlainSerializer(lambda ns: f"{ns}ns", return_type=str),
                           written.duration(MAX_WAIT_NS, minimum_ns=MIN_SAMPLE_NS,
                                            examples=("100ms", "1s"))]
Messages = Annotated[int, Field(strict=True, ge=1, le=MAX_MESSAGES)]
Parallel = Annotated[int, Field(strict=True, ge=1, le=MAX_PARALLEL)]
Seed = Annotated[int, Field(strict=True, ge=0, le=MAX_SEED)] | None
Repeats = Annotated[int, Field(strict=True, ge=1, le=MAX_REPEATS)]

T = TypeVar("T")


def as_list(value: object) -> list[object] | tuple[object, ...]:
    return value if isinstance(value, list | tuple) else [value]


#: A workload field as written: one value, or a non-empty list of values to sweep.
Sweep = Annotated[tuple[T, ...], BeforeValidator(as_list), Field(min_length=1),
                  written.OneOrList()]


ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_env_name(name: str) -> str:
    """`name` if it is an environment variable name (a launcher puts names on a shell line
    unquoted: a name such as `X;touch f` or `$(id)` would run there)."""
    if not ENV_NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not an environment variable name (letters, digits "
                         "and '_', not starting with a digit)")
    return name
