"""The engine tier's harness: the real Pulumi CLI and Kubernetes provider (tools/engine) against
real kube-apiservers (tests/engine/test_engine.py, docs/engine.md)."""
