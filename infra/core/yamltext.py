"""YAML text the plan writes into objects (the metrics exporter's rules, the Prometheus rule
files): PyYAML's emitter in C (libyaml) where the installed PyYAML has it, its Python emitter
otherwise. The C emitter writes these documents in a sixth of the time (1.07 s against 0.16 s
for the documents of a 100-flow plan; docs/performance.md); tests/unit/test_yamltext.py holds
that both write the same text for every stack and topology of the suite, so a render does not
depend on which one a machine has."""

from __future__ import annotations

from typing import Any

import yaml

_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def dump(data: Any, **options: Any) -> str:
    """yaml.safe_dump(data, **options), through the C emitter when there is one."""
    text: str = yaml.dump(data, Dumper=_DUMPER, **options)
    return text
