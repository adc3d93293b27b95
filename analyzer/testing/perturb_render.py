"""The perturbation matrix for people: a text table, and an HTML page (JSON is ``PerturbResult.to_json``).

Every field that comes from the gold set or the app (case ids, claim text,
reasons, details) is escaped for its medium where it is written: terminal
text through ``escaping.term``, HTML through ``html.escape``.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from citeline.analyzer.escaping import term as for_terminal

if TYPE_CHECKING:
    from citeline.analyzer.testing.perturb import PerturbResult
    from citeline.analyzer.testing.perturb_judge import Cell

_VERDICT_CSS = {"seen": "seen", "not seen": "notseen"}
MARK = {"holds": "ok", "differs": "XX", "n/a": ".", "skipped": "-", "error": "!!", "reaction": "r"}


def _short(name: str) -> str:
    stage, _, what = name.partition(".")
    return f"{stage[:3]}.{what}"


def render_text(r: PerturbResult) -> str:
    """The matrix (cases x perturbations), the legend, the stage verdicts, the cells that did not hold and the
    app's reactions, as plain text."""
    t = for_terminal
    names = [p.name for p in r.perturbations]
    width = max([len(t(c)) for c in r.cases] + [4])
    lines = [
        f"citeline perturb: {len(r.cases)} case(s) x {len(names)} perturbation(s), "
        f"gold {t(r.gold)} ({r.seconds:.1f} s)",
        "",
        " " * (width + 2) + "  ".join(f"{n + 1:>3}" for n in range(len(names))),
    ]
    cells = {(c.case_id, c.perturbation): c for c in r.cells}
    for case in r.cases:
        marks = [MARK[cells[(case, n)].status] for n in names]
        lines.append(f"{t(case):<{width}}  " + "  ".join(f"{m:>3}" for m in marks))
    lines += ["", "perturbations (ok holds, XX differs, . n/a, - skipped, !! error, r reaction only):"]
    for n, p in enumerate(r.perturbations, start=1):
        lines.append(f"  {n:>2} {p.name}: {p.does}; declared: {p.expect}")
    lines += _touched(r)
    lines += ["", "stages:"]
    for stage, v in r.stages.items():
        lines.append(f"  {stage}: {v.verdict} ({v.tested} cell(s) judged)")
        if v.note:
            lines.append(f"    {t(v.note)}")
        for c in v.cells:
            on = f" on {', '.join(c.claims)}" if c.claims else ""
            lines.append(
                f"    {t(c.case_id)} x {c.perturbation}: declared {c.declared}{t(on)}; got {t(c.got or c.status)}"
            )
            if c.note:
                lines.append(f"      {t(c.note)}")
    reactions = r.reactions
    if reactions:
        good = sum(1 for c in reactions if c.reaction_good)
        lines += ["", f"app reactions ({good} good, {len(reactions) - good} findings about the app):"]
        for c in reactions:
            verdict = "good" if c.reaction_good else "finding"
            lines.append(f"  {verdict:<7} {t(c.case_id)} x {c.perturbation}: {t(c.reaction_note)}")
    problems = r.baseline_problems()
    if problems:
        lines += ["", "baseline not ok (these cases show less until fixed):"]
        lines += [f"  {t(p)}" for p in problems]
    if r.not_perturbed:
        lines += ["", "baseline not ok, not perturbed (--ok-only):"]
        lines += [f"  {t(case)}: {t('; '.join(why))}" for case, why in r.not_perturbed.items()]
    return "\n".join(lines) + "\n"


def _touched(r: PerturbResult) -> list[str]:
    """Per case with several gold claims, the claims each judged cell touched (the others must not move)."""
    several = {case for case, rows in r.baseline.items() if len({x["gold_claim_id"] for x in rows}) > 1}
    out = [
        f"  {for_terminal(c.case_id)} x {c.perturbation}: {for_terminal(', '.join(c.claims))}"
        for c in r.cells
        if c.case_id in several and c.claims and c.status in ("holds", "differs")
    ]
    return (
        ["", "claims touched (cases with several gold claims; the others must keep their bucket):", *out] if out else []
    )


_CSS = """
body{font-family:system-ui,sans-serif;margin:2rem;color:#222}
table{border-collapse:collapse;margin:1rem 0}
th,td{border:1px solid #ccc;padding:.25rem .5rem;font-size:.85rem;vertical-align:top}
th{background:#f4f4f4}
td.holds{background:#e6f4ea}td.differs{background:#fce8e6}td.error{background:#fbd3cf}
td.na,td.skipped{color:#888}td.reaction{background:#eef3fc}
.seen{color:#137333}.notseen{color:#c5221f}
"""


def _cell_html(c: Cell) -> str:
    e = html.escape
    css = {"n/a": "na"}.get(c.status, c.status)
    touched = f"\nclaims touched: {', '.join(c.claims)}" if c.claims else ""
    title = f"declared: {c.declared}{touched}\ngot: {c.got}\n{c.note}".strip()
    text = {"holds": "✓", "differs": "✗", "n/a": "n/a", "skipped": "skip", "error": "error", "reaction": "r"}
    return f'<td class="{e(css)}" title="{e(title)}">{e(text[c.status])}</td>'


def render_html(r: PerturbResult) -> str:
    """One self-contained page: the matrix (hover a cell for declared vs got), stage verdicts, reactions."""
    e = html.escape
    head = "".join(
        f'<th title="{e(p.does)}">{e(p.name)}<br><small>{e(str(p.expect))}</small></th>' for p in r.perturbations
    )
    cells = {(c.case_id, c.perturbation): c for c in r.cells}
    body = "".join(
        f"<tr><th>{e(case)}</th>" + "".join(_cell_html(cells[(case, p.name)]) for p in r.perturbations) + "</tr>"
        for case in r.cases
    )
    stages = "".join(
        f'<li class="{_VERDICT_CSS.get(v.verdict, "other")}">{e(s)}: {e(v.verdict)}'
        + (f"<br><small>{e(v.note)}</small>" if v.note else "")
        + (
            "<ul>"
            + "".join(
                f"<li>{e(c.case_id)} × {e(c.perturbation)}: declared {e(c.declared)}; got {e(c.got or c.status)}"
                + (f"<br><small>{e(c.note)}</small>" if c.note else "")
                + "</li>"
                for c in v.cells
            )
            + "</ul>"
            if v.cells
            else ""
        )
        + "</li>"
        for s, v in r.stages.items()
    )
    skipped = "".join(f"<li>{e(case)}: {e('; '.join(why))}</li>" for case, why in r.not_perturbed.items())
    reactions = "".join(
        f"<tr><td>{'good' if c.reaction_good else 'finding'}</td><td>{e(c.case_id)}</td>"
        f"<td>{e(c.perturbation)}</td><td>{e(c.reaction_note)}</td></tr>"
        for c in r.reactions
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>citeline perturb</title>'
        f"<style>{_CSS}</style></head><body>"
        f"<h1>citeline perturb</h1><p>gold {e(r.gold)}: {len(r.cases)} case(s) × {len(r.perturbations)} "
        f"perturbation(s), {r.seconds:.1f} s</p>"
        f"<h2>Stages</h2><ul>{stages}</ul>"
        f"<h2>Matrix</h2><table><tr><th>case</th>{head}</tr>{body}</table>"
        "<h2>App reactions</h2><table><tr><th>verdict</th><th>case</th><th>perturbation</th><th>what</th></tr>"
        f"{reactions}</table>"
        + (f"<h2>Baseline not ok, not perturbed</h2><ul>{skipped}</ul>" if skipped else "")
        + "</body></html>\n"
    )
