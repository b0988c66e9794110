#!/usr/bin/env bash
# The binaries of the engine and API-server tiers, built with Go from the module proxy at the
# versions pinned in tools/engine/*/go.mod, into a cache outside the repository:
#
#   pulumi             the Pulumi CLI                       (pulumi/go.mod)
#   pulumi-kubernetes  the Kubernetes resource provider     (pulumi-kubernetes/go.mod)
#   kube-apiserver     Kubernetes' API server               (kube-apiserver/go.mod)
#   kube-controller-manager  its controllers, of the same release (namespace deletion, garbage
#                      collection, volume-claim protection: what `pulumi destroy` waits on)
#   kubectl            kubectl of the same release          (kube-apiserver/go.mod)
#   actionlint         the GitHub Actions workflow checker  (actionlint/go.mod; tests/engine/test_workflows.py)
#   pulumi-sdkgen      Pulumi's SDK generators at the CLI's version (pulumi-sdkgen/; tests/engine/test_sdk.py)
#   toxiproxy-server   the fault proxy of the rehearsal's links (toxiproxy/go.mod; infra/tools/rehearsal/links.py)
#   kube-state-metrics the operator's view of the flows as series (kube-state-metrics/go.mod;
#                      infra/plan/monitoring/operator.py, tests/apiserver/test_operator_view.py)
#
#   tools/engine/build.sh [NAME...]       # builds what is missing; prints "<name> <path>" lines
#   tools/engine/build.sh --path NAME     # prints NAME's path if it is built (exit 1 if not)
#   tools/engine/build.sh --version NAME  # prints the version NAME is built at
#
# A binary lives under a directory named after its version and a digest of its module's go.mod,
# go.sum and Go files: changing a pin builds anew; nothing else does. Cold, the first five take
# about 17 minutes on 2 cores, actionlint under a minute more (docs/engine.md). KAFKA_REPLICATION_CACHE moves the cache.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${KAFKA_REPLICATION_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kafka-replication}/engine"
names=(pulumi pulumi-kubernetes kube-apiserver kube-controller-manager kubectl actionlint pulumi-sdkgen toxiproxy-server
       kube-state-metrics)

log() { echo "engine build: $*" >&2; }

module_dir() {
  case "$1" in
    pulumi) echo "$here/pulumi" ;;
    pulumi-kubernetes) echo "$here/pulumi-kubernetes" ;;
    kube-apiserver | kube-controller-manager | kubectl) echo "$here/kube-apiserver" ;;
    actionlint) echo "$here/actionlint" ;;
    pulumi-sdkgen) echo "$here/pulumi-sdkgen" ;;
    toxiproxy-server) echo "$here/toxiproxy" ;;
    kube-state-metrics) echo "$here/kube-state-metrics" ;;
    *) log "unknown binary: $1 (one of: ${names[*]})"; exit 2 ;;
  esac
}

# The version a binary reports: the pinned module's version, or for the provider the release
# whose tag is the pinned commit (the provider's tags do not name its Go module's subdirectory,
# so the module proxy serves it by commit only; its go.mod says which release that commit is).
version() {
  local mod
  mod="$(module_dir "$1")/go.mod"
  case "$1" in
    pulumi | pulumi-sdkgen) awk '$1 == "github.com/pulumi/pulumi/pkg/v3" {print $2}' "$mod" ;;
    pulumi-kubernetes) sed -n 's|^// release: \(v[0-9.]*\) .*|\1|p' "$mod" ;;
    kube-apiserver | kube-controller-manager | kubectl) awk '($1 == "require" && $2 == "k8s.io/kubernetes") {print $3}' "$mod" ;;
    actionlint) awk '$1 == "github.com/rhysd/actionlint" {print $2}' "$mod" ;;
    toxiproxy-server) awk '$1 == "github.com/Shopify/toxiproxy/v2" {print $2}' "$mod" ;;
    kube-state-metrics) awk '$1 == "k8s.io/kube-state-metrics/v2" {print $2}' "$mod" ;;
  esac
}

