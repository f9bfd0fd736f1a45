"""Where a scenario runs: the hosts it may use and the placement of broker and agents.

Two kinds of host besides the implicit `local` (the controller's machine): an SSH host
(`address`, with user/port/key/known_hosts defaulting from `~/.ssh/config`) and a container
host (`docker`: a Docker API URL). Hosts are written in the scenario or in an inventory file
it names, so one inventory serves many scenarios.

Placement puts the broker on one host and spreads the agents over a list of hosts:
producer k and consumer k (requester k) go to the k-th host round-robin, so each producer
has a consumer on its own host and one-way latency needs no cross-host clock, unless the
scenario asks for cross-host latency (reported with its clock bound).
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Discriminator, Field, Tag

from sixnines.orchestrator.scenario.fields import SECOND_NS, Host, Name, Text
from sixnines.orchestrator.scenario.problems import shown
from sixnines.orchestrator.scenario.units import format_duration, parse_duration

LOCAL = "local"
#: Most hosts a scenario or an inventory may name, and agent hosts in a placement.
MAX_HOSTS = 1000

_BITS = {"bit": 1, "kbit": 10**3, "mbit": 10**6, "gbit": 10**9}
#: A link rate as tc writes it; digits bounded so that the number stays a finite float.
_LINK_RATE = re.compile(r"\d{1,15}(\.\d{1,9})?\s*[kmg]?bit")
#: Fastest link to shape (1000gbit): beyond any network card on sale.
MAX_LINK_BITS = 10**12
#: Longest delay to add to a link (netem): ten times a geostationary satellite hop.
MAX_LINK_DELAY_NS = 10 * SECOND_NS


def bits_per_second(rate: str) -> int:
    """"100mbit" → 100_000_000 (tc's units: k/m/g are powers of 1000)."""
    found = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmg]?bit)", rate.lower())
    assert found is not None, "asked only of a rate `_LINK_RATE` matched"
    number, unit = found.groups()
    return int(float(number) * _BITS[unit])


def _link_rate(rate: str) -> str:
    if not _LINK_RATE.fullmatch(rate.lower()) or bits_per_second(rate) <= 0:
        raise ValueError(f"{shown(rate)} is not a link rate: use e.g. 100mbit, 1gbit, 500kbit")
    if bits_per_second(rate) > MAX_LINK_BITS:
        raise ValueError(f"must be at most {MAX_LINK_BITS // _BITS['gbit']}gbit")
    return rate.lower().replace(" ", "")


def _link_delay(delay: str) -> str:
    if not 0 <= parse_duration(delay) <= MAX_LINK_DELAY_NS:
        raise ValueError(f"must be from 0 to {format_duration(MAX_LINK_DELAY_NS)}")
    return delay


def _link_loss(loss: str) -> str:
    if not re.fullmatch(r"\d{1,3}(\.\d{1,9})?%", loss) or float(loss[:-1]) > 100:
        raise ValueError(f"{shown(loss)} is not a loss rate: use e.g. 0.1%")
    return loss


#: A link's rate, delay and loss as tc writes them (link shaping, slow-link faults).
LinkRate = Annotated[str, Field(strict=True, examples=["100mbit"]), AfterValidator(_link_rate)]
LinkDelay = Annotated[str, Field(strict=True, examples=["2ms"]), AfterValidator(_link_delay)]
LinkLoss = Annotated[str, Field(strict=True, examples=["0.1%"]), AfterValidator(_link_loss)]


def is_loopback(address: str) -> bool:
    """Whether only the host itself can reach `address` (any other name may resolve to a
    routable address, so it counts as routable)."""
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:
        return False


class LinkShaping(BaseModel):
    """Shaping of a host's link (egress of its interface) while the scenario runs: `rate`
    with tc tbf; `delay` and `loss` with netem where the host's kernel has it."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    rate: LinkRate
    """Bandwidth cap as tc writes it (k, m, g: powers of 1000)."""
    delay: LinkDelay | None = None
    """Delay added to every packet."""
    loss: LinkLoss | None = None
    """Share of packets dropped."""
    interface: Text | None = None
    """Default: the interface holding the host's address."""


class _Host(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    name: Name
    """How placement names the host."""


class SshHost(_Host):
    """A machine reached over SSH. Host-key checking is always on: the key must be in
    `known_hosts` (default `~/.ssh/known_hosts`, or `UserKnownHostsFile` from ssh config)."""

    kind: ClassVar[str] = "ssh"

    address: Host
    """Where the host is reached, and where its agents and broker listen."""
    user: Text | None = None
    """Login user (default: ~/.ssh/config's, else root)."""
    port: Annotated[int, Field(strict=True, ge=1, le=65535)] | None = None
    """SSH port (default: ~/.ssh/config's, else 22)."""
    key: Text | None = None
    """Private key file (default: ~/.ssh/config's, else your default keys)."""
    known_hosts: Text | None = None
    """The file the host's key must be in (default: ~/.ssh/config's, else
    ~/.ssh/known_hosts)."""
    python: Text | None = None
    """An interpreter on the host with this sixnines already installed: no bootstrap."""
    workdir: Text = "/var/tmp/sixnines"
    """Where the bootstrap environment and run files go on the host."""
    link: LinkShaping | None = None
    """Cap the host's link bandwidth (needs root there), e.g. {rate: 100mbit}."""


class ContainerHost(_Host):
    """A Docker API endpoint (`unix://`, `tcp://`, `ssh://`); each agent and broker runs in
    its own container on the host network, reached at `address`."""

    kind: ClassVar[str] = "container"

    docker: Text
    """The Docker API endpoint, e.g. unix:///var/run/docker.sock or ssh://user@host."""
    image: Text | None = None
    """The agent image; default: built from deploy/Dockerfile with this checkout."""
    base_image: Text | None = None
    """What that build starts FROM (default: $SIXNINES_BASE_IMAGE, else the Dockerfile's)."""
    address: Host = "127.0.0.1"
    """Where the containers (on the host network) are reached."""


def _host_kind(value: Any) -> str | None:
    if isinstance(value, dict):
        return "container" if "docker" in value else "ssh"
    return getattr(value, "kind", None)


HostSpec = Annotated[
    Annotated[SshHost, Tag("ssh")] | Annotated[ContainerHost, Tag("container")],
    Discriminator(_host_kind),
]


class Placement(BaseModel):
    """Where the broker and the agents go (host names; `local` is always there)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    broker: Name = LOCAL
    """The host the broker runs on."""
    agents: Annotated[tuple[Name, ...], Field(min_length=1, max_length=MAX_HOSTS)] = (LOCAL,)
    """The hosts of the agents: producer k and consumer k go to the k-th, round-robin."""
    cross_host_latency: Annotated[bool, Field(strict=True)] = False
    """Also measure one-way latency between producers and consumers on different clocks,
    corrected by the estimated offsets and reported with their uncertainty."""


class Inventory(BaseModel):
    """An inventory file: the hosts several scenarios share."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    hosts: Annotated[tuple[HostSpec, ...], Field(max_length=MAX_HOSTS)] = ()
