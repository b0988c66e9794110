"""The component provider: ReplicationTopology and ReplicationFlow for programs in any Pulumi
language. Pulumi runs this folder as a plugin (PulumiPlugin.yaml):

    pulumi package add <path or git URL of this repository>/components

then, in a YAML program for example:

    resources:
      orders:
        type: kafka-replication:ReplicationFlow
        properties: {clusters: {...}, flow: {...}, secrets: {...}}

The schema other languages' SDKs are generated from is components/schema.json (`make schema`
writes it; tests/unit/test_components.py holds it to the code).
"""

from pulumi.provider.experimental import component_provider_host

from components.replication import PUBLIC, VERSION

if __name__ == "__main__":
    component_provider_host(list(PUBLIC), name="kafka-replication", version=VERSION)
