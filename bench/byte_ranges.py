"""What reading one large file in byte ranges costs the map side (issue #38 item 5): CPU, not wall time.

    python bench/byte_ranges.py [--n 10000] [--ranges 2] [--rounds 3]

Writes ``n`` synthetic distinct-answer traces as one OTLP/JSON lines file (``bench.synth``, the Collector's
batches) and reads it, alternating rounds: whole by ``ingest`` (one map task today), and as ``ranges``
line-aligned byte ranges by ``ingest_ranges``, each into its own DuckDB as its map task would. Prints the
process CPU seconds of each (median over rounds), the ranges' sum against the whole read (the overhead: each
range's copy to local disk and ingest's fixed cost per call, about 0.27 CPU s: bar 1.35x), the longest range
against the whole (what the map phase waits for with a worker per range: bar 1.5 / ranges), and checks both
read the same spans. The defaults make ranges of about the default --split-bytes (64 MiB). The bars were set
after a first measurement on a shared machine (2026-12-02: 1.29x and 0.67 at the defaults), not by the issue.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import synth

from citeline.analyzer.sources.byte_ranges import cut, ingest_ranges
from citeline.analyzer.sources.ingest import ingest
from citeline.analyzer.store import connect

SPANS = "SELECT count(*), sum(hash(trace_id, span_id)) FROM spans"


def _whole(path: Path) -> tuple[float, tuple[int, int]]:
    con = connect(":memory:")
    try:
        c = time.process_time()
        ingest(con, [path])
        cpu = time.process_time() - c
        n, h = con.execute(SPANS).fetchall()[0]
        return cpu, (int(n), int(h))
    finally:
        con.close()


def _ranges(path: Path, ranges: int, scratch: Path) -> tuple[list[float], tuple[int, int]]:
    size = path.stat().st_size
    cpus: list[float] = []
    n_all, h_all = 0, 0
    for k, r in enumerate(cut(size, -(-size // ranges))):
        con = connect(":memory:")
        try:
            c = time.process_time()
            ingest_ranges(con, [str(path)], [r], scratch / f"r{k}")
            cpus.append(time.process_time() - c)
            n, h = con.execute(SPANS).fetchall()[0]
            n_all, h_all = n_all + int(n), (h_all + int(h or 0)) % 2**64
        finally:
            con.close()
    return cpus, (n_all, h_all)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--ranges", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="citeline-bench-ranges-") as tmp:
        root = Path(tmp)
        synth.write_traces(root / "t", args.n, per_file=args.n, collector=True, distinct=True)
        [path] = sorted((root / "t").iterdir())
        whole, ranged, longest = [], [], []
        for k in range(args.rounds):
            w, got_w = _whole(path)
            rs, got_r = _ranges(path, args.ranges, root / f"scratch{k}")
            if (got_w[0], got_w[1] % 2**64) != got_r:
                print(f"DIFFERENT SPANS: whole {got_w}, ranges {got_r}")
                return 1
            whole.append(w)
            ranged.append(sum(rs))
            longest.append(max(rs))
        w, r, lo = statistics.median(whole), statistics.median(ranged), statistics.median(longest)
        mib = path.stat().st_size / 2**20
        print(f"{args.n} traces, one file of {mib:.1f} MiB, {args.ranges} ranges; CPU s, median of {args.rounds}")
        print(f"  whole (one map task):        {w:.2f}   rounds {', '.join(f'{x:.2f}' for x in whole)}")
        print(f"  ranges, summed:              {r:.2f}   rounds {', '.join(f'{x:.2f}' for x in ranged)}")
        print(f"  ranges, the longest:         {lo:.2f}   rounds {', '.join(f'{x:.2f}' for x in longest)}")
        bar_sum, bar_long = 1.35, 1.5 / args.ranges
        print(f"  summed / whole:  {r / w:.2f}  (bar <= {bar_sum:.2f}) {'ok' if r / w <= bar_sum else 'OVER'}")
        print(f"  longest / whole: {lo / w:.2f}  (bar <= {bar_long:.2f}) {'ok' if lo / w <= bar_long else 'OVER'}")
        print("  the same spans from both: yes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
