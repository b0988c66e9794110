"""Other languages' SDKs of the components, generated from components/schema.json by Pulumi's own
code generators at the Pulumi CLI's version (tools/engine/pulumi-sdkgen: `pulumi package gen-sdk`
runs the same generators through the language plugins, which the module proxy does not serve).

The schema binds under Pulumi's metaschema; the TypeScript SDK types a cluster field by field; a Go
program of a team's own, written against the Go SDK, compiles. Running that program needs the Go
language host, which is not served either: what it would send is the schema's types, which
tests/unit/test_components.py holds to the model.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.stacks import ROOT, unavailable

SCHEMA = ROOT / "components" / "schema.json"
TEAM_PROGRAM = '''package main

import (
	kr "example.com/pulumi-kafka-replication/sdk/go/kafka-replication"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		flavour := kr.FlavourStrimzi
		protocol := kr.Protocol_SASL_SSL
		_, err := kr.NewReplicationFlow(ctx, "orders", &kr.ReplicationFlowArgs{
			Clusters: kr.ClusterMap{
				"us-west": kr.ClusterArgs{BootstrapServers: "us-west-kafka-bootstrap.kafka-us-west:9093",
					Security: &kr.SecurityArgs{Protocol: &protocol}},
				"us-east": kr.ClusterArgs{BootstrapServers: "us-east-kafka-bootstrap.kafka-us-east:9093"},
			},
			Flow:     kr.FlowArgs{Source: "us-west", Target: "us-east", Topics: []string{"orders\\\\..*"}},
			Operator: kr.OperatorArgs{Flavour: &flavour},
			Secrets:  pulumi.StringMap{"us-west.password": pulumi.ToSecret(pulumi.String("s3cret")).(pulumi.StringOutput)},
		})
		return err
	})
}
'''


@pytest.fixture(scope="module")
def sdkgen() -> Path:
    done = subprocess.run(["bash", str(ROOT / "tools/engine/build.sh"), "pulumi-sdkgen"], capture_output=True,
                          text=True, timeout=1800)
    if done.returncode != 0:
        unavailable(f"tools/engine/build.sh pulumi-sdkgen failed: {done.stderr.strip()[-500:]}")
    return Path(done.stdout.split()[-1])


def generate(sdkgen: Path, schema: Path, language: str, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(sdkgen), str(schema), language, str(out)], capture_output=True, text=True, timeout=300)


def test_the_typescript_sdk_types_the_topology_field_by_field(sdkgen, tmp_path):
    done = generate(sdkgen, SCHEMA, "nodejs", tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    inputs = (tmp_path / "types" / "input.ts").read_text()
    assert ("export interface ClusterArgs {\n    bootstrapServers: string;\n    kubernetes?: string;\n"
            "    security?: inputs.SecurityArgs;\n}") in inputs
    flow = (tmp_path / "replicationFlow.ts").read_text()
    assert "    clusters: pulumi.Input<{[key: string]: inputs.ClusterArgs}>;" in flow
    assert "    flow: pulumi.Input<inputs.FlowArgs>;" in flow
    assert "    topology: pulumi.Input<inputs.TopologyArgs>;" in (tmp_path / "replicationTopology.ts").read_text()
    enums = (tmp_path / "types" / "enums" / "index.ts").read_text()
    assert 'export const Mechanism = {\n    PLAIN: "PLAIN",\n    SCRAM_SHA_256: "SCRAM-SHA-256",\n' \
           '    SCRAM_SHA_512: "SCRAM-SHA-512",\n} as const;' in enums
    code = [line for line in inputs.splitlines() if not line.lstrip().startswith(("*", "/**"))]
    assert [line for line in code if re.search(r"\bany\b", line)] == []  # no `any` in the input types


def test_a_go_program_written_against_the_go_sdk_compiles(sdkgen, tmp_path):
    if shutil.which("go") is None:
        unavailable("Go is not installed")
    sdk = tmp_path / "sdk"
    done = generate(sdkgen, SCHEMA, "go", sdk)
    assert (done.returncode, done.stderr) == (0, "")
    # The generator names the package folder without its dash; its import path keeps it.
    (sdk / "kafkareplication").rename(sdk / "kafka-replication")
    # The generator's own module graph (its go.mod and go.sum), so that every dependency resolves
    # to the version tools/engine/build.sh compiled it at, and with its flags (-trimpath) the build
    # finds those packages in Go's cache: only the Pulumi SDK's runtime packages and ours compile
    # (measured: 5 of the program's 774 packages compiled, 55 CPU-seconds, against 154 with the
    # SDK's own minimal graph, which picks other versions of most dependencies).
    module = (ROOT / "tools/engine/pulumi-sdkgen/go.mod").read_text()
    assert "github.com/pulumi/pulumi/sdk/v3 " in module
    (sdk / "go.mod").write_text(re.sub(r"(?m)^module .*$", "module example.com/pulumi-kafka-replication/sdk/go",
                                       module))
    shutil.copy(ROOT / "tools/engine/pulumi-sdkgen/go.sum", sdk / "go.sum")
    (sdk / "team").mkdir()
    (sdk / "team" / "main.go").write_text(TEAM_PROGRAM)
    build = ["go", "build", "-trimpath", "-o", str(tmp_path / "team"), "./team"]
    built = subprocess.run(build, cwd=sdk, capture_output=True, text=True, timeout=1800,
                           env={**os.environ, "GOFLAGS": "-mod=mod"})
    assert built.returncode == 0, built.stderr
    # A misspelt field is a compile error, not a silently dropped key.
    (sdk / "team" / "main.go").write_text(TEAM_PROGRAM.replace("BootstrapServers: \"us-east", "BootstrapServer: \"us-east"))
    built = subprocess.run(build, cwd=sdk, capture_output=True, text=True, timeout=600,
                           env={**os.environ, "GOFLAGS": "-mod=mod"})
    assert built.returncode == 1
    assert "unknown field BootstrapServer in struct literal of type kafkareplication.ClusterArgs" in built.stderr


def test_a_schema_that_does_not_bind_is_refused(sdkgen, tmp_path):
    schema = json.loads(SCHEMA.read_text())
    schema["types"]["kafka-replication:index:Cluster"]["properties"]["security"]["$ref"] = \
        "#/types/kafka-replication:index:Nowhere"
    broken = tmp_path / "schema.json"
    broken.write_text(json.dumps(schema))
    done = generate(sdkgen, broken, "nodejs", tmp_path / "out")
    assert done.returncode == 1
    assert "kafka-replication:index:Nowhere" in done.stderr and "pulumi-sdkgen: the schema does not bind" in done.stderr
