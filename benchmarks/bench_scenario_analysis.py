"""How long a scenario's results take after its runs: `sixnines report`, JVM start included.

Runs `sixnines run examples/quickstart.yaml --no-analysis` (four runs, the measuring time
is the baseline), then times `sixnines report` of its results (every report file: the
Spark pass, summary.json, series.json, .hgrm, the HTML report) and prints the ratio. Then
copies its runs into results directories of 1, 4 and 16 runs (`--counts`) and times
`sixnines report` of each, fresh JVM every time: what one more run costs once the runs are
analysed together.

    .venv/bin/python benchmarks/bench_scenario_analysis.py [--keep DIR] [--counts 1,4,16]
        [--workload FIELD=VALUE ...] [--smoke]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common

from sixnines.formats.layout import MANIFEST_FILE, REPORT_DIR, SCENARIO_FILE

REPO = Path(__file__).resolve().parents[1]
SIXNINES = [sys.executable, "-m", "sixnines"]
QUICKSTART = REPO / "examples" / "quickstart.yaml"


def timed(*argv: str, cwd: Path) -> float:
    """Seconds `sixnines ARGV` took; its output goes to a log beside the results."""
    began = time.monotonic()
    with open(cwd / "bench.log", "a") as log:
        subprocess.run([*SIXNINES, *argv], cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                       check=True)
    return time.monotonic() - began


def results_of(runs: list[Path], count: int, work: Path) -> Path:
    """A results directory of `count` runs, copies of `runs` in turn."""
    results = work / f"runs-{count}"
    results.mkdir()
    shutil.copy(runs[0].parent / SCENARIO_FILE, results)
    for n in range(count):
        source = runs[n % len(runs)]
        name = f"{n + 1:02d}-{source.name.split('-', 1)[1]}"
        shutil.copytree(source, results / name, ignore=shutil.ignore_patterns(REPORT_DIR))
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="keep the results here")
    parser.add_argument("--counts", default="1,4,16", help="runs in each results directory")
    common.workload_option(parser)
    args = common.arguments(parser, smoke={
        "counts": "1", "workload": [("duration", "0.5s"), ("warmup", "0s"), ("message_size", 64)]})
    work = Path(tempfile.mkdtemp(prefix="bench-analysis-", dir=args.keep))
    scenario = common.scenario_with(QUICKSTART, work, args.workload)
    measuring = timed("run", str(scenario), "--output", str(work / "out"), "--no-analysis",
                      cwd=work)
    (results,) = (work / "out" / "quickstart").iterdir()
    runs = sorted(path for path in results.iterdir() if (path / MANIFEST_FILE).is_file())
    analysis = timed("report", str(results), cwd=work)
    print(f"quickstart: {len(runs)} runs measured in {measuring:.1f} s, "
          f"analysed in {analysis:.1f} s: {analysis / measuring:.2f} of the measuring time")
    times = {count: timed("report", str(results_of(runs, count, work)), cwd=work)
             for count in map(int, args.counts.split(","))}
    first, base = next(iter(times.items()))
    for count, seconds in times.items():
        print(f"{count:>2} run(s): {seconds:5.1f} s   ({seconds / base:.2f}× {first} run(s))")
    if args.keep is None:
        shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
