"""Random Java regexes over the dialect infra/filters/jregex/ models, random names for them, and the
JDK's verdict (tests/support/java/RegexCheck.java). Shared by the differential tests and the benchmark."""

from __future__ import annotations

import base64
import random
import shutil
import subprocess
from pathlib import Path

from infra.filters import jregex

JAVA = Path(__file__).resolve().parent / "java" / "RegexCheck.java"
# Characters names are drawn from: Kafka's topic characters, and a few others that group names
# (any string) may hold, line terminators included.
NAME_CHARS = jregex.TOPIC_ALPHABET
OTHER_CHARS = " \n\r\u0085\u2028$&[]{}é\t"


def java_verdicts(cases: list[tuple[list[str], list[str]]]) -> list[tuple[str, str]]:
    """("E", description) or ("M", "0110...") per case, from one JVM."""
    java = shutil.which("java")
    if java is None:
        raise RuntimeError("the differential tests need Java 17 (the JDK is the oracle for Java regexes)")

    def enc(text: str) -> str:
        return base64.b64encode(text.encode("utf-8", "surrogatepass")).decode()
    lines = [",".join(enc(p) for p in patterns) + ";" + ",".join(enc(n) for n in names)
             for patterns, names in cases]
    done = subprocess.run([java, str(JAVA)], input="\n".join(lines) + "\n", capture_output=True,
                          text=True, timeout=600, encoding="utf-8")
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    out = []
    for line in done.stdout.splitlines():
        kind, _, rest = line.partition(" ")
        out.append((kind, rest))
    assert len(out) == len(cases), (len(out), len(cases))
    return out


# ------------------------------------------------------------------ patterns

_LITERALS = list("abcxyz019_-") + [r"\.", r"\-", r"\_", r"\$", r"\[", r"\]", r"\{", r"\\", "]", "}", "é"]
_ESCAPES = [r"\d", r"\D", r"\w", r"\W", r"\s", r"\S", r"\x61", r"\x{2d}", r"\u0062", r"\0141", r"\056",
            r"\t", r"\n", r"\cJ", r"\h", r"\v", r"\x{1F600}", r"\cm"]
_INVALID = [r"\0", r"\k", r"\g", r"\E", r"\x4", r"\u12", "(?i)", "(?=a)", r"\b", r"\1", "(?>a)", "a*+",
            "{1}", "*", "(", ")", "[", "\\", "[]", "[b-a]", r"[\Qa\E]", r"\Qa", "(?<1a>b)", "(?<a", "[a&&]"]


def _class(rng: random.Random, depth: int) -> str:
    parts = []
    if rng.random() < 0.15:
        parts.append("]")
    if rng.random() < 0.1:
        parts.append("-")
    for _ in range(rng.randint(1, 3)):
        r = rng.random()
        if r < 0.3:
            a, b = sorted(rng.sample("abcdxyz0189", 2))
            parts.append(f"{a}-{b}")
        elif r < 0.5:
            parts.append(rng.choice([r"\d", r"\w", r"\s", r"\W", r"\.", r"\-", r"\]", r"\[", r"\\", r"\x41"]))
        elif r < 0.6 and depth < 2:
            parts.append(_class(rng, depth + 1))
        elif r < 0.7 and depth < 2 and parts:
            parts.append("&&" + _class(rng, depth + 1))
        elif r < 0.73:
            parts.append(rng.choice(["&&", "-", "^", "&", "[", ".", "$", "*"]))  # odd places
        else:
            parts.append(rng.choice("abcxyz019_.-"))
    if rng.random() < 0.1:
        parts.append("-")
    return "[" + ("^" if rng.random() < 0.3 else "") + "".join(parts) + "]"


def pattern(rng: random.Random, depth: int = 0) -> str:
    """A random pattern: mostly within the dialect, sometimes just outside it."""
    items = []
    for _ in range(rng.randint(1, 4)):
        r = rng.random()
        if r < 0.35:
            atom = rng.choice(_LITERALS)
        elif r < 0.45:
            atom = "."
        elif r < 0.55:
            atom = rng.choice(_ESCAPES)
        elif r < 0.72:
            atom = _class(rng, 0)
        elif r < 0.85 and depth < 3:
            opener = rng.choice(["(", "(?:", "(?<g>", "(", "(?:"])
            atom = opener + "|".join(pattern(rng, depth + 1) for _ in range(rng.randint(1, 3))) + ")"
        elif r < 0.9:
            atom = r"\Q" + "".join(rng.choice("a.*|[") for _ in range(rng.randint(0, 3))) + r"\E"
        elif r < 0.96:
            items.append(rng.choice(["^", "$"]))
            continue
        else:
            atom = rng.choice(_INVALID)
        if rng.random() < 0.35:
            atom += rng.choice(["*", "+", "?", "{2}", "{0,2}", "{1,}", "*?", "+?", "??", "{1,3}?", "{3}",
                                "*", "+", "?"])
        elif rng.random() < 0.03:
            atom += rng.choice(["{2,1}", "{", "{1", "{,2}", "**", "{2}{3}", "*+"])
        items.append(atom)
    body = "".join(items)
    if depth == 0 and rng.random() < 0.2:
        body = "^" + body
    if depth == 0 and rng.random() < 0.2:
        body += "$"
    if depth == 0 and rng.random() < 0.15:
        body += "|" + pattern(rng, 1)
    return body


# ------------------------------------------------------------------ names


def sample(tree, rng: random.Random, alphabet: str = NAME_CHARS) -> str | None:
    """A string the tree should match (None when a branch cannot match)."""
    kind = tree[0]
    if kind == "chars":
        members = [c for c in alphabet + OTHER_CHARS if jregex.contains(tree[1], ord(c))]
        return rng.choice(members) if members else None
    if kind == "cat":
        parts = [sample(t, rng, alphabet) for t in tree[1]]
        return None if any(p is None for p in parts) else "".join(parts)
    if kind == "alt":
        return sample(rng.choice(tree[1]), rng, alphabet)
    if kind in ("bol", "eol"):
        return ""
    _, inner, low, high = tree
    count = rng.randint(low, min(high if high is not None else low + 3, low + 3))
    parts = [sample(inner, rng, alphabet) for _ in range(count)]
    return None if any(p is None for p in parts) else "".join(parts)


def names(trees: list, rng: random.Random, count: int = 8) -> list[str]:
    """Names likely to match, their one-character mutations, and random names."""
    out = []
    for _ in range(count):
        tree = rng.choice(trees)
        s = sample(tree, rng)
        if s is None:
            s = "".join(rng.choice(NAME_CHARS) for _ in range(rng.randint(1, 5)))
        r = rng.random()
        if r < 0.2 and s:
            i = rng.randrange(len(s))
            s = s[:i] + s[i + 1:]
        elif r < 0.4:
            i = rng.randint(0, len(s))
            s = s[:i] + rng.choice(NAME_CHARS + OTHER_CHARS) + s[i:]
        elif r < 0.45:
            s += rng.choice(["\n", "\r\n", "\r", "\u2028", "\n\n"])
        out.append(s)
    out.append("")
    return out
