#!/usr/bin/env bash
# Build kube-apiserver v1.20.2 from Debian's `kubernetes` source package, once, into a cache
# outside the repository. No package ships the binary; the source package (the full 1.20.2 tree
# with vendor/) builds offline with Debian's Go 1.19. Needs root for apt-get.
# Beside it, kubectl of the same release and source (Debian's `kubernetes-client`, unpacked, not
# installed, so that no other kubectl on the machine is replaced): the tests' oracle for how
# client-go loads a kubeconfig.
#
#   infra/rehearsal/apiserver-build.sh  # prints the binary's path; builds only when missing
#
# Two pitfalls this script handles:
# - rsync must be installed, or Kubernetes' code generators come out empty and the build fails
#   with "prerelease-lifecycle-gen: Permission denied".
# - the vendored github.com/modern-go/reflect2 v1.0.1 crashes under Go 1.19 on the first
#   custom-resource request; Debian's 1.0.2 replaces it in vendor/, vendor/modules.txt, go.mod.
set -euo pipefail

VERSION=v1.20.2
CACHE="${KUBE_APISERVER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kafka-replication/apiserver}"
BIN="$CACHE/$VERSION/kube-apiserver"
KUBECTL="$CACHE/$VERSION/kubectl"

have_server() { [[ -x "$BIN" ]] && "$BIN" --version >/dev/null 2>&1; }
have_kubectl() { [[ -x "$KUBECTL" ]] && "$KUBECTL" version --client >/dev/null 2>&1; }
if have_server && have_kubectl; then
  echo "$BIN"
  exit 0
fi

log() { echo "apiserver build: $*" >&2; }
[[ $(id -u) -eq 0 ]] || { log "needs root for apt-get (packages and the deb-src download)"; exit 1; }

export DEBIAN_FRONTEND=noninteractive
if ! have_kubectl; then
  log "unpacking kubectl $VERSION (Debian's kubernetes-client)"
  apt-get update -qq >&2
  DEB=$(mktemp -d)
  chmod 777 "$DEB"  # apt's download user (_apt) writes here
  (cd "$DEB" && apt-get download -qq kubernetes-client >&2)
  dpkg-deb -x "$DEB"/kubernetes-client_*.deb "$DEB/root"
  mkdir -p "$(dirname "$KUBECTL")"
  cp "$DEB/root/usr/bin/kubectl" "$KUBECTL.tmp" && mv "$KUBECTL.tmp" "$KUBECTL"
  rm -rf "$DEB"
  "$KUBECTL" version --client >&2
fi
if have_server; then
  echo "$BIN"
  exit 0
fi

log "installing build tools (golang-1.19-go, rsync, reflect2 1.0.2, dpkg-dev)"
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends \
  golang-1.19-go rsync golang-github-modern-go-reflect2-dev dpkg-dev make >&2

# deb-src entries in a private apt directory: the system's sources stay untouched.
APTDIR="$CACHE/apt"
mkdir -p "$APTDIR/sources.list.d" "$APTDIR/lists/partial"
# The machine's own Debian entries (deb822 files signed by Debian's archive key, one-line
# entries of sources.list), turned into deb-src: no archive host is written here.
SRCLIST="$APTDIR/sources.list.d/debian-src.sources"
: > "$SRCLIST"
for f in /etc/apt/sources.list.d/*.sources; do
  [[ -f "$f" ]] && grep -q 'debian-archive-keyring' "$f" || continue
  sed -E 's/^Types:.*/Types: deb-src/' "$f" >> "$SRCLIST"
  echo >> "$SRCLIST"
done
if [[ -f /etc/apt/sources.list ]]; then
  grep -E '^deb[[:space:]]' /etc/apt/sources.list | sed -E 's/^deb[[:space:]]/deb-src /' \
    > "$APTDIR/sources.list.d/debian-src.list" || true
fi
[[ -s "$SRCLIST" || -s "$APTDIR/sources.list.d/debian-src.list" ]] || {
  log "no Debian apt source on this machine to fetch the kubernetes source package from"; exit 1; }
APT_SRC=(-o "Dir::Etc::SourceParts=$APTDIR/sources.list.d" -o "Dir::Etc::SourceList=/dev/null"
         -o "Dir::State::Lists=$APTDIR/lists")
log "fetching the kubernetes source package"
apt-get "${APT_SRC[@]}" update -qq >&2
WORK="$CACHE/work"
rm -rf "$WORK"
mkdir -p "$WORK"
(cd "$WORK" && apt-get "${APT_SRC[@]}" source -qq kubernetes >&2)
SRCDIR=$(find "$WORK" -mindepth 1 -maxdepth 1 -type d -name 'kubernetes-*' | head -1)
[[ -f "$SRCDIR/go.mod" ]] || { log "no source tree under $WORK"; exit 1; }

log "replacing vendored reflect2 1.0.1 with Debian's 1.0.2"
R2=/usr/share/gocode/src/github.com/modern-go/reflect2
rm -rf "$SRCDIR/vendor/github.com/modern-go/reflect2"
mkdir -p "$SRCDIR/vendor/github.com/modern-go/reflect2"
find "$R2" -maxdepth 1 -type f -name '*.go' ! -name '*_test.go' -exec cp {} "$SRCDIR/vendor/github.com/modern-go/reflect2/" \;
cp "$R2/LICENSE" "$SRCDIR/vendor/github.com/modern-go/reflect2/" 2>/dev/null || true
sed -i 's#github.com/modern-go/reflect2 v1.0.1#github.com/modern-go/reflect2 v1.0.2#g' \
  "$SRCDIR/go.mod" "$SRCDIR/vendor/modules.txt"

# GOPATH-style layout, as Kubernetes' 1.20 build scripts expect.
mkdir -p "$WORK/.go/src/k8s.io"
ln -sfn "$SRCDIR" "$WORK/.go/src/k8s.io/kubernetes"
log "building cmd/kube-apiserver (several minutes on 2 cores)"
(
  cd "$WORK/.go/src/k8s.io/kubernetes"
  export PATH="/usr/lib/go-1.19/bin:$PATH" GOPATH="$WORK/.go" GOFLAGS=-mod=vendor GO111MODULE=on
  make WHAT=cmd/kube-apiserver CGO_ENABLED=0 KUBE_GIT_VERSION=$VERSION KUBE_GIT_TREE_STATE=clean >&2
)
OUT=$(find "$SRCDIR/_output" -type f -name kube-apiserver -perm -u+x | head -1)
[[ -n "$OUT" ]] || { log "build produced no kube-apiserver"; exit 1; }
mkdir -p "$(dirname "$BIN")"
cp "$OUT" "$BIN.tmp" && mv "$BIN.tmp" "$BIN"
rm -rf "$WORK"
"$BIN" --version >&2
echo "$BIN"
