"""Link shaping on a host with tc: a tbf rate cap (with netem's delay and loss under it
when asked), applied while a scenario runs on the host and removed afterwards. Pure command
building here; the SSH launcher runs them."""

from __future__ import annotations

from sixnines.orchestrator.scenario.hosts import LinkShaping, bits_per_second

TBF_LATENCY = "40ms"  # how long a packet may queue before tbf drops it
MIN_BURST = 64 * 1024


def burst_bytes(rate: str) -> int:
    """tbf's bucket: 4 ms worth of the rate, at least 64 KiB, so timer granularity does
    not cap the rate below what was asked."""
    return max(MIN_BURST, bits_per_second(rate) // 8 * 4 // 1000)


def shape_commands(interface: str, link: LinkShaping) -> list[list[str]]:
    """Commands that replace the interface's root qdisc with the shaping `link` asks for."""
    tbf = ["tbf", "rate", link.rate, "burst", str(burst_bytes(link.rate)),
           "latency", TBF_LATENCY]
    if link.delay is None and link.loss is None:
        return [["tc", "qdisc", "replace", "dev", interface, "root", *tbf]]
    netem = ["netem"]
    if link.delay is not None:
        netem += ["delay", link.delay]
    if link.loss is not None:
        netem += ["loss", link.loss]
    return [["tc", "qdisc", "replace", "dev", interface, "root", "handle", "1:", *netem],
            ["tc", "qdisc", "add", "dev", interface, "parent", "1:", "handle", "2:", *tbf]]


def clear_command(interface: str) -> list[str]:
    return ["tc", "qdisc", "del", "dev", interface, "root"]


def interface_of(address: str, ip_addr_output: str) -> str | None:
    """The interface holding `address`, from `ip -o addr show` output."""
    for line in ip_addr_output.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[3].split("/")[0] == address:
            return fields[1].split("@")[0]
    return None
