"""Stacks and topologies for every tier: the documents' example, releases, rendering through the
real program under the recording mocks, and the API-server tier's rule when it cannot run."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml
from hypothesis import event, strategies as st

from infra.checks import validation
from infra.core import releases
from infra.core.errors import TopologyError
from infra.tools import render
from infra.tools.render import Render
from infra.tools.rehearsal.local import on_release  # noqa: F401 - the tests' name for it
from infra.topology.resolution import Model
from tests.support import skips
from tests.support.material import material

ROOT = Path(__file__).resolve().parents[2]
# A committer for the git repositories tests make (a fresh machine has no git identity).
GIT = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@example.com"}
# Distinctive values: a test greps every rendered byte for them. Trust and key material is real
# (tests/support/material.py), because the plan builds stores from it at deploy time.
SECRETS = {
    "us-west.password": "pw-US-WEST-5f2e",
    "us-west.truststore": material("us-west").truststore_jks("tsp-US-WEST-71bd"),
    "us-west.truststorePassword": "tsp-US-WEST-71bd",
    "us-west.clientCert": material("us-west").client_cert_pem,
    "us-west.clientKey": material("us-west").client_key_pem,
    "us-east.password": "pw-US-EAST-c3d1",  # a target's: Strimzi does not escape it (config.unusable_secrets)
    "us-east.caCert": material("us-east").ca_pem,
    "us-east.clientCert": material("us-east").client_cert_pem,
    "us-east.clientKey": material("us-east").client_key_pem,
    "registry.password": "reg-PW-88aa",
}

# The documents' example: source us-west SASL_SSL PLAIN with a truststore, target us-east TLS + PLAIN.
DOC_TOPOLOGY = {
    "operator": {
        "flavour": "csm",
        "connect": {"version": "3.8.0.1.2", "replicas": 3},
        "imagePullSecret": {"name": "cloudera-registry", "server": "container.repository.cloudera.com",
                            "username": "replication-bot"},
    },
    "clusters": {
        "us-west": {"bootstrapServers": "us-west-kafka-bootstrap.kafka-us-west:9093",
                    "security": {"protocol": "SASL_SSL", "sasl": {"mechanism": "PLAIN", "username": "replicator"},
                                 "tls": {"trust": "jks"}}},
        "us-east": {"bootstrapServers": "us-east-kafka-bootstrap.kafka-us-east:9093",
                    "security": {"protocol": "SASL_SSL", "sasl": {"mechanism": "PLAIN", "username": "replicator"},
                                 "tls": {"trust": "pem"}}},
    },
    "flows": [{"source": "us-west", "target": "us-east", "topics": ["test.*"], "groups": ["test.*"]}],
}


def doc_topology(**changes) -> dict:
    """The documents' example, with top-level sections replaced or patched."""
    topo = copy.deepcopy(DOC_TOPOLOGY)
    for key, value in changes.items():
        topo[key] = value
    return topo


RELEASES = [(r.flavour.value, r.version) for r in releases.SUPPORTED]
# The runtime tier's full matrix: the releases a stack stays on. The bridge release (0.51.0), a
# step on the way to 1.x, runs the dev flow and the upgrade through it; its one `ca.crt` key is
# 1.2.0's too, whose trust formats run below.
RUNTIME_RELEASES = [(r.flavour.value, r.version) for r in releases.SUPPORTED if not r.bridge]

# The runtime matrix, designed rather than multiplied (docs/architecture.md#the-runtime-release-matrix):
# every release runs the dev flow (and the prod stack, the metrics, the upgrades through it); a
# test that proves a mechanism runs on one release per way the releases differ in that
# mechanism, each subset derived from the release rows (infra/core/releases.py), so that a
# release added with a new behaviour joins the tests it changes without anyone listing it.
_RUNTIME = tuple(r for r in releases.SUPPORTED if not r.bridge)


def one_per(key, among: tuple[releases.Release, ...] = _RUNTIME, newest: bool = False) -> list[tuple[str, str]]:
    """One release per value of `key(release)`: the oldest of each (or the newest), in SUPPORTED's order."""
    chosen: dict[object, releases.Release] = {}
    for r in among:
        if newest or key(r) not in chosen:
            chosen[key(r)] = r
    return [(r.flavour.value, r.version) for r in among if r in chosen.values()]


# The oldest and the newest Kafka line: both worker-file generators, Kafka 3 and 4, v1beta2 and
# v1, offsets requests refused and run, a FAILED connector left and stopped by `state` (csm 1.2
# and strimzi 1.2.0 today). For mechanisms no release row gates (exactly-once, pause and scaling,
# Connect replicas, topic sync, the Default policy's disaster drill): MirrorMaker 2's and Connect's
# code on each Kafka major line and each generator.
RELEASE_ENDS = [(r.flavour.value, r.version) for r in (min(_RUNTIME, key=lambda r: r.kafka_line),
                                                       max(_RUNTIME, key=lambda r: r.kafka_line))]
# One release per way the worker reaches the clusters: the worker file's generator, the trusted
# certificates in one key or one per certificate, the SASL password through a provider or a
# file, the Role the operator adds without a Secret to read (csm 1.2, strimzi 0.48.0, 1.2.0
# today). The trust formats and the credential rotations run on these.
RELEASES_BY_WORKER_CONNECTION = one_per(lambda r: (r.worker_file, r.certificates_in_one_key,
                                                   r.password_through_provider, r.connect_role_always))
