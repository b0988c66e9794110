"""The diff as text for terminals, one markdown comment for a pull request, or JSON for tools."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any, Iterable

from infra.core import jsontext
from infra.tools.diff.model import KINDS, Change, Effect, ObjectDiff, StackDiff

# ------------------------------------------------------------------------------- reports

COMMENT_MARKER = "<!-- kafka-replication-diff -->"


COMMENT_LIMIT = 64_000  # a GitHub comment's 65,536 characters, with room for the marker and notes


SIGNS = {"add": "+", "remove": "-", "change": "~", "replace": "+-"}


VERBS = {"add": "added", "remove": "removed", "change": "changed", "replace": "replaced"}


def counts(diffs: Iterable[ObjectDiff]) -> str:
    tally: dict[str, int] = defaultdict(int)
    for d in diffs:
        tally[d.action] += 1
    return ", ".join(f"{tally[a]} {VERBS[a]}" for a in VERBS if tally[a]) or "no changes"


def _groups(sd: StackDiff) -> list[tuple[str, str, list[ObjectDiff]]]:
    grouped: dict[tuple[str, str], list[ObjectDiff]] = defaultdict(list)
    for d in sd.objects:
        grouped[(d.kubernetes, d.owner)].append(d)
    return [(k, o, grouped[(k, o)]) for k, o in sorted(grouped)]


def _value(v: Any) -> str:
    # Strings as written (a regex's backslashes not doubled), line breaks shown as \n.
    if isinstance(v, str):
        return "'" + v.replace("\n", "\\n") + "'"
    return "(absent)" if v is None else json.dumps(v, ensure_ascii=False)


def _change_line(c: Change) -> str:
    if c.before is None:
        return f"+ {c.path}: {_value(c.after)}"
    if c.after is None:
        return f"- {c.path}: {_value(c.before)}"
    return f"~ {c.path}: {_value(c.before)} → {_value(c.after)}"


def _where(e: Effect) -> str:
    return f"{e.kubernetes + ': ' if e.kubernetes else ''}{e.owner}"


def text(diffs: list[StackDiff], before: str, after: str) -> str:
    lines = [f"Replication diff: {before} → {after}", ""]
    for sd in diffs:
        lines.append(f"Stack {sd.stack}: {counts(sd.objects)}" + (f" ({sd.note})" if sd.note else "")
                     + (f"; {len(sd.outputs)} outputs changed" if sd.outputs else ""))
        for kube, who, group in _groups(sd):
            lines.append(f"  {kube + ': ' if kube else ''}{who}: {counts(group)}")
    for sd in diffs:
        if sd.effects:
            lines += ["", f"What it does (stack {sd.stack}):"]
            for e in sd.effects:
                lines.append(f"  ! {KINDS[e.kind]} — {_where(e)}, {e.subject}: {e.text}")
                if e.examples:
                    lines.append("      e.g. " + ", ".join(e.examples))
    for sd in diffs:
        if sd.objects or sd.outputs:
            lines += ["", f"Changes (stack {sd.stack}):"]
        for d in sd.objects:
            forced = f"  (replaced: {', '.join(d.replaced_by)} changed)" if d.replaced_by else ""
            lines.append(f"{SIGNS[d.action]:>2} {d.kubernetes + ': ' if d.kubernetes else ''}{d.title}{forced}")
            if d.action in ("change", "replace"):
                lines += [f"      {_change_line(c)}" for c in d.changes]
        if sd.outputs:
            lines.append(" ~ stack outputs")
            lines += [f"      {_change_line(c)}" for c in sd.outputs]
    return "\n".join(lines)


def markdown(diffs: list[StackDiff], before: str, after: str, limit: int = COMMENT_LIMIT) -> str:
    """A pull-request comment: the summary and what it does always; the per-object details as
    far as `limit` allows, the rest said to be left out."""
    head = [COMMENT_MARKER, f"### Replication diff: `{before}` → `{after}`", "",
            "| stack | Kubernetes cluster | owner | objects |", "|---|---|---|---|"]
    for sd in diffs:
        groups = _groups(sd)
        if not groups:
            head.append(f"| {sd.stack} | | | {sd.note or 'no changes'} |")
        for kube, who, group in groups:
            head.append(f"| {sd.stack} | {kube or '(default)'} | {who} | {counts(group)} |")
    effects: list[str] = []
    for sd in diffs:
        if sd.effects:
            effects += ["", f"#### What it does — stack {sd.stack}", ""]
            for e in sd.effects:
                eg = (" e.g. " + ", ".join(f"`{x}`" for x in e.examples)) if e.examples else ""
                effects.append(f"- **{KINDS[e.kind]}** — {_md(_where(e))}, `{e.subject}`: {_md(e.text)}{eg}")
    details = []
    for sd in diffs:
        for d in sd.objects:
            forced = f" (replaced: {', '.join(d.replaced_by)} changed)" if d.replaced_by else ""
            body = [_change_line(c) for c in d.changes] if d.action in ("change", "replace") else []
            block = [f"<details><summary>{SIGNS[d.action]} {sd.stack} · {_md(d.kubernetes + ': ' if d.kubernetes else '')}"
                     f"{_md(d.title)}{_md(forced)}</summary>", ""]
            if body:
                block += ["```diff", *(_fence(b) for b in body), "```"]
            block += ["</details>"]
            details.append("\n".join(block))
        if sd.outputs:
            details.append("\n".join([f"<details><summary>~ {sd.stack} · stack outputs</summary>", "", "```diff",
                                      *(_fence(_change_line(c)) for c in sd.outputs), "```", "</details>"]))
    text_ = "\n".join(head + effects)
    if details:
        text_ += "\n\n#### Changes\n"
    shown = 0
    for detail in details:
        if len(text_) + len(detail) + 400 > limit:
            break
        text_ += "\n" + detail
        shown += 1
    if shown < len(details):
        text_ += (f"\n\n_{len(details) - shown} of {len(details)} objects' details are left out to fit one comment "
                  f"({limit:,} characters): run `kafka-replication diff` for the whole diff._")
    if len(text_) > limit:  # the summary alone exceeds it: cut, and say so
        note = f"\n\n_Cut at {limit:,} characters: run `kafka-replication diff` for the whole diff._"
        text_ = text_[: limit - len(note)] + note
    return text_


def _md(s: str) -> str:
    return s.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _fence(line: str) -> str:
    # A diff block marks lines by their first character: "~" reads best as "!" (changed).
    return "!" + line[1:] if line.startswith("~") else line.replace("```", "`\u200b``")


def as_json(diffs: list[StackDiff], before: str, after: str) -> str:
    def obj(d: ObjectDiff) -> dict[str, Any]:
        return {"kubernetes": d.kubernetes or None, "kind": d.key[1], "namespace": d.key[2] or None,
                "name": d.key[3], "action": d.action, "owner": d.owner, "replacedBy": list(d.replaced_by),
                "changes": [{"path": c.path, "before": c.before, "after": c.after} for c in d.changes]}
    return jsontext.dumps({
        "before": before, "after": after, "changed": any(sd.changed for sd in diffs),
        "stacks": [{"stack": sd.stack, "note": sd.note or None, "changed": sd.changed,
                    "objects": [obj(d) for d in sd.objects],
                    "effects": [{"kind": e.kind, "title": KINDS[e.kind], "kubernetes": e.kubernetes or None,
                                 "owner": e.owner, "subject": e.subject, "text": e.text,
                                 "examples": list(e.examples)} for e in sd.effects],
                    "outputs": [{"path": c.path, "before": c.before, "after": c.after} for c in sd.outputs]}
                   for sd in diffs]}, indent=2, sort_keys=False)
