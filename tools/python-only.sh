#!/usr/bin/env bash
# Runs a command on a PATH of Python (the project's .venv), coreutils, git and make only: no
# Java, Go, Node, Maven or any binary the other tiers build. `tools/python-only.sh make test-unit`
# shows that the unit tier needs nothing but Python (docs/architecture.md, docs/performance.md).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$(mktemp -d)"
trap 'rm -rf "$bin"' EXIT
for tool in python3 git make sh bash env cat cp mv rm ln mkdir mktemp dirname basename ls touch test \
            tr sed awk grep head tail sort uniq wc cut date sleep id uname readlink realpath chmod find xargs \
            tar gzip true false printf expr stat dd sha256sum; do
  found="$(command -v "$tool" || true)"
  if [ -n "$found" ]; then ln -s "$found" "$bin/$tool"; fi
done
for forbidden in java javac keytool go node mvn kube-apiserver pulumi promtool; do
  if PATH="$root/.venv/bin:$bin" command -v "$forbidden" >/dev/null; then
    echo "python-only: $forbidden is still on the reduced PATH" >&2; exit 2
  fi
done
exec env -u JAVA_HOME PATH="$root/.venv/bin:$bin" "$@"
