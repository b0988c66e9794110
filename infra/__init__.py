"""Kafka replication on Kubernetes: topology model, naming, plan, program wiring and the CLI."""


