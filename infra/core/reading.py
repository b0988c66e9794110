"""Reading what users hand us: topology files, stack config, previous outputs.

Every file is read the same bounded way: a regular file (never a device, FIFO or folder, which
could be endless), at most MAX_BYTES, UTF-8. YAML goes through three steps, each bounded:
libyaml's event stream (iterative) measures nesting depth and size before any tree exists; the
composed node graph, in which aliases are still shared references, is checked for duplicate
keys, for how large it would be once aliases are expanded (an "alias bomb" is refused without
expanding it) and for YAML 1.1 surprises (`no` read as false); only then are Python values built.
Problems raise TopologyError, so every caller reports them like any other input problem.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import yaml

from infra.core.errors import Problem, TopologyError

MAX_BYTES = 1 << 20      # 1 MiB: a topology of thousands of flows fits
MAX_DEPTH = 32           # nesting of mappings and sequences (a topology needs about 8)
MAX_NODES = 200_000      # scalars, mappings and sequences once aliases are expanded
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when the wheel has it
# Plain scalars YAML 1.1 reads as booleans although they look like words.
BOOLEAN_WORDS = {"yes", "no", "on", "off", "y", "n"}


def _subject(what: str) -> str:
    return "the topology" if "topology" in what else "the input"


def read_text(path: str | Path, what: str, limit: int = MAX_BYTES) -> str:
    """A regular UTF-8 file of at most `limit` bytes."""
    path = Path(path)
    source = str(path)
    try:
        return _read_text(path, source, what, limit)
    except TopologyError as exc:
        raise TopologyError(exc.problems, _subject(what)) from None


def _read_text(path: Path, source: str, what: str, limit: int) -> str:
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise TopologyError([Problem(source, "(file)", _kind(info.st_mode), f"a regular file ({what})")])
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise TopologyError([Problem(source, "(file)", None, f"a readable {what} ({exc.strerror})")]) from None
    if len(data) > limit:
        raise TopologyError([Problem(source, "(file)", f"more than {limit} bytes", f"a {what} of at most {limit} bytes")])
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise TopologyError([Problem(source, "(file)", f"byte 0x{data[exc.start]:02x} on line {line}",
                                     f"UTF-8 text ({what}); convert the file, e.g. iconv -t UTF-8")]) from None


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def load_yaml(text: str, source: str) -> Any:
    """One YAML document, checked as the module docstring says."""
    try:
        _measure(text, source)
        node = yaml.compose(text, Loader=LOADER)
    except yaml.YAMLError as exc:
        raise TopologyError([Problem(source, "(yaml)", None, f"valid YAML: {_one_line(exc)}")]) from None
    if node is None:
        return None
    problems: list[Problem] = []
    _check(node, source, problems, set())
    size = _expanded(node, {})
    if size is None:
        problems.append(Problem(source, "(yaml)", "an alias inside its own anchor",
                                "a document without recursive aliases (it would never end)"))
    elif size > MAX_NODES:
        problems.append(Problem(source, "(yaml)", f"{size} nodes once aliases are expanded",
                                f"at most {MAX_NODES}: anchors and aliases may not multiply the document"))
    if problems:
        raise TopologyError(problems)
    try:
        return yaml.load(text, Loader=LOADER)  # noqa: S506 - a safe loader, on a document checked above
    except yaml.YAMLError as exc:  # constructor errors (a merge key on a scalar...) come only here
        raise TopologyError([Problem(source, "(yaml)", None, f"valid YAML: {_one_line(exc)}")]) from None


def _measure(text: str, source: str) -> None:
    """Depth and size from the event stream, before any tree is built (a deep document would
    otherwise exhaust the stack of the recursive composer)."""
    depth = events = 0
    for event in yaml.parse(text, Loader=LOADER):
        events += 1
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                line = event.start_mark.line + 1 if event.start_mark else "?"
                raise TopologyError([Problem(source, "(yaml)", f"nesting deeper than {MAX_DEPTH} levels at line {line}",
                                             f"at most {MAX_DEPTH} nested mappings and lists")])
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
        if events > MAX_NODES:
            raise TopologyError([Problem(source, "(yaml)", f"more than {MAX_NODES} YAML events",
                                         f"a smaller document (at most {MAX_NODES} nodes)")])


def _check(node: yaml.Node, source: str, problems: list[Problem], seen: set[int]) -> None:
    """Duplicate keys and YAML 1.1 booleans, visiting each node once (aliases share nodes)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, yaml.MappingNode):
            keys: dict[str, int] = {}
            for key, value in current.value:
                if isinstance(key, yaml.ScalarNode):
                    line = key.start_mark.line + 1
                    if key.value in keys and key.tag != "tag:yaml.org,2002:merge":
                        problems.append(Problem(source, f"line {line}", key.value,
                                                f"each key once per mapping: {key.value!r} is already set on line "
                                                f"{keys[key.value]} (YAML keeps only the last)"))
                    keys.setdefault(key.value, line)
                stack += [key, value]
        elif isinstance(current, yaml.SequenceNode):
            stack += current.value
        elif (isinstance(current, yaml.ScalarNode) and current.tag == "tag:yaml.org,2002:bool"
              and not current.style and current.value.lower() in BOOLEAN_WORDS):  # plain: None or ''
            problems.append(Problem(source, f"line {current.start_mark.line + 1}", current.value,
                                    f"true or false, or '{current.value}' in quotes: YAML 1.1 reads a plain "
                                    f"{current.value} as a boolean"))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return list(node.value) if isinstance(node, yaml.SequenceNode) else []


def _expanded(node: yaml.Node, memo: dict[int, int]) -> int | None:
    """Nodes once aliases are expanded, computed on the shared graph (never expanded); a
    recursive alias (a node inside itself) would be infinite: None."""
    ACTIVE = -1
    stack = [(node, False)]
    while stack:  # depth-first post-order without recursion
        current, done = stack.pop()
        if done:
            memo[id(current)] = 1 + sum(memo[id(c)] for c in _children(current))
            continue
        state = memo.get(id(current))
        if state == ACTIVE:
            return None  # reached again while inside itself: a recursive alias
        if state is not None:
            continue
        memo[id(current)] = ACTIVE
        stack.append((current, True))
        stack += [(c, False) for c in _children(current)]
    return memo[id(node)]


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


def load_yaml_file(path: str | Path, what: str) -> Any:
    text = read_text(path, what)
    try:
        return load_yaml(text, str(path))
    except TopologyError as exc:
        raise TopologyError(exc.problems, _subject(what)) from None


def line_of(text: str, steps: list[str | int]) -> int | None:
    """The line (1-based) of the deepest node of `steps` a YAML document has: the key's line for
    a mapping entry, the item's for a list item, the parent's when the last step is missing (a
    required key). None when the text is not one YAML document. Only called on text load_yaml
    has accepted, so composing it again is bounded."""
    try:
        node = yaml.compose(text, Loader=LOADER)
    except yaml.YAMLError:
        return None
    if node is None:
        return None
    line = node.start_mark.line + 1
    for step in steps:
        child = None
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value == step:
                    line, child = key.start_mark.line + 1, value
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int) and 0 <= step < len(node.value):
            child = node.value[step]
            line = child.start_mark.line + 1
        if child is None:
            break
        node = child
    return line


def load_json_file(path: str | Path, what: str) -> Any:
    text = read_text(path, what, limit=16 * MAX_BYTES)
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise TopologyError([Problem(str(path), "(json)", None, f"valid JSON ({what}): {_one_line(exc)}")],
                            _subject(what)) from None
