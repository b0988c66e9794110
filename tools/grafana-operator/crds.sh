#!/usr/bin/env bash
# grafana-operator's GrafanaDashboard CRD, at the version go.mod pins, into
# ~/.cache/kafka-replication/grafana-operator-crds/<version>/ (the API-server and engine tiers
# install it; the conformance tier validates our dashboard against its schema). From the module's
# zip through the Go module proxy; never committed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
module=github.com/grafana/grafana-operator/v5
version="$(awk -v m="$module" '$1 == "require" && $2 == m {print $3} $1 == m {print $2}' "$here/go.mod")"
out="${KAFKA_REPLICATION_CACHE:-$HOME/.cache/kafka-replication}/grafana-operator-crds/$version"
crds=(grafana.integreatly.org_grafanadashboards.yaml)
if [ -f "$out/${crds[0]}" ]; then echo "$out"; exit 0; fi
dir="$(cd "$here" && go mod download -json "$module" | python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')"
mkdir -p "$out.tmp"
for crd in "${crds[@]}"; do cp "$dir/config/crd/bases/$crd" "$out.tmp/$crd"; done
chmod u+w "$out.tmp"/*
rm -rf "$out" && mv "$out.tmp" "$out"
echo "$out"
