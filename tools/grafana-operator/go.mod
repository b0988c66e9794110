// grafana-operator's GrafanaDashboard CRD, which the API-server and engine tiers validate our
// dashboard against: pinned here, downloaded by crds.sh into ~/.cache, never committed.
module kafka-replication/tools/grafana-operator

go 1.22

require github.com/grafana/grafana-operator/v5 v5.18.0
