"""Table-heavy answers: the cost of splitting them and matching their claims, this tree against another commit.

    python bench/tables.py [--ref main] [--n 20000] [--rounds 3]

Issue #36 item 4 made a table row one claim under ``auto``, its cells kept beside it as matching
candidates: an answer's table now yields one more claim per row, and matching ranks a row against its
own cells. This times what that costs on answers that are mostly tables (a sentence, then a Markdown
table of four rows by four columns, every other answer an HTML table; every answer worded apart): the
split step (``split_columns``, the text work a run does once per distinct answer) and the match step
(similarity.sql then match_claims.sql over one trace per answer, each trace's case holding one gold
claim per row that spans two of its cells). Each phase runs in a fresh interpreter importing the tree
under test (the reference commit through ``git archive`` and ``PYTHONPATH``), rounds alternate which
tree goes first, and the figures are CPU seconds of that process (``time.process_time``: the machine
may be shared), medians and the ratio of medians against the bar.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("instrumentation", "analyzer", "queries", "examples")
#: what the split and match steps may cost on table-heavy answers, as a multiple of the reference's CPU
BARS = {"split_s": 1.25, "match_s": 1.5}

HEAD = ("Plan", "Monthly price", "Storage", "Seats")


def _answer(i: int) -> tuple[str, list[tuple[str, str, str, str]]]:
    """Answer ``i`` (a sentence, then a table of four plans) and its rows."""
    rows = [
        (f"Tier{k}", f"${5 + (i + k) % 90}", f"{10 * (k + 1) + i % 7} GB", f"{k + 1 + i % 3} seats") for k in range(4)
    ]
    lead = f"Here are the plans for account {i}, as the pricing page lists them:\n\n"
    if i % 2:
        head = "".join(f"<th>{h}</th>" for h in HEAD)
        body = "".join(
            "<tr>" + "".join(f"<td>{v}</td>" for v in row[:3]) + f"<td>{row[3]} [{k + 1}]</td></tr>"
            for k, row in enumerate(rows)
        )
        return f"{lead}<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>", rows
    table = "| " + " | ".join(HEAD) + " |\n" + "|---" * len(HEAD) + "|\n"
    table += "".join(f"| {' | '.join(row)} [{k + 1}] |\n" for k, row in enumerate(rows))
    return lead + table, rows


def _measure(n: int) -> dict[str, float]:
    """One phase, in the tree ``citeline`` imports from: split ``n`` answers, then match their claims."""
    import time

    import duckdb
    import pyarrow as pa  # type: ignore[import-untyped]

    from citeline.analyzer import steps
    from citeline.analyzer.run.splitting import MIN_SHARED_SIM, MIN_SIM, split_columns
    from citeline.analyzer.store import sql
    from citeline.analyzer.text import numbers, stems

    made = [_answer(i) for i in range(n)]
    t = time.process_time()
    cols = split_columns([a for a, _ in made], ())
    split_s = time.process_time() - t
    gold = [
        (
            f"c{i}",
            f"g{k}",
            f"The {row[0]} plan costs {row[1]} per month and includes {row[2]} of storage.",
            [f"ch{k + 1}"],
        )
        for i, (_a, rows) in enumerate(made)
        for k, row in enumerate(rows)
    ]
    con = duckdb.connect()
    con.execute(sql("schema"))
    steps.fill(con, "t_text_sets", {"text": cols["text"], "stems": cols["stems"], "numbers": cols["numbers"]})
    more = sorted({g[2] for g in gold})
    sets = {"text": more, "stems": [sorted(stems(x)) for x in more], "numbers": [sorted(numbers(x)) for x in more]}
    steps.fill(con, "t_more_sets", sets)
    con.execute(
        "CREATE TABLE t_traces AS SELECT 't' || range AS trace_id, 'c' || range AS case_id FROM range($n)", {"n": n}
    )
    keep = ("split", "claim_idx", "text", "factual", "labels", "joins")
    con.register("_claims", pa.table({k: cols[k] for k in keep}))
    con.execute(
        "CREATE TABLE t_gen_claims AS SELECT 't' || split AS trace_id, claim_idx, text, factual, "
        "list_transform(labels, lambda l: 'ch' || l) AS cited, joins FROM _claims"
    )
    con.register(
        "_gold",
        pa.table({k: [g[j] for g in gold] for j, k in enumerate(("case_id", "claim_id", "text", "evidence_ids"))}),
    )
    con.execute("CREATE TABLE t_gold_claims AS SELECT * FROM _gold")
    t = time.process_time()
    con.execute("CREATE TABLE t_sim AS " + sql("similarity"))
    matched = con.execute(sql("match_claims"), {"min_sim": MIN_SIM, "min_shared_sim": MIN_SHARED_SIM}).fetchall()
    match_s = time.process_time() - t
    # the gold claims met by a claim stating every number of theirs (a row; on main, no claim at all)
    texts = {(t, i): x for t, i, x in con.execute("SELECT trace_id, claim_idx, text FROM t_gen_claims").fetchall()}
    wants = {(g[0], g[1]): numbers(g[2]) for g in gold}
    met = sum(1 for tr, case, cid, idx in matched if wants[(case, cid)] <= numbers(texts[(tr, idx)]))
    return {
        "split_s": split_s,
        "match_s": match_s,
        "claims": len(cols["text"]),
        "gold": len(gold),
        "met": met,
    }


def _reference(rev: str, into: Path) -> Path:
    """``rev``'s packages under ``into``, as a ``citeline/`` tree PYTHONPATH can put ahead of this one."""
    archive = into / "ref.tar"
    with archive.open("wb") as f:
        subprocess.run(["git", "-C", str(ROOT), "archive", rev, *PACKAGES], stdout=f, check=True)
    pkg = into / "path" / "citeline"
    pkg.mkdir(parents=True)
    with tarfile.open(archive) as tar:
        tar.extractall(pkg, filter="data")
    return into / "path"


