"""Hostile input costs time and memory in proportion to its size, never to size x problems.

    python bench/hostile_input.py [--workdir DIR] [--json-n 500000] [--skip-json]

In one run, each case in a fresh process (its peak RSS is its own, VmHWM):

1. problem spans: one trace file of synthetic traces with 50, then 800 spans of an unknown
   schema version (each named with its line), and the 800 case again in a file twice as large;
   ingest time as ratios (problems x16 should cost ~x1, size x2 ~x2);
2. a gzip bomb: a few MB of gzip that decompresses past the 4 GiB cap, beside good traces;
3. a 100 MB line beside the demo's 40 traces;
4. ``analyze --format json`` against ``--format table`` over ``--json-n`` traces: peak RSS.

Figures go to docs/benchmarks.md ("Hostile input").
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from synth import gold, write_traces  # noqa: E402


def _child(code: str) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter; it sets OUT; returns OUT with its peak RSS."""
    wrapped = (
        code + "\nimport json, re\n"
        "hwm = int(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1))\n"
        "print(json.dumps({**OUT, 'peak_mib': hwm / 1024}))"
    )
    out = subprocess.run([sys.executable, "-c", wrapped], capture_output=True, text=True, check=True, cwd=str(HERE))
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


INGEST = """
import time
from citeline.analyzer.store import connect
from citeline.analyzer.sources.ingest import ingest
con = connect(':memory:')
t = time.perf_counter()
rep = ingest(con, [{path!r}])
OUT = {{'seconds': time.perf_counter() - t, 'problems': len(rep.problems), 'spans': rep.spans_added,
        'first_problem': str(rep.problems[0])[:200] if rep.problems else None}}
"""

ANALYZE = """
import time
from citeline.analyzer.run.analyze import analyze
t = time.perf_counter()
r = analyze(':memory:', gold={gold!r}, traces=[{path!r}])
OUT = {{'seconds': time.perf_counter() - t, 'traces': r.traces_read,
        'problems': [str(p)[:220] for p in r.ingest.problems]}}
"""


def _mark_problems(src: Path, dst: Path, n: int) -> None:
    """``src`` with the schema version of its first ``n`` spans set to one no analyzer reads."""
    left = n
    with open(src) as f, open(dst, "w") as out:
        for raw in f:
            line = raw
            if left:
                doc = json.loads(raw)
                for rs in doc["resourceSpans"]:
                    for ss in rs["scopeSpans"]:
                        for s in ss["spans"]:
                            for a in s["attributes"]:
                                if left and a["key"] == "citeline.schema_version":
                                    a["value"] = {"stringValue": "99"}
                                    left -= 1
                line = json.dumps(doc) + "\n"
            out.write(line)


def problem_spans(work: Path) -> list[str]:
    base = work / "base"
    write_traces(base, 16_000, per_file=16_000)  # one file
    [src] = sorted(base.glob("*.jsonl"))
    write_traces(work / "base2", 32_000, per_file=32_000)  # twice the traces in one file
    [double] = sorted((work / "base2").glob("*.jsonl"))
    rows = []
    runs = {}
    for name, source, n in (
        ("50 problems", src, 50),
        ("800 problems", src, 800),
        ("800 problems, 2x size", double, 800),
    ):
        marked = work / f"marked-{n}-{source.name}"
        _mark_problems(source, marked, n)
        times = []
        for _ in range(3):
            r = _child(INGEST.format(path=str(marked)))
            times.append(r["seconds"])
        r["seconds"] = sorted(times)[1]
        runs[name] = r
        rows.append(
            f"{name:<24} {marked.stat().st_size / 1e6:7.1f} MB  {r['problems']:4d} named  "
            f"median {r['seconds']:.2f} s  peak {r['peak_mib']:.0f} MiB"
        )
    a, b, c = (runs[k]["seconds"] for k in ("50 problems", "800 problems", "800 problems, 2x size"))
    rows.append(f"problems x16: time x{b / a:.2f}; size x2 (800 problems): time x{c / b:.2f}")
    return rows


