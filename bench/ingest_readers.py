"""Ingest side by side: citeline's reader against DuckDB's typed ``read_json`` of the same files.

    python bench/ingest_readers.py TRACE_DIR [--runs 3]

Both write into a fresh DuckDB file, each run in its own process (peak RSS is its
own). The typed reader is given the OTLP schema explicitly, attribute values typed
as ``STRUCT(stringValue, arrayValue.values[].stringValue)``, and its spans are
unnested into one row per span (what an ingest must produce); its figure is also
printed without the unnesting, read into memory only. Issue #13 asks citeline's
ingest to reach 0.9x the typed reader; medians of ``--runs`` are printed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

_SCHEMA = """
V = 'STRUCT(stringValue VARCHAR, arrayValue STRUCT("values" STRUCT(stringValue VARCHAR)[]))'
ATTR = f"STRUCT(key VARCHAR, value {V})[]"
SPAN = (
    "STRUCT(traceId VARCHAR, spanId VARCHAR, parentSpanId VARCHAR, name VARCHAR, startTimeUnixNano VARCHAR, "
    f"endTimeUnixNano VARCHAR, attributes {ATTR})"
)
RS = f"STRUCT(resource STRUCT(attributes {ATTR}), scopeSpans STRUCT(spans {SPAN}[])[])[]"
READ = "read_json($files, format='newline_delimited', columns={'resourceSpans': '" + RS + "'})"
"""

READERS = {
    "citeline ingest -> file": """
from citeline.analyzer.store import connect
from citeline.analyzer.sources.ingest import ingest
con = connect(DB)
t = time.perf_counter()
n = ingest(con, [DIR]).spans_added
seconds = time.perf_counter() - t
""",
    "typed read_json -> file, one row per span": _SCHEMA
    + """
con = duckdb.connect(DB)
t = time.perf_counter()
con.execute(
    "CREATE TABLE spans AS WITH d AS (SELECT unnest(resourceSpans) AS rs FROM " + READ + "), "
    "ss AS (SELECT unnest(rs.scopeSpans) AS ss FROM d), sp AS (SELECT unnest(ss.spans) AS s FROM ss) "
    "SELECT s.traceId AS trace_id, s.spanId AS span_id, s.parentSpanId AS parent_span_id, s.name, "
    "s.startTimeUnixNano, s.endTimeUnixNano, s.attributes FROM sp",
    {"files": FILES},
)
seconds = time.perf_counter() - t
n = con.execute("SELECT count(*) FROM spans").fetchall()[0][0]
""",
    "typed read_json, in memory, no unnest": _SCHEMA
    + """
con = duckdb.connect()
t = time.perf_counter()
n = con.execute("SELECT count(*) FROM " + READ, {"files": FILES}).fetchall()[0][0]
seconds = time.perf_counter() - t
""",
}

_RUN = """
import glob, json, os, re, time
import duckdb
DIR = {dir!r}
DB = {db!r}
FILES = sorted(glob.glob(os.path.join(DIR, "*.jsonl")))
if os.path.exists(DB):
    os.remove(DB)
{body}
hwm = int(re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read()).group(1))
print("RESULT " + json.dumps({{"seconds": seconds, "rows": n, "peak_mib": hwm / 1024}}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", help="a folder of OTLP/JSON lines files (bench/synth.py writes them)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--db", default="/tmp/citeline-ingest-readers.duckdb")
    args = parser.parse_args()
    import duckdb

    size = sum(p.stat().st_size for p in Path(args.traces).glob("*.jsonl"))
    print(f"{size / 1e6:,.0f} MB of OTLP/JSON in {args.traces}; DuckDB {duckdb.__version__}; medians of {args.runs}")
    results = {}
    for name, body in READERS.items():
        runs = []
        for _ in range(args.runs):
            code = _RUN.format(dir=args.traces, db=args.db, body=body)
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
            # DuckDB may draw a progress bar on the same line
            runs.append(json.loads(out.stdout.rsplit("RESULT ", 1)[1].strip()))
        seconds = statistics.median(r["seconds"] for r in runs)
        results[name] = size / 1e6 / seconds
        print(
            f"{name:44} {seconds:6.1f} s {results[name]:7.0f} MB/s  {runs[0]['rows']:>10,} rows  "
            f"peak {max(r['peak_mib'] for r in runs):,.0f} MiB"
        )
    ours, theirs = results["citeline ingest -> file"], results["typed read_json -> file, one row per span"]
    print(f"citeline / typed read_json into a file: {ours / theirs:.2f}x (target >= 0.9x)")


if __name__ == "__main__":
    main()
