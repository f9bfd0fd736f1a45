"""spark_jobs.analyze end to end on synthetic run dirs with hand-placed mishaps."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sixnines.formats import hdr
from sixnines.formats.hlog import write_hlog
from sixnines.formats.integrity import sha256_of
from sixnines.formats.layout import CHUNK_INDEX, HLOG_FILE, MESSAGES_FILE, chunk_name
from sixnines.formats.records import MESSAGES

pytestmark = pytest.mark.integration

N = 1000  # messages per producer
PERIOD_NS = 1_000_000
WARMUP_SEQ = 100  # seqs below this are in the warm-up
WARMUP_NS = WARMUP_SEQ * PERIOD_NS
START_EPOCH_S = 1_700_000_000.0


def _write_agent(run_dir: Path, agent_id: str, rows: dict[str, np.ndarray],
                 series: dict[str, tuple[np.ndarray, np.ndarray]],
                 name: str = MESSAGES_FILE) -> None:
    """messages.parquet (or the file `name`: a chunk, listed in the agent's chunks.jsonl as
    its recorder lists each) and latency.hlog of one agent (series: tag → (offsets,
    values))."""
    folder = run_dir / "agents" / agent_id
    folder.mkdir(parents=True)
    n = len(rows["seq"])
    columns = {f.name: rows.get(f.name, np.full(n, None)) for f in MESSAGES}
    columns["size"] = np.full(n, 64, dtype=np.int32)
    columns["warmup"] = rows["intended_ns"] < WARMUP_NS
    pq.write_table(pa.table(columns, schema=MESSAGES), folder / name)
    if name != MESSAGES_FILE:
        (folder / CHUNK_INDEX).write_text(json.dumps({
            "file": name, "rows": n, "sha256": sha256_of(folder / name),
            "bytes": (folder / name).stat().st_size}) + "\n")
    write_hlog(folder / HLOG_FILE, start_epoch_s=START_EPOCH_S, series=series,
               warmup_ns=WARMUP_NS)


def _manifest(run_dir: Path, mode: str, agents: list[tuple[str, str]], **extra) -> None:
    manifest = {
        "run_id": run_dir.name, "system": "synthetic", "params": {"rate": 1000},
        "status": extra.pop("status", "ok"), "problems": extra.pop("problems", []),
        "workload": {"mode": mode, "schedule": "fixed", "warmup_ns": WARMUP_NS,
                     "duration_ns": N * PERIOD_NS, "message_size": 64, "rate": 1000.0},
        "agents": [{"id": a, "role": r, "status": "ok"} for a, r in agents],
    }
    (run_dir / "manifest.json").write_text(json.dumps(manifest))


def _consumer_order(producers: dict[int, dict], mishaps: dict) -> list[tuple[int, int]]:
    """Messages in send order with drops, duplicates (right after) and swaps applied."""
    order = sorted((int(p["intended_ns"][s]), pid, s) for pid, p in producers.items()
                   for s in range(N))
    out: list[tuple[int, int]] = []
    for _, pid, s in order:
        if (pid, s) in mishaps["lost"]:
            continue
        out.append((pid, s))
        if (pid, s) in mishaps["dup"]:
            out.append((pid, s))
    for a, b in mishaps["swap"]:  # move b to just before a: b and the messages between are late
        out.remove(b)
        out.insert(out.index(a), b)
    return out


@pytest.fixture(scope="module")
def one_way(tmp_path_factory):
    """2 producers × 2 consumers; returns the run dir and the raw values behind it."""
    run_dir = tmp_path_factory.mktemp("runs") / "one-way"
    rng = np.random.default_rng(11)
    producers = {}
    raw = {"send_lag": [], "latency": [], "service_time": []}
    send_rates = 0.0
    for pid, agent in ((1, "p1"), (2, "p2")):
        seq = np.arange(N, dtype=np.int64)
        intended = seq * PERIOD_NS + pid * 1000
        lag = rng.integers(0, 50_000, N)
        lag[700] = 30_000_000  # a generator stall
        p = {"producer_id": np.full(N, pid, dtype=np.int32), "seq": seq,
             "intended_ns": intended, "sent_ns": intended + lag}
        producers[pid] = p
        _write_agent(run_dir, agent, p, {"send_lag": (intended, lag)})
        post = seq >= WARMUP_SEQ
        raw["send_lag"].append(lag[post])
        sent = p["sent_ns"][post]
        send_rates += (len(sent) - 1) / (sent.max() - sent.min()) * 1e9
    mishaps = {
        "c1": {"lost": {(1, 300), (1, 50)}, "dup": {(2, 400)}, "swap": [((1, 500), (1, 502))],
               "unexpected": 1, "negative": 0},
        "c2": {"lost": {(2, 600), (2, 601)}, "dup": {(1, 200)}, "swap": [((2, 800), (2, 805))],
               "unexpected": 0, "negative": 1},
    }
    receive_rates = 0.0
    for agent, m in mishaps.items():
        order = _consumer_order(producers, m)
        pid = np.array([o[0] for o in order], dtype=np.int32)
        seq = np.array([o[1] for o in order], dtype=np.int64)
        if m["unexpected"]:
            pid, seq = np.append(pid, 9).astype(np.int32), np.append(seq, 500)
        intended = np.array([producers.get(int(q), producers[1])["intended_ns"][s]
                             for q, s in zip(pid, seq, strict=True)])
        sent = np.array([producers.get(int(q), producers[1])["sent_ns"][s]
                         for q, s in zip(pid, seq, strict=True)])
        base = np.maximum.accumulate(sent)  # receive order = arrival order
        recv = base + (rng.lognormal(10, 1.2, len(seq))).astype(np.int64) + 20_000
        recv = np.maximum.accumulate(recv)
        if m["negative"]:
            recv[-1] = intended[-1] - 5  # clocks mixed up for one message
        rows = {"producer_id": pid, "seq": seq, "intended_ns": intended, "sent_ns": sent,
                "recv_ns": recv, "consumer_id": np.full(len(seq), int(agent[1]), np.int32),
                "rx_index": np.arange(len(seq), dtype=np.int64)}
        _write_agent(run_dir, agent, rows, {"latency": (intended, recv - intended),
                                            "service_time": (intended, recv - sent)})
        post = intended >= WARMUP_NS
        raw["latency"].append((recv - intended)[post])
        raw["service_time"].append((recv - sent)[post])
        r = recv[post]
        receive_rates += (len(r) - 1) / (r.max() - r.min()) * 1e9
    _manifest(run_dir, "one-way", [("p1", "producer"), ("p2", "producer"),
                                   ("c1", "consumer"), ("c2", "consumer")],
              problems=["from the controller"])
    values = {k: np.concatenate(v) for k, v in raw.items()}
    return run_dir, values, send_rates, receive_rates


@pytest.fixture(scope="module")
def one_way_summary(spark, one_way):
    from sixnines.spark_jobs.analyze import analyze_runs

    return analyze_runs([one_way[0]], "local[*]")[0]


def test_one_way_accounting(one_way_summary):
    s = one_way_summary
    sent = 2 * (N - WARMUP_SEQ)
    # c1: loses (1,300) (+ warm-up (1,50)), dup (2,400), swap 502 ahead of 500, 501 → 2 late
    #     + one unexpected message; c2: loses (2,600),(2,601), dup (1,200), 805 ahead → 5 late
    assert s["sent"] == sent
    assert s["lost"] == 1 + 2
    assert s["duplicated"] == 2
    assert s["reordered"] == 2 + 5
    assert s["unexpected"] == 1
    assert s["received"] == (sent - 1 + 1 + 1) + (sent - 2 + 1)
    assert s["warmup"] == {"sent": 2 * WARMUP_SEQ, "received": 2 * 2 * WARMUP_SEQ - 1}
    assert any("match no sent message" in p for p in s["problems"])
    assert s["problems"][0] == "from the controller"
    assert s["status"] == "ok" and s["run_id"] == "one-way" and s["params"] == {"rate": 1000}


def test_one_way_rates(one_way, one_way_summary):
    _, _, send_rate, receive_rate = one_way
    assert one_way_summary["send_rate"] == pytest.approx(send_rate, rel=1e-12)
    assert one_way_summary["receive_rate"] == pytest.approx(receive_rate, rel=1e-12)


@pytest.mark.parametrize("metric", ["latency", "service_time", "send_lag"])
def test_percentiles_match_numpy(one_way, one_way_summary, metric):
    raw = one_way[1][metric]
    figures = one_way_summary[f"{metric}_us"]
    clipped, negative, too_large = hdr.clip(raw)
    expected = np.minimum(hdr.percentile_values(hdr.counts_of(clipped)), raw.max())
    assert [figures[k] for k in hdr.PERCENTILE_KEYS] == [v / 1000 for v in expected]
    assert figures["max"] == raw.max() / 1000
    assert figures["mean"] == pytest.approx(raw.mean() / 1000, rel=1e-12)
    assert figures["count"] == len(raw)
    assert one_way_summary["out_of_range"][metric] == {"negative": negative,
                                                       "too_large": too_large}


def test_out_of_range_reported(one_way_summary):
    assert one_way_summary["out_of_range"]["latency"]["negative"] == 1
    assert any(p.startswith("latency: 1 negative") for p in one_way_summary["problems"])


def test_hlogs_agree(one_way_summary):
    assert one_way_summary["hlog_agrees"] is True


def test_hgrm_files(one_way, one_way_summary):
    report = one_way[0] / "report"
    for metric in ("latency", "service_time", "send_lag"):
        text = (report / f"{metric}.hgrm").read_text()
        lines = text.splitlines()
        assert lines[0].split() == ["Value", "Percentile", "TotalCount", "1/(1-Percentile)"]
        assert any(line.startswith("#[Max") for line in lines)
        assert "microseconds" in lines[-1]
        rows = [line.split() for line in lines[2:] if line and not line.startswith("#")]
        assert float(rows[-1][1]) == 1.0
        assert int(rows[-1][2]) == one_way_summary[f"{metric}_us"]["count"]
    summary = json.loads((report / "summary.json").read_text())
    assert summary == json.loads(json.dumps(one_way_summary))


def test_tampered_hlog_disagrees(spark, one_way, tmp_path):
    from sixnines.spark_jobs.analyze import analyze_runs

    run_dir = tmp_path / "tampered"
    shutil.copytree(one_way[0], run_dir, ignore=shutil.ignore_patterns("report"))
    c2 = run_dir / "agents" / "c2"
    msgs = pq.read_table(c2 / MESSAGES_FILE).to_pydict()
    intended, sent, recv = (np.array(msgs[k]) for k in ("intended_ns", "sent_ns", "recv_ns"))
    latency = recv - intended
    latency[-10] += 10_000_000  # one value moved 10 ms
    write_hlog(c2 / HLOG_FILE, start_epoch_s=START_EPOCH_S, warmup_ns=WARMUP_NS,
               series={"latency": (intended, latency), "service_time": (intended, recv - sent)})
    # and one agent lost its hlog: skipped with a note
    (run_dir / "agents" / "p1" / HLOG_FILE).unlink()
    summary = analyze_runs([run_dir], "local[*]")[0]
    assert summary["hlog_agrees"] is False
    assert any(p.startswith("agent c2: hlog latency") for p in summary["problems"])
    assert any(p.startswith("agent p1") and "hlog check skipped" in p
               for p in summary["problems"])


@pytest.mark.parametrize("recorded", ["chunks", "older whole-run file"])
def test_round_trip_with_lost_replies(spark, tmp_path, recorded):
    from sixnines.spark_jobs.analyze import analyze_runs

    run_dir = tmp_path / "round-trip"
    rng = np.random.default_rng(5)
    seq = np.arange(N, dtype=np.int64)
    intended = seq * PERIOD_NS
    sent = intended + rng.integers(0, 10_000, N)
    recv = sent + rng.integers(30_000, 2_000_000, N)
    lost = np.zeros(N, dtype=bool)
    lost[[5, 150, 151, 999]] = True  # one in the warm-up
    replied = ~lost
    if recorded == "chunks":  # its requests (a sender's rows), then its replies
        both = np.concatenate([np.arange(N), np.flatnonzero(replied)])
        receipt, name = np.arange(len(both)) >= N, chunk_name(1)
    else:  # one row per request, with its reply's receive columns
        both, receipt, name = np.arange(N), replied, MESSAGES_FILE
    rows = {"producer_id": np.full(len(both), 7, np.int32), "seq": seq[both],
            "intended_ns": intended[both], "sent_ns": sent[both],
            "recv_ns": pa.array(recv[both], mask=~receipt),
            "consumer_id": pa.array(np.full(len(both), 7, np.int32), mask=~receipt),
            "rx_index": pa.array(np.cumsum(receipt) - 1, mask=~receipt)}
    _write_agent(run_dir, "r1", rows, {
        "send_lag": (intended, sent - intended),
        "latency": (intended[replied], (recv - intended)[replied]),
        "service_time": (intended[replied], (recv - sent)[replied]),
    }, name)
    # a second requester failed without leaving files
    _manifest(run_dir, "round-trip", [("r1", "requester"), ("r2", "requester")],
              status="partial")
    summary = analyze_runs([run_dir], "local[*]")[0]
    post = seq >= WARMUP_SEQ
    assert summary["status"] == "partial"
    assert summary["sent"] == N - WARMUP_SEQ
    assert summary["lost"] == 3
    assert summary["received"] == N - WARMUP_SEQ - 3
    assert summary["duplicated"] == summary["reordered"] == summary["unexpected"] == 0
    assert summary["warmup"] == {"sent": WARMUP_SEQ, "received": WARMUP_SEQ - 1}
    assert summary["send_lag_us"]["count"] == N - WARMUP_SEQ
    latency = (recv - intended)[post & replied]
    assert summary["latency_us"]["count"] == len(latency)
    assert summary["latency_us"]["max"] == latency.max() / 1000
    assert summary["hlog_agrees"] is True
    assert any(p.startswith("agent r2 (requester, status ok) left no per-message records it "
                            "reported: "
                            "its requests and their replies are in no count")
               for p in summary["problems"])
    r = recv[post & replied]
    assert summary["receive_rate"] == pytest.approx((len(r) - 1) / (r.max() - r.min()) * 1e9)


def _producer_only(run_dir: Path) -> Path:
    """A run of one producer and no consumer, every send 10 ns late."""
    seq = np.arange(N, dtype=np.int64)
    p = {"producer_id": np.full(N, 1, np.int32), "seq": seq, "intended_ns": seq * PERIOD_NS,
         "sent_ns": seq * PERIOD_NS + 10}
    _write_agent(run_dir, "p1", p, {"send_lag": (p["intended_ns"], np.full(N, 10))})
    _manifest(run_dir, "one-way", [("p1", "producer")])
    return run_dir


def test_empty_metric_is_null(spark, tmp_path):
    from sixnines.spark_jobs.analyze import analyze_runs

    run_dir = _producer_only(tmp_path / "no-consumers")
    summary = analyze_runs([run_dir], "local[*]")[0]
    assert summary["latency_us"] == {**dict.fromkeys(hdr.PERCENTILE_KEYS), "max": None,
                                     "mean": None, "lower_median": None,
                                     "robust_deviation": None, "count": 0}
    assert summary["send_lag_us"]["p50"] == summary["send_lag_us"]["max"] == 0.01
    assert summary["lost"] == 0 and summary["received"] == 0
    assert summary["receive_rate"] is None
    assert (run_dir / "report" / "latency.hgrm").is_file()


def _report_files(run_dir: Path) -> dict[str, str]:
    return {path.name: path.read_text() for path in sorted((run_dir / "report").iterdir())}


def test_a_run_under_a_path_spark_must_percent_encode_is_read_whole(one_way, one_way_summary,
                                                                     tmp_path):
    """Every file is read by one scan and its rows tagged with their agent by the name
    Spark gives the file: a run directory whose path Spark spells percent-encoded (a
    space, a literal %20, #, ?, a non-ASCII letter) still has every row counted, each as
    its own agent's."""
    from sixnines.spark_jobs.analyze import analyze_runs

    run_dir = tmp_path / "odd dir" / "ä b%20c#x?y" / "one-way"
    shutil.copytree(one_way[0], run_dir, ignore=shutil.ignore_patterns("report"))
    assert analyze_runs([run_dir], "local[*]")[0] == one_way_summary


def test_a_run_given_twice_gets_every_row_each_time(one_way, one_way_summary, tmp_path):
    """One scan reads each file once even when a run is given twice: each copy of the run
    still gets all its rows (they are tagged for both)."""
    from sixnines.spark_jobs.analyze import analyze_runs

    run_dir = tmp_path / "one-way"
    shutil.copytree(one_way[0], run_dir, ignore=shutil.ignore_patterns("report"))
    assert analyze_runs([run_dir, run_dir], "local[*]") == [one_way_summary] * 2


def test_runs_analysed_together_equal_each_alone(spark, one_way, tmp_path):
    """All runs of a scenario go through Spark at once (the run is a column): each run's
    summary and report files are those of its analysis alone, whatever the others hold
    (other agents, a missing hlog, no consumer at all, a damaged file: refused alone)."""
    from sixnines.spark_jobs.analyze import analyze_runs

    no_report = shutil.ignore_patterns("report")
    runs = [tmp_path / name for name in ("one-way", "no-hlog", "no-consumers", "damaged")]
    shutil.copytree(one_way[0], runs[0], ignore=no_report)
    shutil.copytree(one_way[0], runs[1], ignore=no_report)
    (runs[1] / "agents" / "p1" / HLOG_FILE).unlink()
    _producer_only(runs[2])
    shutil.copytree(one_way[0], runs[3], ignore=no_report)
    damaged = runs[3] / "agents" / "c1" / MESSAGES_FILE
    damaged.write_bytes(damaged.read_bytes()[:-100])
    together = analyze_runs(runs, "local[*]")
    files = [_report_files(run_dir) for run_dir in runs]
    alone = [analyze_runs([run_dir], "local[*]")[0] for run_dir in runs]
    assert [s["status"] for s in together] == ["ok", "ok", "ok", "corrupt"]
    assert together == alone
    assert files == [_report_files(run_dir) for run_dir in runs]
    assert together[0]["sent"] != together[2]["sent"]  # not one run's figures four times


def test_a_run_that_breaks_the_common_pass_costs_only_its_own_report(one_way, tmp_path):
    """A run whose file passes its checks but that Spark cannot read as records (a column
    of another type) fails the pass of all runs: each is then analysed alone, the others
    get their reports and the broken one an error line (exit status 1). The command as
    `sixnines report` starts it, in a process of its own (it stops its Spark session)."""
    runs = [tmp_path / name for name in ("first", "broken", "last")]
    for run_dir in runs:
        shutil.copytree(one_way[0], run_dir, ignore=shutil.ignore_patterns("report"))
    broken = runs[1] / "agents" / "c1" / MESSAGES_FILE
    table = pq.read_table(broken)
    seq = table.schema.get_field_index("seq")
    pq.write_table(table.set_column(seq, "seq", table["seq"].cast(pa.string())), broken)
    done = subprocess.run([sys.executable, "-m", "sixnines.spark_jobs.analyze",
                           *map(str, runs)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line.get("status") for line in lines] == ["ok", None, "ok"]
    assert "error" in lines[1] and not (runs[1] / "report" / "summary.json").exists()
    assert ((runs[0] / "report" / "summary.json").read_text()
            == (runs[2] / "report" / "summary.json").read_text())


def test_spark_jobs_do_not_grow_with_the_runs(spark, one_way, tmp_path):
    """Three runs cost the Spark jobs one does, not three times as many: the two jobs of
    per-agent passes (spark_jobs.run_merge). The per-job overhead, not the rows, is what
    small runs pay for."""
    from sixnines.spark_jobs.analyze import analyze_runs

    runs = [tmp_path / f"run-{n}" for n in range(3)]
    for run_dir in runs:
        shutil.copytree(one_way[0], run_dir, ignore=shutil.ignore_patterns("report"))

    def jobs(run_dirs: list[Path]) -> int:
        group = f"runs-{len(run_dirs)}"
        spark.sparkContext.setJobGroup(group, group)
        try:
            analyze_runs(run_dirs, "local[*]")
        finally:
            spark.sparkContext.setJobGroup("", "")
        return len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))

    one, three = jobs(runs[:1]), jobs(runs)
    assert one == three == 2, (one, three)


def test_cli_requires_manifest(tmp_path, capsys):
    from sixnines.spark_jobs.analyze import main

    assert main([str(tmp_path)]) == 2
    assert "manifest.json" in capsys.readouterr().err
