"""spark_jobs.analyze on runs spread over two hosts' clocks (docs/design.md rule 3).

Two hosts, A (the controller's) and B, each with a producer and a consumer; every consumer
receives both producers' messages. On B's clock every instant reads OFFSET_B later than on
A's. True latencies are picked by hand (`_latency`), so every expected figure below is
computed from them, never from the correction under test.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from sixnines.formats import hdr
from sixnines.formats.summary import RunSummary
from sixnines.orchestrator.results.console_tables import run_table
from tests.integration.test_spark_analysis import PERIOD_NS, WARMUP_NS, _write_agent

pytestmark = pytest.mark.integration

M = 30  # messages per producer, all after the warm-up
OFFSET_B = 7_000_123_457  # host B's clock minus host A's (= the controller's), ns
LOST = (1, 5)  # (producer, seq) consumer c0 (host A) never gets: a cross-host delivery
DUPLICATED = (0, 3)  # (producer, seq) consumer c1 (host B) gets twice: cross-host too
# agent: (host, role, first_id, its own ping's uncertainty ns); manifest order = agent_index
AGENTS = {"c0": ("a", "consumer", 0, 2000), "c1": ("b", "consumer", 1, 500),
          "p0": ("a", "producer", 0, 1000), "p1": ("b", "producer", 1, 3000)}
# as orchestrator.run.clocks sets it: host A's offset is exactly 0 (the controller's clock),
# host B's is c1's estimate (the most certain in its domain), so every cross pair is ± 500
CROSS_BOUND = 0 + 500


def _host(agent: str) -> str:
    return AGENTS[agent][0]


def _latency(producer: int, seq: int, consumer: int) -> int:
    """The true latency of one delivery, ns: distinct per producer and consumer."""
    return 20_000 + 1000 * seq + 300 * producer + 7 * consumer


def _send_lag(seq: int) -> int:
    return 10 + 50 * seq


def _deliveries(consumer: int) -> list[tuple[int, int]]:
    """(producer, seq) in receive order (the schedule's), with the two mishaps applied."""
    out = []
    for seq in range(M):
        for producer in (0, 1):
            if consumer == 0 and (producer, seq) == LOST:
                continue
            out += [(producer, seq)] * (2 if consumer == 1 and (producer, seq) == DUPLICATED
                                        else 1)
    return out


def _controller_time(producer: int, seq: int) -> int:
    return WARMUP_NS + seq * PERIOD_NS + producer * 1000


def _write_messages(run_dir: Path, offset_b: int) -> None:
    """Every agent's messages.parquet and latency.hlog, as read on its own host's clock."""
    offset = {"a": 0, "b": offset_b}
    for producer in (0, 1):
        agent = f"p{producer}"
        seq = np.arange(M, dtype=np.int64)
        intended = np.array([_controller_time(producer, s) for s in seq]) + offset[_host(agent)]
        lag = np.array([_send_lag(s) for s in seq])
        _write_agent(run_dir, agent, {"producer_id": np.full(M, producer, np.int32), "seq": seq,
                                      "intended_ns": intended, "sent_ns": intended + lag},
                     {"send_lag": (intended, lag)})
    for consumer in (0, 1):
        agent = f"c{consumer}"
        got = _deliveries(consumer)
        producer = np.array([p for p, _ in got], dtype=np.int32)
        seq = np.array([s for _, s in got], dtype=np.int64)
        at = np.array([_controller_time(p, s) for p, s in got])
        intended = at + np.array([offset[_host(f"p{p}")] for p in producer])
        sent = intended + np.array([_send_lag(s) for s in seq])
        recv = at + np.array([_latency(p, s, consumer) for p, s in got]) + offset[_host(agent)]
        rows = {"producer_id": producer, "seq": seq, "intended_ns": intended, "sent_ns": sent,
                "recv_ns": recv, "consumer_id": np.full(len(got), consumer, np.int32),
                "rx_index": np.arange(len(got), dtype=np.int64)}
        # the agent's own hlog: raw differences of its host's and the producer's clocks
        _write_agent(run_dir, agent, rows, {"latency": (intended, recv - intended),
                                            "service_time": (intended, recv - sent)})


def _clock(agent: str, offset_b: int, domains: dict[str, str]) -> dict:
    host, _, _, uncertainty = AGENTS[agent]
    mine = domains[host] == domains["a"]
    best = min(u for h, _, _, u in AGENTS.values() if domains[h] == domains[host])
    return {"domain": domains[host], "estimated_offset_ns": (0 if mine else offset_b) + 40,
            "uncertainty_ns": uncertainty, "offset_ns": 0 if mine else offset_b,
            "domain_uncertainty_ns": 0 if mine else best, "same_clock_as_controller": mine}


def _write_run(run_dir: Path, *, offset_b: int, domains: dict[str, str] | None, **top) -> Path:
    """A run dir whose manifest places the agents on hosts; domains (host → clock domain)
    None: an older manifest without clock entries."""
    _write_messages(run_dir, offset_b)
    agents = [{"id": agent, "role": role, "status": "ok", "host": host, "first_id": first_id,
               **({"clock": _clock(agent, offset_b, domains)} if domains else {})}
              for agent, (host, role, first_id, _) in AGENTS.items()]
    manifest = {"run_id": run_dir.name, "system": "synthetic", "params": {}, "status": "ok",
                "problems": [], "agents": agents, **top,
                "workload": {"mode": "one-way", "schedule": "fixed", "warmup_ns": WARMUP_NS,
                             "duration_ns": M * PERIOD_NS, "connections": 1}}
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    return run_dir


def _expected(pairs: set[tuple[int, int]]) -> dict[str, np.ndarray]:
    """True latency and service time of every delivery from producer p to consumer c, for
    the (p, c) in pairs."""
    got = [(p, s, c) for c in (0, 1) for p, s in _deliveries(c) if (p, c) in pairs]
    latency = np.array([_latency(p, s, c) for p, s, c in got])
    return {"latency": latency,
            "service_time": latency - np.array([_send_lag(s) for _, s, _ in got])}


SAME_HOST = {(0, 0), (1, 1)}
EVERY_PAIR = SAME_HOST | {(1, 0), (0, 1)}
ACCOUNTING = {"sent": 2 * M, "received": 4 * M, "lost": 1, "duplicated": 1, "reordered": 0,
              "unexpected": 0}


def _assert_figures(summary: dict, expected: dict[str, np.ndarray]) -> None:
    for metric, values in expected.items():
        figures = summary[f"{metric}_us"]
        percentiles = np.minimum(hdr.percentile_values(hdr.counts_of(values)), values.max())
        assert [figures[k] for k in hdr.PERCENTILE_KEYS] == [v / 1000 for v in percentiles]
        assert figures["max"] == values.max() / 1000
        assert figures["mean"] == pytest.approx(values.mean() / 1000, rel=1e-12)
        assert figures["count"] == len(values)
    assert summary["out_of_range"]["latency"] == {"negative": 0, "too_large": 0}
    assert {key: summary[key] for key in ACCOUNTING} == ACCOUNTING


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """An older manifest, one clock domain (B's agents share A's boot, as containers would),
    and two domains without and with `cross_host_latency`."""
    root = tmp_path_factory.mktemp("clocks")
    one, two = {"a": "boot-a", "b": "boot-a"}, {"a": "boot-a", "b": "boot-b"}
    return {
        "no-domain": _write_run(root / "no-domain", offset_b=0, domains=None),
        "one-domain": _write_run(root / "one-domain", offset_b=0, domains=one),
        "two-domains": _write_run(root / "two-domains", offset_b=OFFSET_B, domains=two),
        "cross-host": _write_run(root / "cross-host", offset_b=OFFSET_B, domains=two,
                                 cross_host_latency=True),
    }


@pytest.fixture(scope="module")
def summaries(spark, runs) -> dict[str, dict]:
    from sixnines.spark_jobs.analyze import analyze_runs

    return dict(zip(runs, analyze_runs(list(runs.values()), "local[*]"), strict=True))


def test_a_manifest_without_domains_reads_one_clock(summaries):
    s = summaries["no-domain"]
    _assert_figures(s, _expected(EVERY_PAIR))
    assert s["latency_pairs"] == {"same_clock": 4 * M, "cross_clock": 0, "excluded": 0}
    assert s["clock_bound_ns"] is None
    assert s["hlog_agrees"] is True and s["warnings"] == [] and s["problems"] == []


def test_one_domain_gives_the_figures_of_before(summaries):
    before, now = summaries["no-domain"], summaries["one-domain"]
    assert {**now, "run_id": None} == {**before, "run_id": None}


def test_cross_host_deliveries_are_left_out_by_default(summaries):
    s = summaries["two-domains"]
    _assert_figures(s, _expected(SAME_HOST))  # accounting as if nothing were left out
    # c0 misses one of p1's, c1 holds one of p0's twice: both cross-host
    assert s["latency_pairs"] == {"same_clock": 2 * M, "cross_clock": 0, "excluded": 2 * M}
    assert s["clock_bound_ns"] is None
    [warning] = s["warnings"]
    assert warning.startswith(f"{2 * M} deliveries left out of latency and service time")
    assert "`cross_host_latency: true`" in warning
    _assert_hlogs_checked_where_applicable(s, {"c0": M - 1, "c1": M + 1})


def test_cross_host_deliveries_are_corrected_when_asked(summaries):
    s = summaries["cross-host"]
    _assert_figures(s, _expected(EVERY_PAIR))
    assert s["latency_pairs"] == {"same_clock": 2 * M, "cross_clock": 2 * M, "excluded": 0}
    assert s["clock_bound_ns"] == CROSS_BOUND
    assert s["warnings"] == []
    _assert_hlogs_checked_where_applicable(s, {"c0": M - 1, "c1": M + 1})
    keys = list(s)  # the bound right after the latency figures it qualifies
    between = keys[keys.index("latency_us"):keys.index("clock_bound_ns")]
    assert between[-1] == "latency_pairs"
    assert all(key.endswith("_us") or key == "out_of_range" for key in between[:-1])


def test_summary_file_and_table_carry_the_bound(runs, summaries):
    s = summaries["cross-host"]
    written = json.loads((runs["cross-host"] / "report" / "summary.json").read_text())
    assert written == json.loads(json.dumps(s))
    out = io.StringIO()
    Console(file=out, width=160).print(run_table(RunSummary.model_validate(s)))
    text = " ".join(out.getvalue().split())
    assert "± clock" in text and "figures may be off by up to 0.5 µs" in text


def _assert_hlogs_checked_where_applicable(summary: dict, off_clock: dict[str, int]) -> None:
    """Producers' send-lag hlogs still agree; consumers' latency hlogs hold raw cross-clock
    values, so their check is not applicable, and the notes say why (a fact, no problem)."""
    assert summary["hlog_agrees"] is True
    for agent, n in off_clock.items():
        assert any(p.startswith(f"agent {agent}: hlog latency and service_time check not "
                                f"applicable: {n} of its deliveries") for p in summary["notes"])
    assert not any("holds" in p for p in summary["problems"])
    assert not any("not applicable" in p for p in summary["problems"])
