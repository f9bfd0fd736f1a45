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
    return qdisc_commands(interface, link.rate, link.delay, link.loss)


def qdisc_commands(interface: str, rate: str | None, delay: str | None = None,
                   loss: str | None = None) -> list[list[str]]:
    """Commands that replace the interface's root qdisc: tbf for `rate`, netem for `delay`
    and `loss` (with the tbf under it when both are asked)."""
    tbf = None if rate is None else ["tbf", "rate", rate, "burst", str(burst_bytes(rate)),
                                     "latency", TBF_LATENCY]
    if delay is None and loss is None:
        assert tbf is not None, "a qdisc needs a rate, a delay or a loss"
        return [["tc", "qdisc", "replace", "dev", interface, "root", *tbf]]
    netem = ["netem"]
    if delay is not None:
        netem += ["delay", delay]
    if loss is not None:
        netem += ["loss", loss]
    root = ["tc", "qdisc", "replace", "dev", interface, "root", "handle", "1:", *netem]
    if tbf is None:
        return [root]
    return [root, ["tc", "qdisc", "add", "dev", interface, "parent", "1:", "handle", "2:", *tbf]]


#: Exit 0 where the kernel has netem: tried on a throwaway veth pair of its own, so no
#: interface in use is touched.
NETEM_PROBE = ("ip link add sxnp$$ type veth peer name sxnq$$ || exit 3; "
               "tc qdisc add dev sxnp$$ root netem delay 1ms; found=$?; "
               "ip link del sxnp$$; exit $found")


def clear_command(interface: str) -> list[str]:
    return ["tc", "qdisc", "del", "dev", interface, "root"]


def interface_of(address: str, ip_addr_output: str) -> str | None:
    """The interface holding `address`, from `ip -o addr show` output."""
    for line in ip_addr_output.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[3].split("/")[0] == address:
            return fields[1].split("@")[0]
    return None
