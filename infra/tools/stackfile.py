"""Changes the failover and failback commands write into a user's topology file, on the lines
they concern alone: every other line stays as the user wrote it (comments, quoting, indentation).
ruamel.yaml says where each key and flow is; a full dump would re-indent the file. Each result is
checked against the same change made on the document as the program reads it (PyYAML), so that a
layout these edits cannot handle (a flow written in flow style, say) is refused with what to
write by hand, never written half-right."""

from __future__ import annotations

import copy
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

import yaml

from infra.core.errors import Problem, TopologyError

# The runbook's change: every connector of the flow stopped (offsets and configuration kept).
STOPPED = {"source": "stopped", "checkpoint": "stopped", "heartbeat": "stopped"}
STOPPED_LINE = "state: {" + ", ".join(f"{k}: {v}" for k, v in STOPPED.items()) + "}"
HELP = "docs/operations.md#the-failover-command"


def _is_note(line: str) -> bool:
    return not line.strip() or line.lstrip().startswith("#")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


class _File:
    """A topology file's lines and where its flows are."""

    def __init__(self, text: str):
        from ruamel.yaml import YAML
        self.lines = text.splitlines(keepends=True)
        if self.lines and not self.lines[-1].endswith("\n"):
            self.lines[-1] += "\n"
        try:
            self.document = YAML().load(text)
            self.flows = self.document["flows"]
            self.flows.lc.item(0)
        except Exception as exc:  # ruamel.yaml's own errors: a layout it cannot place, said as such
            raise TopologyError([Problem("flows", "(layout)", type(exc).__name__, "a file whose flows the command "
                                         f"can place line by line; make the change by hand ({HELP})")],
                                "the topology file") from None

    def entry_end(self, i: int) -> int:
        """The line after flow i's last line: the next flow's, the next top-level key's or the end,
        less the comments and blank lines that lead to it."""
        following = [self.flows.lc.item(i + 1)[0]] if i + 1 < len(self.flows) else []
        top = list(self.document)
        after = top[top.index("flows") + 1:]
        following += [self.document.lc.key(after[0])[0]] if after else []
        end = min(following) if following else len(self.lines)
        last = self.flows.lc.item(i)[0]
        entry = self.flows[i]
        if hasattr(entry, "lc") and len(entry):
            last = entry.lc.key(list(entry)[-1])[0]
        while end - 1 > last and _is_note(self.lines[end - 1]):
            end -= 1
        return end

    def value_lines(self, holder: Any, key: str, stop: int) -> tuple[int, int, list[int]]:
        """The line and column of `key` in `holder`, and the lines of its value below it before
        line `stop`, comments left out: deeper than the key, or a block sequence's items at the
        key's own column (`offsets:` then `- connector: ...`, as PyYAML writes them)."""
        line, column = holder.lc.key(key)
        keys = list(holder)
        later = [holder.lc.key(k)[0] for k in keys[keys.index(key) + 1:]]
        end = later[0] if later else stop
        return line, column, [i for i in range(line + 1, end) if not _is_note(self.lines[i]) and (
            _indent(self.lines[i]) > column or self.lines[i][column:].startswith("- "))]

    def text(self) -> str:
        return "".join(self.lines)


def _checked(text: str, changed: str, expect: Callable[[dict[str, Any]], None], where: str, by_hand: str) -> str:
    expected = yaml.safe_load(text)
    expect(expected)
    try:
        same = yaml.safe_load(changed) == expected
    except yaml.YAMLError:
        same = False
    if not same:
        raise TopologyError([Problem(where, "(layout)", None, f"a flow written in block style, which the command "
                                     f"changes on its own lines; {by_hand} by hand ({HELP})")], "the topology file")
    return changed


# ----------------------------------------------------------------- the flow stopped


def state_paths(entry: dict[str, Any]) -> list[list[str | int]]:
    """Where a flow's declaration sets connector states: its `state`, and each named source
    connector's own `state`, which overrides the flow's `state.source` (infra/topology/schema/flow.py)."""
    paths: list[list[str | int]] = [["state"]]
    for j, instance in enumerate(entry.get("sources") or []):
        if isinstance(instance, dict) and "state" in instance:
            paths.append(["sources", j, "state"])
    for i, part in enumerate(entry.get("connectClusters") or []):
        for j, instance in enumerate((part or {}).get("sources") or []):
            if isinstance(instance, dict) and "state" in instance:
                paths.append(["connectClusters", i, "sources", j, "state"])
    return paths


def _get(entry: Any, path: list[str | int]) -> Any:
    for step in path:
        entry = entry[step]
    return entry


def _stop(entry: Any) -> None:
    for path in state_paths(entry):
        holder = _get(entry, path[:-1])
        if path == ["state"]:
            if not isinstance(holder.get("state"), dict):
                holder["state"] = {}
            holder["state"].update(STOPPED)
        else:
            holder[path[-1]] = "stopped"


