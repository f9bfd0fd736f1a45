"""Every name sixnines gives a file or folder of a results directory, spelled once.

```
<results>/                      a scenario's results (runs/<scenario>/<timestamp>/)
  scenario.yaml                 SCENARIO_FILE: the scenario as it ran
  summary.json, summary.csv     SUMMARY_FILE, CSV_FILE: every run's figures
  analysis.log                  ANALYSIS_LOG: what Spark said
  report/index.html             REPORT_DIR, PAGE_FILE: the page (and its gnuplot files)
  <run-id>/                     a run directory: its number, system and swept values,
                                and with `repeat` > 1 which repeat (repeat_suffix(k))
    manifest.json               MANIFEST_FILE: what ran, where, how it went
    controller.lock             LOCK_FILE: held while the run's controller lives
    pruned.json                 PRUNED_FILE: the raw chunks `sixnines prune` removed
    sidecar.log                 SIDECAR_LOG: the analysis sidecar's output
    broker/, broker.log         BROKER_DIR, BROKER_LOG: a broker sixnines started: its
                                data, its output (a broker of several nodes: node n's
                                data in broker/<n>/, its output in broker_log(n))
    broker.disk                 BROKER_DISK: while the run lasts, the file holding the
                                filesystem of that data (a system's `data_disk`)
    faults.log                  FAULTS_LOG: what the hosts' network faults said
    report/                     REPORT_DIR: the run's analysis
      summary.json              SUMMARY_FILE
      series.json               SERIES_FILE: the per-message curves
      histograms.json           HISTOGRAMS_FILE: each metric's merged HDR buckets, what
                                the repeats of a case add up
      <metric>.hgrm             hgrm_file(metric): percentile distributions
    agents/<agent-id>/          AGENTS_DIR: one folder per agent (and the broker monitor)
      messages-000001.parquet   chunk_name(1), … (CHUNK_GLOB): records, a chunk each
      chunks.jsonl              CHUNK_INDEX: the chunks closed, with checksums
      messages.parquet          MESSAGES_FILE: the whole run's records (older runs)
      latency.hlog              HLOG_FILE: the HdrHistogram interval log
      cpu.parquet               CPU_FILE: CPU samples
      done.json                 DONE_FILE: the agent's own account (its `done`)
      agent.log                 AGENT_LOG: what the agent said
```

A root holding results directories keeps their history (orchestrator.results.history):

```
<root>/sixnines-history/        HISTORY_DIR: the index of every results directory under
                                the root(s) it was built from
  history.parquet               HISTORY_TABLE: one row per results directory, run and figure
  history.csv                   HISTORY_CSV: the same rows for spreadsheets
```

Names only: a name read from a results directory becomes a path through formats.run_files,
which checks where it leads. The files' contents are described where they are read and
written (formats.records, formats.chunks, formats.manifest, formats.summary, …).
"""

from __future__ import annotations

# a scenario's results directory
SCENARIO_FILE = "scenario.yaml"
#: The scenario's summary at the top, and each run's in its report folder.
SUMMARY_FILE = "summary.json"
CSV_FILE = "summary.csv"
ANALYSIS_LOG = "analysis.log"
#: The folder of the scenario's page, and of each run's analysis.
REPORT_DIR = "report"
PAGE_FILE = "index.html"

# a run directory
#: How a run id says which repeat of its case it is ("03-tcp-message_size=64-repeat=2").
REPEAT_LABEL = "repeat"
MANIFEST_FILE = "manifest.json"
LOCK_FILE = "controller.lock"
PRUNED_FILE = "pruned.json"
SIDECAR_LOG = "sidecar.log"
BROKER_DIR = "broker"
BROKER_LOG = "broker.log"
BROKER_DISK = "broker.disk"
FAULTS_LOG = "faults.log"
AGENTS_DIR = "agents"

# a run's report folder
SERIES_FILE = "series.json"
HISTOGRAMS_FILE = "histograms.json"
HGRM_SUFFIX = ".hgrm"

# an agent's folder
CHUNK_INDEX = "chunks.jsonl"
CHUNK_GLOB = "messages-[0-9]*.parquet"
MESSAGES_FILE = "messages.parquet"
HLOG_FILE = "latency.hlog"
CPU_FILE = "cpu.parquet"
DONE_FILE = "done.json"
AGENT_LOG = "agent.log"


# a root's history of results
HISTORY_DIR = "sixnines-history"
HISTORY_TABLE = "history.parquet"
HISTORY_CSV = "history.csv"


def hgrm_file(metric: str) -> str:
    """The percentile distribution of one metric (formats.vocabulary.Metric) in a run's
    report folder."""
    return f"{metric}{HGRM_SUFFIX}"


def broker_log(node: int | None = None) -> str:
    """The output of a broker sixnines started, or of node `node` of a broker of several."""
    return BROKER_LOG if node is None else f"broker-{node}.log"


def chunk_name(number: int) -> str:
    """The file of an agent's `number`-th chunk (from 1): names sort in closing order."""
    return f"messages-{number:06d}.parquet"


def repeat_suffix(repeat: int) -> str:
    """What the id of a case's `repeat`-th run (from 1) ends with, when a scenario runs
    each case more than once."""
    return f"-{REPEAT_LABEL}={repeat}"
