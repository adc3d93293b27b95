"""Analyzer throughput: ingest and classification timed apart, peak memory, and a per-trace Python baseline.

    python bench/analyzer.py [--n 100000] [--baseline-n 20000] [--workdir DIR]

Synthetic traces shaped like the example app (6 spans, 20 retrieved chunks, 8 in
context, 3 cited claims; see bench/synth.py) are written as OTLP/JSON lines.
Each phase runs in its own process so its peak RSS is its own. The baseline is
a straightforward loop: orjson per line, then per trace split claims, match,
judge and classify in Python; it runs over the first --baseline-n traces of the
same files and is compared by traces per second.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _phase(code: str) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter; it prints a JSON dict; add its peak RSS."""
    # VmHWM, not ru_maxrss: the latter carries the parent's peak over fork + exec
    wrapped = (
        code + "\nimport json, re\n"
        "hwm = int(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1))\n"
        "print(json.dumps({**OUT, 'peak_mib': hwm / 1024}))"
    )
    out = subprocess.run([sys.executable, "-c", wrapped], capture_output=True, text=True, check=True, cwd=str(HERE))
    return json.loads(out.stdout.strip().splitlines()[-1])


INGEST = """
import time, sys
from citeline.analyzer._store import connect
from citeline.analyzer._ingest import ingest
con = connect({db!r})
t = time.perf_counter()
rep = ingest(con, [{traces!r}])
OUT = {{'seconds': time.perf_counter() - t, 'bytes': rep.bytes, 'spans': rep.spans_added}}
"""

CLASSIFY = """
import time
from citeline.analyzer._analyze import analyze
marks = []
t = time.perf_counter()
r = analyze({db!r}, gold={gold!r}, on_phase=lambda name: marks.append((name, time.perf_counter())))
end = time.perf_counter()
steps = [('gold + traces to cases', t)] + marks[1:] + [('end', end)]
phases = {{}}
for a, b in zip(steps, steps[1:]):  # slices of a large run add up under one name
    name = a[0].split(' (')[0]
    phases[name] = phases.get(name, 0.0) + b[1] - a[1]
counts = r.summary  # not r.claims: that would load every claim row into memory
OUT = {{'seconds': end - t, 'claims': sum(counts.values()), 'not_ok': sum(counts.values()) - counts['ok'],
        'phases': phases}}
"""