def already_stopped(entry: dict[str, Any]) -> bool:
    return all((entry.get("state") or {}).get(k) == v for k, v in STOPPED.items()) and all(
        _get(entry, p) == "stopped" for p in state_paths(entry)[1:])


def stopped_text(text: str, declared: int) -> str:
    """The file with flow `declared` stopped: its `state` written as one line where it was (or
    after the flow's last line, above the comments that lead to the next), each named source
    connector's own `state` set to `stopped` on its line."""
    f = _File(text)
    entry = f.flows[declared]
    end = f.entry_end(declared)
    edits: list[tuple[int, int, list[str]]] = []  # (first line, lines replaced, new lines)
    for path in state_paths(entry)[1:]:
        holder = _get(entry, path[:-1])
        line, column = holder.lc.key("state")
        if holder.lc.value("state")[0] != line:
            edits = []
            break
        comment = f.lines[line].split("#", 1)[1] if "#" in f.lines[line].split(":", 1)[1] else None
        edits.append((line, 1, [" " * column + "state: stopped" + (f"  #{comment}" if comment else "\n")]))
    if "state" in entry:
        line, column, value = f.value_lines(entry, "state", end)
        edits += [(i, 1, []) for i in value]  # its value's lines go; the comments among them stay
        edits.append((line, 1, [" " * column + STOPPED_LINE + "\n"]))
    elif len(entry):
        edits.append((end, 0, [" " * entry.lc.key(list(entry)[0])[1] + STOPPED_LINE + "\n"]))
    for first, count, new in sorted(edits, reverse=True):
        f.lines[first:first + count] = new
    return _checked(text, f.text(), lambda doc: _stop(doc["flows"][declared]), f"flows[{declared}]",
                    f"set `{STOPPED_LINE}` there")


# ----------------------------------------------------------------- a flow added or replaced


def entry_lines(entry: dict[str, Any], dash_column: int) -> list[str]:
    """A new flow as block YAML under `flows`, its dash at `dash_column`, leaf lists and maps on
    one line each (as the shipped stacks write them)."""
    dumped = yaml.safe_dump([entry], sort_keys=False, default_flow_style=None, width=4096)
    return [" " * dash_column + line + "\n" for line in dumped.splitlines()]


def _dash_column(f: _File, i: int) -> int:
    line, column = f.flows.lc.item(i)
    found: int = f.lines[line].rfind("-", 0, column + 1)
    return found if found >= 0 else int(column)


def replaced_text(text: str, declared: int | None, entry: dict[str, Any]) -> str:
    """The file with flow `declared` replaced by `entry` (its own comments above it kept), or with
    `entry` added after the last flow when `declared` is None."""
    f = _File(text)
    if not len(f.flows):
        raise TopologyError([Problem("flows", "(layout)", None, "at least one flow in block style")],
                            "the topology file")
    at = len(f.flows) - 1 if declared is None else declared
    new = entry_lines(entry, _dash_column(f, at))
    end = f.entry_end(at)
    if declared is None:
        f.lines[end:end] = new
    else:
        start = f.flows.lc.item(declared)[0]
        f.lines[start:end] = new

    def expect(doc: dict[str, Any]) -> None:
        if declared is None:
            doc["flows"].append(copy.deepcopy(entry))
        else:
            doc["flows"][declared] = copy.deepcopy(entry)
    where = "flows" if declared is None else f"flows[{declared}]"
    return _checked(text, f.text(), expect, where, "write the flow")


def set_keys(text: str, declared: int, values: dict[str, Any], removed: tuple[str, ...] = ()) -> str:
    """The file with flow `declared`'s keys in `values` written on one line each where they were
    (after the flow's last line when new), and the keys in `removed` taken out with their values."""
    f = _File(text)
    entry = f.flows[declared]
    end = f.entry_end(declared)
    column = entry.lc.key(list(entry)[0])[1]
    edits: list[tuple[int, int, list[str]]] = []
    for key in (*values, *removed):
        if key not in entry:
            continue
        line, _, value = f.value_lines(entry, key, end)
        edits += [(i, 1, []) for i in value]
        edits.append((line, 1, [] if key in removed else
                      [" " * column + yaml.safe_dump({key: values[key]}, default_flow_style=True, width=4096)
                       .strip().removeprefix("{").removesuffix("}") + "\n"]))
    edits += [(end, 0, [" " * column + yaml.safe_dump({k: v}, default_flow_style=True, width=4096).strip()
                        .removeprefix("{").removesuffix("}") + "\n"]) for k, v in values.items() if k not in entry]
    for first, count, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        f.lines[first:first + count] = new

    def expect(doc: dict[str, Any]) -> None:
        flow = doc["flows"][declared]
        for key in removed:
            flow.pop(key, None)
        flow.update(copy.deepcopy(values))
    return _checked(text, f.text(), expect, f"flows[{declared}]", "make the change")


def write_atomically(path: Path, text: str) -> None:
    """Replace the file whole, with its mode: a reader never sees half of it."""
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w") as out:
            out.write(text)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
