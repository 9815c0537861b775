#!/usr/bin/env bash
# Regenerates the interop vectors: Go writes go-vectors.json from seeded
# randomness, then generate.mjs checks it with @turnkey/crypto and @hpke/core
# and writes js-vectors.json. Needs Go and Node 20+; plain `go test` needs
# neither Node nor this script.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
pkg="$(cd "$here/../.." && pwd)"
(cd "$pkg" && GOTOOLCHAIN=auto go test -count=1 -run '^TestGoVectors$' . -update-go-vectors)
cd "$here"
npm ci --no-audit --no-fund
node generate.mjs
(cd "$pkg" && GOTOOLCHAIN=auto go test -count=1 -run 'Vectors' .)
