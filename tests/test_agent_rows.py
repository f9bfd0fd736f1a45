"""The clock pairing of an agent's receipts as its rows are read (spark_jobs.agent_rows):
same clock, cross clock corrected when asked (both offsets known) or excluded, a requester
its own receiver; on tiny hand-made runs, in this process without Spark."""

from __future__ import annotations

from sixnines.spark_jobs import agent_pass, run_merge
from tests.analysis_rows import by_metric, rows_of, run_in, tiny_run


def _pairs(run: run_merge.AnalysedRun) -> dict[str, dict]:
    """Each receiving agent's timed receipts by clock pair, and its widest bound."""
    found = {}
    for agent_id, rows in rows_of(run).items():
        pairs = agent_pass.clock_pairs(rows, agent_id)
        if pairs is not None:
            found[agent_id] = {k: v for k, v in pairs.items() if k != "agent_id"}
    return found


def test_one_domain_times_as_recorded(tmp_path):
    """Offsets play no part within a domain: the figures are those of a manifest without
    clocks, and every timed receipt (the unexpected one too) counts as same_clock."""
    one_domain = tiny_run(tmp_path, {agent: {"domain": "h", "offset_ns": 1000 * i,
                                             "uncertainty_ns": 9}
                                     for i, agent in enumerate("abp")})
    plain = tiny_run(tmp_path)
    assert by_metric(one_domain) == by_metric(plain)
    expected = {"same_clock": 6, "cross_clock": 0, "excluded": 0, "clock_bound_ns": None}
    assert _pairs(one_domain) == {"a": expected, "b": {**expected, "same_clock": 4}}
    assert _pairs(plain) == _pairs(one_domain)


# p and a share host h1; b is on h2 and its clock reads 30 ns behind p's (−25 vs +5)
SPLIT = {"a": {"domain": "h1", "offset_ns": 5, "uncertainty_ns": 10},
         "b": {"domain": "h2", "offset_ns": -25, "uncertainty_ns": 30},
         "p": {"domain": "h1", "offset_ns": 5, "uncertainty_ns": 20}}


def test_cross_clock_receipts_are_left_out_by_default(tmp_path):
    run = tiny_run(tmp_path, SPLIT)
    values = by_metric(run)
    assert values["latency"] == [50] * 5  # a's deliveries from p only
    assert values["service_time"] == [45] * 5
    assert values["send_lag"] == [5] * 4  # one agent's clock: never left out
    # the unexpected (7, 1) has no known producer, so no known clock, in a two-domain run
    assert _pairs(run) == {
        "a": {"same_clock": 5, "cross_clock": 0, "excluded": 1, "clock_bound_ns": None},
        "b": {"same_clock": 0, "cross_clock": 0, "excluded": 4, "clock_bound_ns": None},
    }


def test_cross_clock_receipts_are_corrected_when_asked(tmp_path):
    run = tiny_run(tmp_path, SPLIT, cross_host_latency=True)
    values = by_metric(run)
    # b: recv − intended = 20 on the raw clocks; (recv + 25) − (intended − 5) = 50
    assert values["latency"] == [50] * 5 + [50] * 4
    assert values["service_time"] == [45] * 5 + [15 + 30] * 4
    assert _pairs(run) == {
        "a": {"same_clock": 5, "cross_clock": 0, "excluded": 1, "clock_bound_ns": None},
        "b": {"same_clock": 0, "cross_clock": 4, "excluded": 0, "clock_bound_ns": 30 + 20},
    }


def test_cross_clock_needs_both_offsets(tmp_path):
    unmeasured = {**SPLIT, "b": {"domain": "h2"}}
    assert _pairs(tiny_run(tmp_path, unmeasured, cross_host_latency=True))["b"] == {
        "same_clock": 0, "cross_clock": 0, "excluded": 4, "clock_bound_ns": None}


def test_a_requester_is_its_own_receiver(tmp_path):
    """Round trip reads one clock whatever the manifest places (here: nothing)."""
    rows = [("r", "requester", 5, s, 10 * s, 10 * s + 1, 10 * s + 7, s, False)
            for s in range(3)]
    rows.append(("c", "consumer", 5, 0, 0, 1, 9, 0, False))
    agents = [{"id": "c", "role": "consumer", "clock": {"domain": "h2"}},
              {"id": "r", "role": "requester", "clock": {"domain": "h1"}}]
    pairs = _pairs(run_in(tmp_path, rows, agents=agents))
    assert pairs["r"]["same_clock"] == 3 and pairs["c"]["excluded"] == 1