BASELINE = """
import time, orjson
from pathlib import Path
from citeline.analyzer._claims import split_claims, is_factual
from citeline.analyzer.judges import RulesJudge
from citeline.analyzer.judges._text import lexical_similarity, number_agreement
limit = {limit}
gold = orjson.loads(Path({gold!r}).read_bytes())
texts = {{c['chunk_id']: c['text'] for c in gold['corpus']}}
cases = {{c['case_id']: c for c in gold['cases']}}
judge = RulesJudge()
def attrs(span):
    out = {{}}
    for kv in span['attributes']:
        v = kv['value']
        if 'arrayValue' in v:
            out[kv['key']] = [next(iter(x.values())) for x in v['arrayValue'].get('values', [])]
        else:
            out[kv['key']] = next(iter(v.values()))
    return out
t = time.perf_counter()
n = claims = bad = 0
for path in sorted(Path({traces!r}).glob('*.jsonl')):
    if n >= limit:
        break
    for line in path.read_bytes().split(b'\\n'):
        if not line or n >= limit:
            continue
        doc = orjson.loads(line)
        stages = {{}}
        for rs in doc['resourceSpans']:
            for ss in rs['scopeSpans']:
                for sp in ss['spans']:
                    a = attrs(sp)
                    stages[a.get('citeline.stage')] = a
        n += 1
        case = cases[stages['request']['citeline.request.case_id']]
        retrieved = set(stages['retrieval']['citeline.chunks.chunk_id'])
        context = set(stages['context']['citeline.chunks.chunk_id'])
        gen = stages['generation']
        label_map = dict(zip(gen['citeline.generation.context.label'],
                             gen['citeline.generation.context.chunk_id']))
        gen_claims = [c for c in split_claims(gen['citeline.generation.answer']) if is_factual(c.text)]
        for gc in case['claims']:
            claims += 1
            bundles = gc['support']
            support = {{x for b in bundles for x in b}}
            best = max(gen_claims, default=None, key=lambda c: (
                bool({{label_map.get(l) for l in c.labels}} & support),
                lexical_similarity(c.text, gc['text']), number_agreement(c.text, gc['text'])))
            cited = {{label_map.get(l) for l in best.labels}} if best else set()
            if any(l not in label_map for l in (best.labels if best else ())):
                bucket = 'invalid_citation'
            elif not any(set(b) <= retrieved for b in bundles):
                bucket = 'retrieval_miss'
            elif not any(set(b) <= context for b in bundles):
                bucket = 'context_drop'
            elif best is None or judge.judge(
                    best.text, [texts[c] for c in bundles[0]], gc['facts']).label != 'entailed':
                bucket = 'grounding'
            elif not cited:
                bucket = 'uncited'
            elif not any(set(b) <= cited for b in bundles):
                bucket = 'attribution'
            else:
                bucket = 'ok'
            bad += bucket != 'ok'
OUT = {{'seconds': time.perf_counter() - t, 'traces': n, 'claims': claims, 'not_ok': bad}}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="synthetic traces (default 100,000)")
    parser.add_argument("--baseline-n", type=int, default=20_000, help="traces the Python baseline reads")
    parser.add_argument("--workdir", help="keep generated files here (default: a temp dir)")
    parser.add_argument(
        "--content",
        action="store_true",
        help="traces also carry chunk text and OpenInference documents, as record_content=True writes them",
    )
    args = parser.parse_args()

    work = Path(args.workdir or tempfile.mkdtemp(prefix="citeline-bench-"))
    traces, gold, db = work / "traces", work / "gold.json", work / "bench.duckdb"
    sys.path.insert(0, str(HERE))
    import synth

    if not traces.exists():
        t = time.perf_counter()
        size = synth.write_traces(traces, args.n, content=args.content)
        synth.gold(gold)
        print(f"generated {args.n:,} traces, {size / 1e6:,.0f} MB of OTLP/JSON in {time.perf_counter() - t:.0f} s")
    db.unlink(missing_ok=True)
    size = sum(p.stat().st_size for p in traces.glob("*.jsonl"))

    ing = _phase(INGEST.format(db=str(db), traces=str(traces)))
    cls = _phase(CLASSIFY.format(db=str(db), gold=str(gold)))
    base = _phase(BASELINE.format(limit=args.baseline_n, gold=str(gold), traces=str(traces)))

    mbps = size / 1e6 / ing["seconds"]
    cps = cls["claims"] / cls["seconds"]
    total = ing["seconds"] + cls["seconds"]
    ours_tps = args.n / total
    base_tps = base["traces"] / base["seconds"]
    print(f"traces: {args.n:,}  ({size / 1e6:,.0f} MB, {os.cpu_count()} cores)")
    print(
        f"ingest:         {ing['seconds']:7.1f} s  {mbps:7.0f} MB/s   peak {ing['peak_mib']:,.0f} MiB "
        f"(target >= 300 MB/s, <= 2048 MiB)"
    )
    print(
        f"classification: {cls['seconds']:7.1f} s  {cps:9,.0f} claims/s  peak {cls['peak_mib']:,.0f} MiB "
        f"({cls['claims']:,} claims, {cls['not_ok']:,} not ok; target >= 1,000,000 claims/s)"
    )
    print("  of which " + ", ".join(f"{name} {sec:.1f} s" for name, sec in cls["phases"].items()))
    print(
        f"end to end:     {total:7.1f} s  {ours_tps:9,.0f} traces/s -> 1M traces in {1e6 / ours_tps:,.0f} s "
        f"(target < 60 s)"
    )
    print(
        f"python loop:    {base['seconds']:7.1f} s  {base_tps:9,.0f} traces/s over {base['traces']:,} traces "
        f"({base['not_ok']:,} of {base['claims']:,} claims not ok); peak {base['peak_mib']:,.0f} MiB"
    )
    print(f"speed-up end to end vs the per-trace loop: {ours_tps / base_tps:.1f}x (target >= 5x)")


if __name__ == "__main__":
    main()
