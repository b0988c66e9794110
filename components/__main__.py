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

import sys

from pulumi.provider import main

from components.replication import provider

if __name__ == "__main__":
    # Pulumi's component_provider_host, with the schema typed from the model: the language host
    # passes the plugin's folder, then the engine's address and flags.
    main(provider(), sys.argv[1:])
