"""Replication run for real, on this machine: Kafka brokers, Kafka Connect workers and the
MirrorMaker 2 connectors configured by what the program renders (docs/rehearsal.md).

The runtime test tier and `python -m infra rehearse` share this package:

- jars.py: the pinned Maven build of each operator release's Kafka, Connect and config providers;
- material.py: a CA per Kafka cluster, its broker and client certificates, stores in every format;
- kafka.py: one single-node KRaft cluster per alias, with the security its topology declares;
- operator.py: the stand-in for the operator: the worker file a release writes from a
  KafkaConnect, and the connector requests it sends (offsets.py stands in for its offsets
  requests; tests/support/watch.py for its reconciliation as a controller);
- connect.py: distributed Connect workers, each in a mount namespace of its own (a "pod"), and
  their REST API;
- links.py: a fault proxy between the workers and the clusters; distance.py: a cluster in another
  region, behind a link with the kernel's TCP end to end;
- clients.py: a Java client (the JDK parses every property) that produces, reads and inspects;
- process.py: the JVMs (their hosts file, profiles and class-data archives); keeper.py: a process
  that ends them when the process that started them ends, however it ends.

The stand-in as a controller (it watches an API server for the custom resources Pulumi created,
runs them on the rehearsal's workers and writes their status from the Connect REST API) is the
engine tier's, tests/support/watch.py (docs/engine.md).
"""
