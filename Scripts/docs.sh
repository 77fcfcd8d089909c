#!/usr/bin/env bash
# Builds the DocC archives of the public library products (Haul, HaulHTTP, HaulSessions) with
# swift-docc-plugin and fails on any warning: a symbol link that points nowhere, a doc comment DocC cannot
# read, a catalog page that curates a symbol that is gone. The archives land in
# .build/plugins/Swift-DocC/outputs/NAME.doccarchive. Offline: the plugin resolves like any other package.
# After Scripts/test.sh the modules are built already, so this costs about a minute (the plugin's own
# helper tool, symbol extraction and docc).
set -euo pipefail
cd "$(dirname "$0")/.."

log=$(mktemp "${TMPDIR:-/tmp}/haul-docs.XXXXXX")
trap 'rm -f "$log"' EXIT

set +e
swift package generate-documentation --target Haul --target HaulHTTP --target HaulSessions >"$log" 2>&1
status=$?
set -e
# Everything but the compiler's progress lines ("[12/89] Compiling ...").
grep -Ev '^\[[0-9]+/[0-9]+\] ' "$log" || true

if [ "$status" -ne 0 ]; then
    echo "docs: generate-documentation failed (exit $status)" >&2
    exit "$status"
fi
warnings=$(grep -c 'warning:' "$log" || true)
if [ "$warnings" -ne 0 ]; then
    echo "docs: $warnings warning(s); the documentation must build without any:" >&2
    grep 'warning:' "$log" >&2
    exit 1
fi
echo "docs: Haul, HaulHTTP and HaulSessions archives built without warnings"