def _phase(path: Path | None, n: int) -> dict[str, float]:
    """:func:`_measure` in a fresh interpreter, importing the tree at ``path`` (None: this one)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if path is not None:
        env["PYTHONPATH"] = str(path)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--phase", "--n", str(n)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env, cwd="/")
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="main", help="the commit to compare with (default main)")
    parser.add_argument("--n", type=int, default=20_000, help="distinct answers, one trace each (default 20000)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--phase", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(_measure(args.n)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        ref = _reference(args.ref, Path(tmp))
        runs: dict[str, list[dict[str, float]]] = {"ref": [], "tree": []}
        for r in range(args.rounds):
            order = [("ref", ref), ("tree", None)] if r % 2 == 0 else [("tree", None), ("ref", ref)]
            for side, path in order:
                runs[side].append(_phase(path, args.n))
    print(f"table-heavy answers: {args.n} (4 rows x 4 columns each), {args.rounds} rounds, CPU seconds (medians)")
    ref0, tree0 = runs["ref"][0], runs["tree"][0]
    print(f"  claims and candidates split: {args.ref} {ref0['claims']:.0f}, this tree {tree0['claims']:.0f}")
    met = f"{args.ref} {ref0['met']:.0f}, this tree {tree0['met']:.0f}"
    print(f"  gold claims (one a row, spanning two cells) met by a claim stating all their numbers: {met}")
    failed = False
    for key, bar in BARS.items():
        a = statistics.median(x[key] for x in runs["ref"])
        b = statistics.median(x[key] for x in runs["tree"])
        ratio = b / a if a else float("inf")
        ok = ratio <= bar
        failed = failed or not ok
        verdict = "ok" if ok else "OVER"
        print(f"  {key}: {args.ref} {a:.2f} s, this tree {b:.2f} s, ratio {ratio:.2f} (bar <= {bar}): {verdict}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