# One release per path of a connector's offsets: the REST API by hand (no offsets requests) or the
# operator's requests, on each worker-file generator (csm 1.2, csm 1.4, strimzi 1.2.0 today).
RELEASES_BY_OFFSETS_PATH = one_per(lambda r: (r.offset_management, r.worker_file), newest=True)
OFFSETS_RELEASES = [(f, v) for f, v in RELEASES_BY_OFFSETS_PATH
                    if releases.find(releases.Flavour(f), v).offset_management]


def ids(pairs: list[tuple[str, str]]) -> list[str]:
    return [f"{f}-{v}" for f, v in pairs]


# Every topology document the suite hands the validation pipeline (outside property tests, whose
# thousands of generated documents the fuzz tests cover), for tests/unit/test_verdicts.py: one
# verdict from `validate` and `render` on each.
DOCUMENTS_SEEN: dict[str, dict] = {}
_parse = validation.parse


def _recording_parse(data, source="topology"):
    from hypothesis import currently_in_test_context
    if isinstance(data, dict) and not currently_in_test_context():
        try:
            DOCUMENTS_SEEN.setdefault(json.dumps(data, sort_keys=True), copy.deepcopy(data))
        except (TypeError, ValueError):
            pass  # not JSON (a YAML date, a set...): not a document a test file could hold
    return _parse(data, source)


validation.parse = _recording_parse


def write_topology(tmp_path: Path, topology: dict, name: str = "topology.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(topology, sort_keys=False))
    return path


def render_topology(tmp_path: Path, topology: dict, secrets: dict | None = None, stack: str = "test",
                    placeholder_secrets: bool = True, previous_outputs: dict | None = None) -> Render:
    path = write_topology(tmp_path, topology)
    return render.run(stack, {"topology": str(path)}, dict(SECRETS if secrets is None else secrets),
                      placeholder_secrets=placeholder_secrets, previous_outputs=previous_outputs)


def refused_in_process(setup: str, program: str) -> tuple[list[str], str]:
    """Run a program on the mock engine in a process of its own, as `pulumi up` runs one (a
    failed run leaves other uses of a refused value scheduled on Pulumi's event loop): `setup`
    is Python that prepares it, `program` an expression that declares it. It must be refused
    with a TopologyError: its report's lines, and everything the process printed."""
    script = (f"import sys\nfrom infra.core.errors import TopologyError\nfrom infra.tools.render import RecordingMocks, "
              f"under_mocks\n{setup}\ntry:\n    under_mocks(lambda: {program}, RecordingMocks(), 'p', 's', {{}}, [])\n"
              "except TopologyError as exc:\n    print(exc.report())\n    sys.exit(2)\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    return done.stdout.splitlines(), done.stdout + done.stderr


def by_kind_name(objects: list[dict]) -> dict[tuple[str, str], dict]:
    return {(o["kind"], o["metadata"]["name"]): o for o in objects}


# ------------------------------------------------------------------ property tests


def sometimes(valid, invalid):
    """Mostly valid values (15 in 16), so that both outcomes are exercised."""
    return st.integers(0, 15).flatmap(lambda i: invalid if i == 0 else valid)


def parse_or_reject(data: dict) -> Model | None:
    """The topology, or None after checking that the refusal names every problem fully."""
    try:
        topo = validation.parse(data)
    except TopologyError as exc:
        assert exc.problems and all(p.where and p.field and p.allowed for p in exc.problems)
        event("rejected")
        for p in exc.problems:
            event("rejected for: " + p.allowed[:40])
        return None
    event("planned")
    return topo


# ------------------------------------------------------------------ the API-server tier

APISERVER_REQUIRED = os.environ.get("APISERVER_REQUIRED") == "1"


def unavailable(reason: str):
    """Skip a test whose tool this machine lacks (a Go binary, promtool, shellcheck, the jars), or
    fail it where every tier is required (.ci/run). The skip says so in its reason
    (skips.UNAVAILABLE), which the skip guard lets through outside CI only."""
    if APISERVER_REQUIRED:
        pytest.fail(f"the API server tier is required (APISERVER_REQUIRED=1) but {reason}", pytrace=False)
    pytest.skip(skips.UNAVAILABLE + reason)


def started_apiserver(tmp_path_factory, name: str):
    """A real kube-apiserver on loopback (docs/apiserver.md), as a Client, until the generator
    is closed; the tier's rule when it cannot run (`unavailable`)."""
    from infra.tools.rehearsal.apiserver import ServerError, apiserver_binary, start, stop
    from infra.tools.rehearsal.kubeapi import Client
    if apiserver_binary() is None:
        unavailable("no kube-apiserver binary: run tools/engine/build.sh or `make engine` (docs/apiserver.md)")
    directory = tmp_path_factory.mktemp(name)
    try:
        state = start(directory)
    except ServerError as exc:
        unavailable(f"the server did not start: {exc}")
    yield Client(state)
    stop(directory)


# The API-server tier's figures (tests/apiserver/test_apiserver.py): objects the server accepted, broken
# ones it refused, access questions its authorizer answered. Printed at the end of the run.
APISERVER_COUNTS: Counter = Counter()


# The runtime tier's figures (tests/runtime/test_replication.py): what ran for real.
RUNTIME_COUNTS: Counter = Counter()
