"""Every topology the suite renders: the stacks on every release (`renders`), every security setup
and pattern on every release (`variant_topologies`), and the stacks' names (`STACKS`)."""

from __future__ import annotations

import yaml

from tests.support.patterns import PATTERNS
from tests.support.stacks import RELEASES, ROOT, doc_topology, on_release


def variant_topologies() -> dict[str, dict]:
    """Every security setup and pattern on every supported operator release
    (`<variant>-<flavour>-<release>`)."""
    def two(source, target, flavour, version):
        return on_release(doc_topology(clusters={"a": {"bootstrapServers": "a:9093", "security": source},
                                                 "b": {"bootstrapServers": "b:9093", "security": target}},
                                       flows=[{"source": "a", "target": "b", "topics": ["t.*"],
                                               "connect": {"resources": {"requests": {"cpu": "1"}}}}]),
                          flavour, version)
    sasl = {"protocol": "SASL_SSL", "sasl": {"mechanism": "SCRAM-SHA-512", "username": "u"}}
    mtls = {"protocol": "SSL", "tls": {"clientCertificate": True}}
    variants = {}
    for flavour, version in RELEASES:
        at = f"{flavour}-{version}"
        variants[f"doc-{at}"] = on_release(doc_topology(), flavour, version)
        variants[f"sasl-{at}"] = two(sasl, sasl, flavour, version)
        variants[f"mtls-{at}"] = two(mtls, mtls, flavour, version)
        variants[f"plain-{at}"] = two({}, {}, flavour, version)
        for name, make in PATTERNS.items():
            variants[f"{name}-{at}"] = make(flavour, version)
    return variants


STACKS = sorted(p.stem for p in (ROOT / "stacks").glob("*.yaml"))


def renders() -> dict[str, dict]:
    """Every stack on every release, and every variant (which are already per release)."""
    out = {}
    for stack in ("dev", "prod"):
        data = yaml.safe_load((ROOT / "stacks" / f"{stack}.yaml").read_text())
        for flavour, version in RELEASES:
            out[f"{stack}-{flavour}-{version}"] = on_release(data, flavour, version)
    # Exactly-once: the heartbeat's offsets consumer and admin join its producer.
    prod = yaml.safe_load((ROOT / "stacks" / "prod.yaml").read_text())
    for flow in prod["flows"]:
        flow["exactlyOnce"] = "enabled"
    for flavour, version in RELEASES:
        out[f"prod-eos-{flavour}-{version}"] = on_release(prod, flavour, version)
    out.update(variant_topologies())
    return out