binary_path() {
  local dir digest
  dir="$(module_dir "$1")"
  digest="$(cat "$dir"/go.mod "$dir"/go.sum "$dir"/*.go 2>/dev/null | sha256sum | cut -c1-12)"
  echo "$cache/$1/$(version "$1")-$digest/$1"
}

build() {
  local name="$1" out dir ver work ldflags package
  out="$(binary_path "$name")"
  [[ -x "$out" ]] && return 0
  dir="$(module_dir "$name")"
  ver="$(version "$name")"
  [[ -n "$ver" ]] || { log "no version for $name in $dir/go.mod"; exit 1; }
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' RETURN
  cp "$dir"/go.mod "$dir"/go.sum "$work/"
  case "$name" in
    pulumi)
      package=github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
      ldflags="-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$ver" ;;
    pulumi-kubernetes)
      package=.
      cp "$dir"/main.go "$work/"
      # The provider module's schema.json with its version set, and its Terraform mapping,
      # compacted: what the provider's release build embeds (its cmd/.../generate.go).
      local src
      src="$(cd "$work" && go mod download -json github.com/pulumi/pulumi-kubernetes/provider/v4 |
             python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')/cmd/pulumi-resource-kubernetes"
      python3 - "$src" "$work" "${ver#v}" <<'EOF'
import json, sys
src, work, version = sys.argv[1:]
schema = json.load(open(f"{src}/schema.json"))
schema["version"] = version
json.dump(schema, open(f"{work}/schema-embed.json", "w"), separators=(",", ":"))
mapping = json.load(open(f"{src}/terraform-mapping.json"))
json.dump(mapping, open(f"{work}/terraform-mapping-embed.json", "w"), separators=(",", ":"))
EOF
      ldflags="-X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=${ver#v}" ;;
    kube-apiserver | kube-controller-manager | kubectl)
      package="k8s.io/kubernetes/cmd/$name"
      local minor="${ver#v1.}"; minor="${minor%%.*}"
      ldflags="-X k8s.io/component-base/version.gitVersion=$ver -X k8s.io/component-base/version.gitMajor=1"
      ldflags+=" -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean" ;;
    pulumi-sdkgen)
      package=.
      ldflags=""
      cp "$dir"/main.go "$work/" ;;
    actionlint)
      # Built as a dependency, its build info names our module's version, not its own.
      package=github.com/rhysd/actionlint/cmd/actionlint
      ldflags="-X github.com/rhysd/actionlint.version=$ver" ;;
    toxiproxy-server)
      package=github.com/Shopify/toxiproxy/v2/cmd/server
      ldflags="-X github.com/Shopify/toxiproxy/v2.Version=$ver" ;;
    kube-state-metrics)
      package=k8s.io/kube-state-metrics/v2
      ldflags="-X github.com/prometheus/common/version.Version=${ver#v}" ;;
  esac
  log "building $name $ver (Go, from the module proxy)"
  mkdir -p "$(dirname "$out")"
  # A temporary name of this process's own: `make test` may build a binary in two runs at once.
  (cd "$work" && go build -trimpath -ldflags "-s -w $ldflags" -o "$out.$$.tmp" "$package") >&2
  mv "$out.$$.tmp" "$out"
}

case "${1:-}" in
  --path)
    out="$(binary_path "$2")"
    [[ -x "$out" ]] || exit 1
    echo "$out" ;;
  --version)
    version "$2" ;;
  "" | pulumi | pulumi-kubernetes | kube-apiserver | kube-controller-manager | kubectl | actionlint | pulumi-sdkgen | \
  toxiproxy-server | kube-state-metrics)
    command -v go >/dev/null || { log "Go is not installed"; exit 1; }
    for name in "${@:-${names[@]}}"; do
      build "$name"
      echo "$name $(binary_path "$name")"
    done ;;
  *)
    log "usage: $0 [NAME... | --path NAME | --version NAME]"; exit 2 ;;
esac