def gzip_bomb(work: Path) -> list[str]:
    folder = work / "bomb"
    write_traces(folder, 1_000, per_file=1_000)
    first = next(iter(sorted(folder.glob("*.jsonl")))).read_bytes().split(b"\n")[0] + b"\n"
    bomb = folder / "bomb.jsonl.gz"
    block = b"\n" * (16 * 1024 * 1024)
    with gzip.open(bomb, "wb", compresslevel=9) as f:
        f.write(first)
        for _ in range(4 * 1024 // 16 + 8):  # past 4 GiB decompressed
            f.write(block)
    r = _child(INGEST.format(path=str(folder)))
    return [
        f"gzip bomb {bomb.stat().st_size / 1e6:.1f} MB (decompresses to {4 * 1024 + 128} MiB) beside 1,000 traces: "
        f"{r['seconds']:.1f} s, peak {r['peak_mib']:.0f} MiB, {r['spans']} spans stored, {r['problems']} problem(s): "
        f"{r['first_problem']}"
    ]


def long_line(work: Path) -> list[str]:
    sys.path.insert(0, str(HERE.parent))
    folder = work / "longline"
    folder.mkdir()
    script = f"""
import json, sys
sys.path.insert(0, {str(HERE.parent)!r})
from pathlib import Path
from tests.conftest import make_tracing
from citeline.examples.demo import run_scenarios
t = make_tracing(Path({str(folder)!r}))
run_scenarios(); t.handle.shutdown()
[f] = sorted(t.trace_dir.glob('*.jsonl'))
span = {{"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "huge", "startTimeUnixNano": "1", "endTimeUnixNano": "2",
        "attributes": [{{"key": "k%d" % i, "value": {{"stringValue": "x" * 40}}}} for i in range(1_600_000)]}}
big = json.dumps({{"resourceSpans": [{{"resource": {{"attributes": []}}, "scopeSpans": [{{"spans": [span]}}]}}]}})
lines = f.read_text().splitlines()
f.write_text("\\n".join(lines[:20] + [big] + lines[20:]) + "\\n")
print(len(big), t.trace_dir)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    size, trace_dir = out.stdout.split()
    from citeline.examples.demo import gold_path

    r = _child(ANALYZE.format(gold=str(gold_path()), path=trace_dir))
    named = [p for p in r["problems"] if "adapter" not in p]
    return [
        f"a {int(size) / 1e6:.0f} MB line beside the demo's 40 traces: {r['traces']} traces read (the huge line's "
        f"trace included when it was read), {r['seconds']:.1f} s, peak {r['peak_mib']:.0f} MiB, "
        f"problems about it: {named or 'none (the line was read)'}"
    ]


JSON_PEAK = """
import subprocess, sys, re, time, threading
cmd = {cmd!r}
t = time.perf_counter()
p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
peak = 0
while p.poll() is None:
    try:
        peak = max(peak, int(re.search(r'VmRSS:\\s+(\\d+)', open(f'/proc/{{p.pid}}/status').read()).group(1)))
    except (OSError, AttributeError):
        pass
    time.sleep(0.05)
OUT = {{'seconds': time.perf_counter() - t, 'rc': p.returncode, 'analyze_peak_mib': peak / 1024}}
"""


def json_peak(work: Path, n: int) -> list[str]:
    data = work / "many"
    size = write_traces(data / "traces", n)
    gold(data / "gold.json")
    exe = str(Path(sys.executable).with_name("citeline"))
    rows = []
    for fmt in ("table", "json"):
        db = work / f"{fmt}.duckdb"
        cmd = [exe, "analyze", "--traces", str(data / "traces"), "--gold", str(data / "gold.json"), "--db", str(db)]
        r = _child(JSON_PEAK.format(cmd=[*cmd, "--format", fmt, "--quiet"]))
        rows.append((fmt, r))
    (_, t), (_, j) = rows
    return [
        f"{n:,} traces ({size / 1e6:,.0f} MB): --format table peak {t['analyze_peak_mib']:.0f} MiB "
        f"({t['seconds']:.0f} s), "
        f"--format json peak {j['analyze_peak_mib']:.0f} MiB ({j['seconds']:.0f} s): json/table x"
        f"{j['analyze_peak_mib'] / t['analyze_peak_mib']:.2f}"
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir")
    ap.add_argument("--json-n", type=int, default=500_000)
    ap.add_argument("--skip-json", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, str(HERE))
    from workdirs import workdir

    work = workdir(args.workdir, "citeline-hostile-")
    print(f"{os.cpu_count()} cores; work in {work}")
    for title, fn in (
        ("problem spans", problem_spans),
        ("gzip bomb", gzip_bomb),
        ("100 MB line", long_line),
    ):
        t = time.perf_counter()
        print(f"--- {title}")
        for row in fn(work):
            print(row, flush=True)
        print(f"    ({time.perf_counter() - t:.0f} s)")
    if not args.skip_json:
        print("--- analyze --format json vs table")
        for row in json_peak(work, args.json_n):
            print(row, flush=True)


if __name__ == "__main__":
    main()
