#!/usr/bin/env bash
# Regenerates what is derived from haul's argument parser, so it never drifts from `haul --help`:
#   docs/haul.1                    the man page (swift-argument-parser's generate-manual plugin)
#   docs/completions/haul.bash     bash completion  (haul --generate-completion-script bash)
#   docs/completions/_haul         zsh completion
#   docs/completions/haul.fish     fish completion
# Everything is built locally from the resolved swift-argument-parser: no network needed once the package
# dependencies are fetched. Run it after changing an option, and commit what it writes.
set -euo pipefail
cd "$(dirname "$0")/.."

# The manual's date is the last commit that changed the CLI, so that running this twice writes the same bytes.
date=$(git log -1 --format=%cs -- Sources/haul Sources/HaulCommandLine 2>/dev/null || true)
[ -n "$date" ] || date=$(date +%F)

swift build --product haul
bin=$(swift build --show-bin-path)/haul

# The plugin builds every product (debug, reusing the build above) and runs generate-manual on `haul`.
swift package generate-manual --configuration debug --date "$date" --authors "The Haul authors" >/dev/null
mkdir -p docs/completions
cp .build/plugins/GenerateManual/outputs/haul/haul.1 docs/haul.1

"$bin" --generate-completion-script bash > docs/completions/haul.bash
"$bin" --generate-completion-script zsh > docs/completions/_haul
"$bin" --generate-completion-script fish > docs/completions/haul.fish

echo "wrote docs/haul.1 and docs/completions/{haul.bash,_haul,haul.fish}"
