"""Hostile input: every malformed or adversarial input is refused quickly, with an exact message,
exit code 2 and no traceback; secrets are never echoed."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from infra.core import reading
from infra.core.errors import TopologyError
from infra.tools import render
from tests.support.refusals import problems as problems_of, refusals
from tests.support.stacks import ROOT, SECRETS, doc_topology


def cli(*args: str, timeout: float = 60, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """`prefix`: a command that runs the CLI (setpriv, to run it as another user)."""
    env = {k: v for k, v in os.environ.items() if k != "INFRA_DEBUG"}
    return subprocess.run([*prefix, sys.executable, "-m", "infra", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=env)


def refused(path: Path) -> list[str]:
    return refusals(reading.load_yaml_file, path, "topology file")


def write(tmp_path: Path, text: str | bytes, name: str = "t.yaml") -> Path:
    path = tmp_path / name
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
    return path


# ------------------------------------------------------------------ reading files


def test_an_alias_bomb_is_refused_without_being_expanded(tmp_path):
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for prev, name in zip("abcdef", "bcdefg"):
        lines.append(f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]")
    path = write(tmp_path, "\n".join(lines) + "\n")
    start = time.perf_counter()
    assert refused(path) == [f"{path}: (yaml): got '6053451 nodes once aliases are expanded'; expected at most "
                             "200000: anchors and aliases may not multiply the document"]
    assert time.perf_counter() - start < 10  # expanded, this document holds 5 million nodes


def test_a_recursive_alias_is_refused(tmp_path):
    path = write(tmp_path, "a: &a [*a]\n")
    assert refused(path) == [f"{path}: (yaml): got 'an alias inside its own anchor'; expected a document without "
                             "recursive aliases (it would never end)"]


def test_deep_nesting_is_refused_before_any_tree_is_built(tmp_path):
    path = write(tmp_path, "[" * 100_000 + "]" * 100_000)
    assert refused(path) == [f"{path}: (yaml): got 'nesting deeper than 32 levels at line 1'; expected at most 32 "
                             "nested mappings and lists"]


def test_duplicate_keys_are_refused_with_both_lines(tmp_path):
    path = write(tmp_path, "clusters: {}\nflows:\n  - source: a\nflows: []\n")
    assert refused(path) == [f"{path}: line 4: got 'flows'; expected each key once per mapping: 'flows' is already "
                             "set on line 2 (YAML keeps only the last)"]


def test_yaml_1_1_booleans_are_explained(tmp_path):
    path = write(tmp_path, "clusters:\n  no: {bootstrapServers: 'a:9092'}\n  'off': {}\nflows: []\n")
    assert refused(path) == [f"{path}: line 2: got 'no'; expected true or false, or 'no' in quotes: YAML 1.1 reads "
                             "a plain no as a boolean"]


def test_a_file_that_is_not_utf8_is_refused(tmp_path):
    path = write(tmp_path, b"clusters:\n  a: \xff\n")
    assert refused(path) == [f"{path}: (file): got 'byte 0xff on line 2'; expected UTF-8 text (topology file); "
                             "convert the file, e.g. iconv -t UTF-8"]


def test_only_regular_files_of_bounded_size_are_read(tmp_path):
    assert refused(Path("/dev/zero")) == ["/dev/zero: (file): got 'a character device'; expected a regular file "
                                          "(topology file)"]
    assert refused(tmp_path) == [f"{tmp_path}: (file): got 'a folder'; expected a regular file (topology file)"]
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert refused(fifo) == [f"{fifo}: (file): got 'a named pipe'; expected a regular file (topology file)"]
    big = write(tmp_path, "# " + "x" * (1 << 20) + "\n", "big.yaml")
    assert refused(big) == [f"{big}: (file): got 'more than 1048576 bytes'; expected a topology file of at most "
                            "1048576 bytes"]


def test_the_c_loader_is_used_where_the_wheel_has_it():
    assert reading.LOADER is getattr(yaml, "CSafeLoader", yaml.SafeLoader)


# ------------------------------------------------------------------ the command line


def test_validate_exits_2_on_hostile_files_without_traceback(tmp_path):
    for path in ("/dev/zero", str(tmp_path), str(tmp_path / "missing.yaml"), str(write(tmp_path, b"\xfe\xff"))):
        proc = cli("validate", path)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, (path, proc.stderr)
        assert proc.stderr.startswith("error: the topology has 1 problem(s):"), proc.stderr


def test_a_malformed_secret_argument_is_not_echoed(tmp_path):
    proc = cli("render", "--stack", "dev", "--out", str(tmp_path / "out"), "--secret", "hunter2-no-key")
    assert proc.returncode == 2
    assert "hunter2" not in proc.stderr + proc.stdout
    assert proc.stderr == ("error: the command line has 1 problem(s):\n  - --secret: (argument): got 'argument 1 of "
                           "--secret (value not shown)'; expected KEY=VALUE with a config key such as us-west.password\n")


def test_a_malformed_set_argument_is_refused(tmp_path):
    proc = cli("render", "--stack", "dev", "--out", str(tmp_path / "out"), "--set", "=x")
    assert proc.returncode == 2
    assert "--set: (argument): got '=x'; expected KEY=VALUE" in proc.stderr


def test_an_unwritable_or_foreign_out_folder_is_refused_before_rendering(tmp_path):
    afile = write(tmp_path, "x", "afile")
    proc = cli("render", "--stack", "dev", "--out", str(afile), "--placeholder-secrets")
    assert proc.returncode == 2
    assert proc.stderr == (f"error: the command line has 1 problem(s):\n  - --out: {afile}: got 'a file'; expected "
                           "a folder (absent, empty or a previous render)\n")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    proc = cli("render", "--stack", "dev", "--out", str(foreign), "--placeholder-secrets")
    assert proc.returncode == 2 and "a folder with other files" in proc.stderr
    assert (foreign / "notes.txt").read_text() == "mine"
    # Root writes through any mode bits (as CI runs): the command then runs without the
    # capabilities that let it (util-linux setpriv drops them from its bounding set), still root,
    # so it reads the checkout and the virtualenv wherever they are.
    with tempfile.TemporaryDirectory() as scratch:
        locked = Path(scratch) / "locked"
        locked.mkdir(mode=0o555)
        as_user: tuple[str, ...] = ()
        if os.access(locked, os.W_OK):
            as_user = ("setpriv", "--bounding-set=-dac_override,-dac_read_search", "--")
        proc = cli("render", "--stack", "dev", "--out", str(locked / "sub"), "--placeholder-secrets",
                   prefix=as_user)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == (f"error: the command line has 1 problem(s):\n  - --out: {locked / 'sub'}: missing; "
                           f"expected a folder this user can write ({locked}: Permission denied)\n")


def test_previous_outputs_that_cannot_be_read_are_refused(tmp_path):
    bad = write(tmp_path, "[1", "outputs.json")
    proc = cli("render", "--stack", "dev", "--out", str(tmp_path / "o"), "--placeholder-secrets",
               "--previous-outputs", str(bad))
    assert proc.returncode == 2
    assert proc.stderr == (f"error: the input has 1 problem(s):\n  - {bad}: (json): missing; expected valid JSON "
                           "(stack outputs file): Expecting ',' delimiter: line 1 column 3 (char 2)\n")
    listed = write(tmp_path, "[1]", "list.json")
    proc = cli("render", "--stack", "dev", "--out", str(tmp_path / "o"), "--placeholder-secrets",
               "--previous-outputs", str(listed))
    assert proc.returncode == 2 and "(json): got 'list'; expected an object" in proc.stderr


def test_a_stack_name_cannot_reach_outside_the_project(tmp_path):
    proc = cli("render", "--stack", "../../etc/passwd", "--out", str(tmp_path / "o"))
    assert proc.returncode == 2
    assert "--stack: (argument): got '../../etc/passwd'; expected a Pulumi stack name" in proc.stderr


def test_a_topology_problem_still_reads_as_before(tmp_path):
    t = doc_topology()
    t["flows"][0]["tasksMax"] = {"source": "lots"}
    path = write(tmp_path, yaml.safe_dump(t))
    proc = cli("validate", str(path))
    assert proc.returncode == 2 and "tasksMax.source: got 'lots'" in proc.stderr


# ------------------------------------------------------------------ values the platform would refuse


FLOW = "flows[0] (repl-us-west-us-east)"
NO_REFERENCE = ("a value without ${...}: config-provider references are the program's own (cluster connections and "
                "secrets); in a connector or SMT setting one could read any file or Secret the Connect worker can, "
                "and an SMT would stamp it on every record")


@pytest.mark.parametrize("change, expected", [
    (lambda t: t["flows"][0].update(tasksMax={"source": 1e30}),
     f"{FLOW}: tasksMax.source: got 1e+30; expected an integer from 1 to 2147483647"),
    (lambda t: t["flows"][0].update(tasksMax={"source": True}),
     f"{FLOW}: tasksMax.source: got True; expected an integer from 1 to 2147483647"),
    (lambda t: t["clusters"]["us-west"].update(bootstrapServers="a:99999"),
     "clusters.us-west: bootstrapServers: got 'a:99999'; expected ['a:99999']: a port is 1-65535"),
    (lambda t: t["flows"][0].update(connect={"resources": {"requests": {"cpu": "lots"}}}),
     f"{FLOW}: connect.resources.requests.cpu: got 'lots'; expected 'lots' is not a quantity such as 500m, 2 or 4Gi"),
    (lambda t: t["clusters"]["us-west"]["security"]["sasl"].update(username="bot\nadmin"),
     "clusters.us-west: security.sasl.username: got 'bot\\nadmin'; expected a username without quotes, "
     "backslashes, control characters (line breaks) or ${ (the Connect worker would resolve it as a config-provider "
     "reference) (at most 256 characters)"),
    (lambda t: t["operator"]["imagePullSecret"].update(name="../../escape"),
     "operator: imagePullSecret.name: got '../../escape'; expected a Kubernetes object name: lowercase letters, "
     "digits, '-' and '.' (at most 253 characters)"),
    (lambda t: t.update(audit={"driverMemory": "1g --conf spark.x=y"}),
     "audit: driverMemory: got '1g --conf spark.x=y'; expected a JVM memory size such as 512m or 2g (at most 12 "
     "characters)"),
    (lambda t: t.update(audit={"imagePullPolicy": "Sometimes"}),
     "audit: imagePullPolicy: got 'Sometimes'; expected 'Always', 'IfNotPresent' or 'Never'"),
    (lambda t: t.update(audit={"image": "Registry/Team Image"}),
     "audit: image: got 'Registry/Team Image'; expected an image reference such as "
     "registry.example.com/team/image:1.0 (lowercase path, optional tag and digest) (at most 512 characters)"),
    (lambda t: t["flows"][0].update(transforms=[{"name": "stamp", "type": "org.apache.kafka.connect.transforms.InsertHeader",
                                                 "config": {"header": "h", "value.literal":
                                                            "${file:/tmp/strimzi-connect.properties:sasl.jaas.config}"}}]),
     f"{FLOW}: transforms[0].config.value.literal: got '${{file:/tmp/strimzi-connect.properties:sasl.jaas.config}}'; "
     f"expected {NO_REFERENCE}"),
    (lambda t: t["flows"][0].update(config={"source": {"x.y": "${secret:other-namespace/s:k}"}}),
     f"{FLOW}: config.source.x.y: got '${{secret:other-namespace/s:k}}'; expected {NO_REFERENCE}"),
])
def test_values_the_platform_would_refuse(change, expected):
    t = doc_topology()
    change(t)
    assert problems_of(t) == [expected]


SECRET_MESSAGES = {
    "us-east.password": ("clusters.us-east: secret config kafka-replication:us-east.password: got the secret value "
                         "(not shown); expected the SASL password; this is a password with \" or \\: the cluster is a "
                         "flow's target, and Strimzi writes its password into the Connect worker's JAAS line "
                         "unescaped, which breaks the worker"),
}


@pytest.mark.parametrize("key, value, expected", [
    ("us-east.password", 'has"quote', SECRET_MESSAGES["us-east.password"]),
    ("us-west.password", "two\nlines", "clusters.us-west: secret config kafka-replication:us-west.password: got the "
     "secret value (not shown); expected the SASL password; this is a value with a line break"),
    ("us-west.password", "", "clusters.us-west: secret config kafka-replication:us-west.password: got the secret "
     "value (not shown); expected the SASL password; this is empty"),
    ("us-west.truststore", "not base64!", "clusters.us-west: secret config kafka-replication:us-west.truststore: got "
     "the secret value (not shown); expected the truststore file, base64-encoded (TLS trust: jks or pkcs12); this is "
     "unusable: the truststore is not base64 (Only base64 data is allowed)"),
    ("us-east.caCert", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
     "clusters.us-east: secret config kafka-replication:us-east.caCert: got the secret value (not shown); expected "
     "the PEM CA certificate (TLS trust: pem); this is unusable: PEM block 1 is not an X.509 certificate"),
])
def test_secret_material_is_checked_before_anything_deploys(tmp_path, key, value, expected):
    """Each refusal names the item and the rule, never the value."""
    secrets = {**SECRETS, key: value}
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(doc_topology()))
    with pytest.raises(TopologyError) as exc:
        render.run("test", {"topology": str(path)}, secrets)
    assert [str(p) for p in exc.value.problems] == [expected]
    assert value not in exc.value.report() or not value


@pytest.mark.parametrize("item", ["us-east.caCert", "us-west.clientCert"])
def test_a_certificate_field_with_a_private_key_in_it_is_refused_unshown(tmp_path, item):
    """A "combined PEM" (certificate and key in one file) given as the CA or the client
    certificate: the key would be written where the certificates go (the CA's Secret, which
    every connector of the flow reads)."""
    from tests.support.material import material
    t = doc_topology()
    t["clusters"]["us-west"]["security"] = {"protocol": "SSL", "tls": {"trust": "pem", "clientCertificate": True}}
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(t))
    kube = material("kube")
    secrets = {**SECRETS, "us-west.caCert": kube.ca_pem, "us-west.clientCert": kube.client_cert_pem,
               "us-west.clientKey": kube.client_key_pem}
    secrets[item] = (secrets.get(item) or kube.ca_pem) + kube.client_key_pem
    with pytest.raises(TopologyError) as exc:
        render.run("test", {"topology": str(path)}, secrets)
    alias, name = item.split(".")
    (problem,) = [str(p) for p in exc.value.problems]
    assert problem.startswith(f"clusters.{alias}: secret config kafka-replication:{item}: got the secret value (not "
                              "shown); expected ")
    assert problem.endswith("this is unusable: PRIVATE KEY block(s) beside the certificates: this holds certificates "
                            "only (a private key goes in clientKey; here it would be written wherever the certificates "
                            "go)")
    assert kube.client_key_pem.splitlines()[1] not in exc.value.report()


def test_expired_trust_or_client_certificates_are_refused_unshown(tmp_path):
    """A CA (or truststore) whose every certificate has expired, or a client certificate that
    has: the handshake would fail in the running worker. An expired CA beside a valid one (a
    bundle during a CA rotation) passes."""
    import datetime

    from tests.support.material import material
    old, kube = material("old", datetime.datetime(2025, 6, 1, tzinfo=datetime.timezone.utc)), material("kube")
    t = doc_topology()
    t["clusters"]["us-west"]["security"] = {"protocol": "SSL", "tls": {"trust": "jks", "clientCertificate": True}}
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(t))
    secrets = {**SECRETS, "us-east.caCert": old.ca_pem, "us-west.clientCert": old.client_cert_pem,
               "us-west.clientKey": old.client_key_pem, "us-west.truststore": old.truststore_jks("changeit"),
               "us-west.truststorePassword": "changeit"}
    with pytest.raises(TopologyError) as exc:
        render.run("test", {"topology": str(path)}, secrets)
    expected = "got the secret value (not shown); expected "
    assert sorted(str(p).split(expected)[0] + str(p).split("; this is ")[1] for p in exc.value.problems) == [
        "clusters.us-east: secret config kafka-replication:us-east.caCert: expired: its one certificate expired, the "
        "last on 2025-06-01T00:00:00Z; nothing it trusts can be verified. Set the cluster's current CA certificate in "
        "the stack",
        "clusters.us-west: secret config kafka-replication:us-west.clientCert: expired: the client certificate was "
        "valid until 2025-06-01T00:00:00Z; the brokers refuse it. Set the renewed certificate (and its key) in the "
        "stack",
        "clusters.us-west: secret config kafka-replication:us-west.truststore: expired: its one certificate expired, "
        "the last on 2025-06-01T00:00:00Z; nothing it trusts can be verified. Set the cluster's current CA "
        "certificate in the stack"]
    assert old.ca_pem.splitlines()[1] not in exc.value.report()
    # During a CA rotation: the expired CA beside the current one, and a current client certificate.
    secrets.update({"us-east.caCert": old.ca_pem + kube.ca_pem, "us-west.clientCert": kube.client_cert_pem,
                    "us-west.clientKey": kube.client_key_pem, "us-west.truststore": kube.truststore_jks("changeit")})
    rendered = render.run("test", {"topology": str(path)}, secrets).objects()
    (ca,) = [o for o in rendered if o["kind"] == "Secret" and o["metadata"]["name"] == "target-us-east-ca"]
    assert (ca["stringData"]["ca-0.crt"], ca["stringData"]["ca-1.crt"]) == (old.ca_pem, kube.ca_pem)


def test_a_secret_given_as_plain_config_is_refused(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(doc_topology()))
    plain = {"topology": str(path), "us-west.password": SECRETS["us-west.password"]}
    secrets = {k: v for k, v in SECRETS.items() if k != "us-west.password"}
    with pytest.raises(TopologyError) as exc:
        render.run("test", plain, secrets)
    assert [str(p) for p in exc.value.problems] == [
        "clusters.us-west: secret config kafka-replication:us-west.password: got 'a plain (not secret) value'; "
        "expected a secret: pulumi config rm kafka-replication:us-west.password, then pulumi config set --secret "
        "kafka-replication:us-west.password ..."]
    assert SECRETS["us-west.password"] not in exc.value.report()


def test_schema_and_rule_problems_come_together_in_user_terms():
    t = doc_topology()
    t["flows"][0]["config"] = {"source": {"x": 1.5}}     # a union (str, int, bool) refuses it
    t["flows"][0]["target"] = "nowhere"                  # a rule across fields
    found = problems_of(t)
    assert found == [
        "flows[0] (repl-us-west-nowhere): config.source.x: got 1.5; expected a string, an integer or true/false",
        "flows[0] (repl-us-west-nowhere): target: got 'nowhere'; expected a cluster alias defined under `clusters`: "
        "us-east, us-west"]


def test_a_chosen_name_cannot_take_one_of_the_programs_objects(tmp_path):
    t = doc_topology()
    t["operator"]["imagePullSecret"]["name"] = "source-us-west"  # the flow's source Secret
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(t))
    with pytest.raises(TopologyError) as exc:
        render.run("test", {"topology": str(path)}, SECRETS)
    assert [str(p) for p in exc.value.problems] == [
        "namespace repl-us-west-us-east: Secret name: got 'source-us-west'; expected a name of its own: the program "
        "also writes Secret 'source-us-west' there (repl-us-west-us-east)"]


def test_a_derived_name_that_is_too_long_says_how_to_shorten_it():
    t = doc_topology()
    alias = "us-west-region-primary-0001abc"
    t["clusters"][alias] = {"bootstrapServers": "w.kafka:9092"}
    t["flows"][0]["source"] = alias
    assert problems_of(t) == [
        f"flows[0] (repl-{alias}-us-east): name: got 'repl-{alias}-us-east'; expected lowercase letters, digits and "
        "'-' (DNS-1123), at most 40 characters; without `name` it is `repl-<source>-<target>`: set a shorter `name`"]


def _strict(text: str):
    """JSON as jq or JSON.parse read it: NaN and Infinity are not JSON."""
    import json

    def refuse(constant):
        raise ValueError(f"not JSON: {constant}")
    return json.loads(text, parse_constant=refuse)


def test_json_output_is_strict_json_for_nan_and_infinity(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text('clusters:\n  a: {bootstrapServers: "a:9092"}\n  b: {bootstrapServers: "b:9092"}\n'
                    'flows: [{source: a, target: b, topics: ["t.*"], tasksMax: {source: .nan}, '
                    'config: {source: {x: .inf, y: -.inf}}}]\n')
    out = subprocess.run([sys.executable, "-m", "infra", "validate", "--output", "json", str(path)],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 2 and out.stderr == "", out.stderr
    assert [(p["field"], p["value"]) for p in _strict(out.stdout)["problems"]] == [
        ("tasksMax.source", ".nan"), ("config.source.x", ".inf"), ("config.source.y", "-.inf")]


def test_jsontext_replaces_only_non_finite_floats():
    from infra.core import jsontext
    value = {"a": [float("nan"), float("inf"), -float("inf"), 1.5, 0, None, "nan"], "b": (2.0,)}
    assert _strict(jsontext.dumps(value)) == {"a": [".nan", ".inf", "-.inf", 1.5, 0, None, "nan"], "b": [2.0]}


@pytest.mark.parametrize("value, expected", [
    ("6\u00b2", "got '6\u00b2'; expected a whole number of seconds (Kafka reads it as a long)"),
    ("9223372036854775808", "got '9223372036854775808'; expected a whole number of seconds (Kafka reads it as a long)"),
    (2**63, "got 9223372036854775808; expected an integer within Java's long (-9223372036854775808 to "
            "9223372036854775807)"),
])
def test_numbers_java_would_refuse_are_refused_not_crashed_on(value, expected):
    t = doc_topology()
    t["flows"][0]["config"] = {"checkpoint": {"emit.checkpoints.interval.seconds": value}}
    (problem,) = problems_of(t)
    assert problem.endswith(f"config.checkpoint.emit.checkpoints.interval.seconds: {expected}"), problem


@pytest.mark.parametrize("value, seconds", [("\u0663\u0660", 30), (" +60\t", 60), (-1, None), ("-5", None)])
def test_numbers_java_reads_are_read_as_java_reads_them(value, seconds):
    """Long.parseLong takes decimal digits of any script (Character.digit) after String.trim."""
    from infra.plan import failover
    from infra.topology.resolution import resolve
    from infra.topology.schema import Topology
    t = doc_topology()
    t["flows"][0]["config"] = {"checkpoint": {"emit.checkpoints.interval.seconds": value}}
    flow = resolve(Topology.model_validate(t)).flows[0].flow
    assert failover.emit_seconds(flow) == seconds


def test_non_ascii_digits_where_kafka_and_kubernetes_read_ascii_only(tmp_path):
    """A port (Kafka's Utils.getPort: [0-9]+) and a cron field (Kubernetes' parser: strconv.Atoi)
    take ASCII digits only: '6²' is refused with the field's message, not a crash."""
    t = doc_topology()
    t["clusters"]["us-west"]["bootstrapServers"] = "a:6\u00b2"
    t["audit"] = {"schedule": "6\u00b2 * * * *"}
    found = problems_of(t)
    assert any(p.endswith("bootstrapServers: got 'a:6\u00b2'; expected ['a:6\u00b2'] is not a comma-separated list "
                          "of host:port") for p in found), found
    assert any(p.endswith("audit: schedule: got '6\u00b2 * * * *'; expected minute: '6\u00b2' is not in 0-59")
               for p in found), found
