// The Prometheus Operator's CRDs (PodMonitor, PrometheusRule) the API-server tier validates our
// objects against: pinned here, downloaded by infra/monitoring_crds.py into ~/.cache, never committed.
module kafka-replication/tools/prometheus-operator

go 1.22

require github.com/prometheus-operator/prometheus-operator v0.85.0
