#!/usr/bin/env bash
# The Prometheus Operator's PodMonitor and PrometheusRule CRDs, at the version go.mod pins, into
# ~/.cache/kafka-replication/prometheus-operator-crds/<version>/ (the API-server tier installs
# them: tests/apiserver/test_apiserver.py). From the module's zip through the Go module proxy; never committed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
module=github.com/prometheus-operator/prometheus-operator
version="$(awk -v m="$module" '$1 == "require" && $2 == m {print $3} $1 == m {print $2}' "$here/go.mod")"
out="${KAFKA_REPLICATION_CACHE:-$HOME/.cache/kafka-replication}/prometheus-operator-crds/$version"
crds=(monitoring.coreos.com_podmonitors.yaml monitoring.coreos.com_prometheusrules.yaml)
if [ -f "$out/${crds[0]}" ] && [ -f "$out/${crds[1]}" ]; then echo "$out"; exit 0; fi
dir="$(cd "$here" && go mod download -json "$module" | python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')"
mkdir -p "$out.tmp"
for crd in "${crds[@]}"; do cp "$dir/example/prometheus-operator-crd/$crd" "$out.tmp/$crd"; done
chmod u+w "$out.tmp"/*
rm -rf "$out" && mv "$out.tmp" "$out"
echo "$out"
