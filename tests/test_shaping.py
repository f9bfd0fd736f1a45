"""Link shaping: the tc commands a host's `link:` becomes, and the checks on its values."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from sixnines.orchestrator.launchers.shaping import burst_bytes, interface_of, shape_commands
from sixnines.orchestrator.scenario.hosts import LinkShaping, bits_per_second


def test_a_rate_cap_is_one_tbf_with_a_burst_of_4_ms_and_at_least_64_kib():
    assert bits_per_second("100mbit") == 100_000_000
    assert burst_bytes("1gbit") == 500_000  # 4 ms of 125 MB/s
    assert burst_bytes("10mbit") == 64 * 1024
    assert shape_commands("eth0", LinkShaping(rate="1gbit")) == [
        ["tc", "qdisc", "replace", "dev", "eth0", "root", "tbf", "rate", "1gbit",
         "burst", "500000", "latency", "40ms"]]


def test_delay_and_loss_put_netem_above_the_tbf():
    first, second = shape_commands("ens3", LinkShaping(rate="100mbit", delay="5ms", loss="0.1%"))
    assert first == ["tc", "qdisc", "replace", "dev", "ens3", "root", "handle", "1:",
                     "netem", "delay", "5ms", "loss", "0.1%"]
    assert second[:7] == ["tc", "qdisc", "add", "dev", "ens3", "parent", "1:"]
    assert "tbf" in second


@pytest.mark.parametrize("field", [{"rate": "fast"}, {"rate": "0mbit"},
                                   {"rate": "1gbit", "loss": "200%"},
                                   {"rate": "1gbit", "delay": "soon"}])
def test_bad_link_values_are_refused(field):
    with pytest.raises(ValidationError):
        LinkShaping(**field)


def test_the_interface_holding_an_address_is_found():
    output = ("1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever\n"
              "2: eth0@if7    inet 10.77.0.12/24 brd 10.77.0.255 scope global eth0\n")
    assert interface_of("10.77.0.12", output) == "eth0"
    assert interface_of("10.77.0.13", output) is None
