"""The public components' arguments, checked before anything is created: every problem at once,
in the project's terms (infra/core/errors.py), never the AttributeError or TypeError of whatever
first stumbled on a bad value.

The arguments that decide which resources exist (a topology, clusters, a flow, an operator
section) must be plain data when the program runs: mappings with text keys, lists, text,
numbers, booleans, None. `secrets` is the one argument whose values may be Outputs; each value
is text or an Output of text, and none is ever shown in a message. Once their shape is right,
the document they make is checked as a topology file is (infra/checks/validation.py).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable

import pulumi

from infra.core.errors import Problem, TopologyError
from infra.core.reading import MAX_DEPTH
from infra.deploy import config as stack_config

WHERE = "args"
KNOWN_AT_RUN = "a plain value known when the program runs: it decides which resources exist (only `secrets` " \
               "values may be Outputs)"
PLAIN = "plain data: a mapping with text keys, a list, text, a number, true/false or None"
SECRET_VALUE = "text, or an Output of text (a secret Output, such as config.require_secret gives)"


class Given:
    """What was given, as a message shows it (Problem prints the value's repr)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Given) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


def kind(value: Any) -> Given:
    """A value's type in words, never the value: `an Output`, `a list`, `None`."""
    if value is None:
        return Given("None")
    if isinstance(value, pulumi.Output):
        return Given("an Output")
    name = type(value).__name__
    return Given(f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}")


@dataclass(frozen=True)
class Argument:
    name: str
    required: bool
    expected: str  # what the top-level value must be, in a message's words
    check: Callable[[Any, str, list[Problem]], Any]  # (value, name, problems) -> the value to use


@dataclass(frozen=True)
class Checked:
    """Arguments whose shape is right: plain data by name (an unset optional one absent) and the
    secrets, with each Output value checked to resolve to text."""

    values: dict[str, Any]
    secrets: dict[str, Any]


def check(args: Any, component: str, arguments: tuple[Argument, ...], subject: str) -> Checked:
    """`args` of `component` against its arguments: unknown keys (with the closest known one),
    missing required ones, wrong types, Outputs where plain data is needed, secret values that
    are not text. Raises TopologyError with every problem."""
    problems: list[Problem] = []
    known = [a.name for a in arguments]
    if not isinstance(args, Mapping):
        raise TopologyError([Problem(WHERE, "(arguments)", kind(args), f"a mapping of {component}'s arguments: "
                                     f"{', '.join(known)}")], subject)
    for key in args:
        if key not in known:
            problems.append(Problem(WHERE, key if isinstance(key, str) else repr(key), Given(repr(key)),
                                    _known_key(key, known, component)))
    values: dict[str, Any] = {}
    for argument in arguments:
        value = args.get(argument.name)
        if value is None:
            if argument.required:
                problems.append(Problem(WHERE, argument.name, Given("None") if argument.name in args else None,
                                        f"{argument.expected} (required)"))
            continue
        values[argument.name] = argument.check(value, argument.name, problems)
    if problems:
        raise TopologyError(problems, subject)
    secrets = values.pop("secrets", {})
    return Checked(values, secrets)


def _known_key(key: Any, known: list[str], component: str) -> str:
    guess = difflib.get_close_matches(key, known, n=1, cutoff=0.6) if isinstance(key, str) else []
    listed = f"{component} takes {', '.join(known)}; see docs/components.md"
    if guess:
        return f"a known argument: did you mean `{guess[0]}`? ({listed})"
    return f"a known argument ({listed})"


def document(expected: str) -> Callable[[Any, str, list[Problem]], Any]:
    """A mapping of plain data (a topology, clusters, a flow, an operator section), copied as
    the validation reads documents (lists for tuples): the caller's later changes do not reach
    it."""
    def check_document(value: Any, name: str, problems: list[Problem]) -> Any:
        if isinstance(value, pulumi.Output):
            problems.append(Problem(WHERE, name, kind(value), KNOWN_AT_RUN))
            return None
        if not isinstance(value, Mapping):
            problems.append(Problem(WHERE, name, kind(value), expected))
            return None
        return plain(value, name, problems)
    return check_document


def plain(value: Any, path: str, problems: list[Problem], depth: int = 0) -> Any:
    """`value` as plain data (dicts, lists, scalars), each thing that is not named at its path."""
    if isinstance(value, pulumi.Output):
        problems.append(Problem(WHERE, path, kind(value), KNOWN_AT_RUN))
        return None
    if isinstance(value, (str, bool, int, float)) or value is None:
        return value
    if not isinstance(value, (Mapping, list, tuple)):
        problems.append(Problem(WHERE, path, kind(value), PLAIN))
        return None
    if depth >= MAX_DEPTH:
        problems.append(Problem(WHERE, path, Given(f"nesting deeper than {MAX_DEPTH} levels"),
                                f"at most {MAX_DEPTH} nested mappings and lists"))
        return None
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                problems.append(Problem(WHERE, f"{path}[{key!r}]", Given(f"a key that is {kind(key)!r}"), "text keys"))
                continue
            out[key] = plain(item, f"{path}.{key}", problems, depth + 1)
        return out
    return [plain(item, f"{path}[{i}]", problems, depth + 1) for i, item in enumerate(value)]


def secrets(value: Any, name: str, problems: list[Problem]) -> dict[str, Any]:
    """Secret items by name: text, or Outputs that must resolve to text. Names are those of the
    stack's secret config (infra/deploy/config.py); one that names no item gets the closest item it
    could be. Items the topology does not need are allowed (one mapping may serve several flows),
    except an item the topology takes by reference (`sasl.passwordSecret`, `tls.secret`), which the
    deployment check refuses: it would never be read."""
    if isinstance(value, pulumi.Output):
        problems.append(Problem(WHERE, name, kind(value), "a mapping known when the program runs (its values "
                                                          "may be Outputs)"))
        return {}
    if not isinstance(value, Mapping):
        problems.append(Problem(WHERE, name, kind(value), "a mapping of secret item to " + SECRET_VALUE))
        return {}
    out: dict[str, Any] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            problems.append(Problem(WHERE, f"{name}[{key!r}]", Given(f"a key that is {kind(key)!r}"),
                                    "a secret item's name (text)"))
            continue
        if not stack_config.is_secret_item(key):
            problems.append(Problem(WHERE, f"{name}.{key}", Given(repr(key)), _item_name(key)))
            continue
        if isinstance(item, pulumi.Output):
            out[key] = item.apply(_text(key))
        elif isinstance(item, str):
            out[key] = item
        else:
            # The value itself is never shown: a password given as a number is still a password.
            problems.append(Problem(WHERE, f"{name}.{key}", Given(f"{kind(item)!r} (not shown)"), SECRET_VALUE))
    return out


def _item_name(key: str) -> str:
    alias, _, item = key.rpartition(".")
    items = list(stack_config.SECRET_ITEMS)
    guess = difflib.get_close_matches(item, items, n=1, cutoff=0.6) if alias else []
    listed = (f"<alias>.<item> with item one of {', '.join(items)}, registry.password or "
              f"kubernetes.<cluster>.kubeconfig (docs/topology.md#secrets)")
    if guess:
        return f"a secret item: did you mean `{alias}.{guess[0]}`? ({listed})"
    return f"a secret item: {listed}"


def _text(key: str) -> Callable[[Any], str]:
    def text(value: Any) -> str:
        if not isinstance(value, str):
            raise TopologyError([Problem(WHERE, f"secrets.{key}", Given(f"an Output of {kind(value)!r} (not shown)"),
                                         SECRET_VALUE)], "the secret arguments")
        return value
    return text


TOPOLOGY = (
    Argument("topology", True, "a mapping: the fields of a stacks/<stack>.yaml document (docs/topology.md)",
             document("a mapping: the fields of a stacks/<stack>.yaml document (docs/topology.md)")),
    Argument("secrets", True, "a mapping of secret item to " + SECRET_VALUE + " ({} when none is needed)", secrets),
)

FLOW = (
    Argument("clusters", True, "a mapping of the flow's two clusters by alias, each as under `clusters` in a topology",
             document("a mapping of the flow's two clusters by alias, each as under `clusters` in a topology")),
    Argument("flow", True, "a mapping: one item of `flows` in a topology",
             document("a mapping: one item of `flows` in a topology")),
    Argument("operator", False, "a mapping: the operator section of a topology, or None for its defaults",
             document("a mapping: the operator section of a topology, or None for its defaults")),
    Argument("secrets", True, "a mapping of secret item to " + SECRET_VALUE + " ({} when none is needed)", secrets),
)
