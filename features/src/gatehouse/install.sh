#!/bin/sh
# The gatehouse Dev Container Feature: installs the `gatehouse` command from a
# release tarball (the npm package gatehouse-agents) with the image's npm.
# Options arrive as environment variables: VERSION, REPOSITORY, TARBALL.
set -eu

fail() {
  echo "gatehouse feature: $*" >&2
  exit 1
}

VERSION="${VERSION:-latest}"
VERSION="${VERSION#v}"
REPOSITORY="${REPOSITORY:-}"
TARBALL="${TARBALL:-}"

if [ -z "$TARBALL" ]; then
  [ -n "$REPOSITORY" ] || fail 'set the "tarball" option (a release tarball URL) or "repository" (owner/name on GitHub)'
  if [ "$VERSION" = latest ]; then
    TARBALL="https://github.com/$REPOSITORY/releases/latest/download/gatehouse-agents.tgz"
  else
    TARBALL="https://github.com/$REPOSITORY/releases/download/v$VERSION/gatehouse-agents-$VERSION.tgz"
  fi
else
  case "$TARBALL" in
    http://* | https://*) ;;
    # A path is inside this Feature's folder, which is the working directory here.
    /*) ;;
    *) TARBALL="$(pwd)/$TARBALL" ;;
  esac
fi

command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 ||
  fail 'needs Node.js 22.19 or later with npm: use a Node image, or add ghcr.io/devcontainers/features/node first'
# package.json's engines: ^22.19.0 || >=23.4.0
node -e '
  const [major, minor] = process.versions.node.split(".").map(Number);
  process.exit((major === 22 && minor >= 19) || (major === 23 && minor >= 4) || major >= 24 ? 0 : 1);
' || fail "needs Node.js 22.19 or later (23.4 or later on 23); this image has $(node --version)"

echo "gatehouse feature: installing $TARBALL"
npm install --global --no-fund --no-audit --no-update-notifier "$TARBALL"
echo "gatehouse feature: installed gatehouse $(gatehouse --version)"
