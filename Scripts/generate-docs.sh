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
# The plugin's SYNOPSIS is `haul subcommand [urls...]` and every option; it has no ENVIRONMENT section. Both
# are replaced here: the synopsis by the usage `haul --help` shows, and ENVIRONMENT (the variables haul reads)
# goes before EXIT STATUS.
awk -v synopsis="$(cat <<'MDOC'
.Nm
.Op Ar options
.Ar URL
.Op Ar MIRROR-URL ...
.Nm
.Op Ar options
.Fl Z
.Ar URL ...
.Nm
.Op Ar options
.Fl i Ar FILE
.Nm
.Op Ar options
.Fl M Ar FILE.meta4
.Nm
.Cm queue
.Ar subcommand
.Op Ar options
.Nm
.Cm daemon
.Op Ar options
MDOC
)" -v environment="$(cat <<'MDOC'
.Sh ENVIRONMENT
.Bl -tag -width Ds
.It Ev http_proxy
The proxy for http:// URLs (lowercase only: HTTP_PROXY is ignored, as curl ignores it). None of the proxy variables is read when
.Fl -proxy
is given.
.It Ev https_proxy , Ev HTTPS_PROXY
The proxy for https:// URLs.
.It Ev all_proxy , Ev ALL_PROXY
The proxy for either scheme when its own variable is not set.
.It Ev no_proxy , Ev NO_PROXY
Hosts reached directly: comma-separated domain suffixes, IP addresses, CIDR ranges, or *;
.Fl -noproxy
replaces it.
.It Ev HOME
.Fl -netrc
reads
.Pa $HOME/.netrc ;
sessions keep their state in
.Pa $HOME/.local/state/haul
when neither HAUL_STATE_DIR nor XDG_STATE_HOME is set.
.It Ev HAUL_STATE_DIR
The directory of the sessions' queues, event logs and sockets
.Pf ( Nm Cm queue ,
.Nm Cm daemon ) .
.It Ev XDG_STATE_HOME
Sessions keep their state in
.Pa $XDG_STATE_HOME/haul
when HAUL_STATE_DIR is not set (an absolute path only).
.It Ev SSL_CERT_FILE , Ev SSL_CERT_DIR
Read by OpenSSL for the system's trusted certificates, used when neither
.Fl -cacert
nor
.Fl -capath
is given.
.El
.Pp
A command given to
.Nm Cm queue add Fl -on-complete
runs with HAUL_SESSION, HAUL_TASK_ID, HAUL_PATH, HAUL_BYTES, HAUL_DIGEST, HAUL_URL and HAUL_EVENT_SEQ set to the session, the task and the file it completed.
MDOC
)" '
/^\.Sh SYNOPSIS$/ { print; print synopsis; skipping = 1; next }
skipping && /^\.Sh / { skipping = 0 }
skipping { next }
/^\.Sh "EXIT STATUS"$/ { print environment }
{ print }
' .build/plugins/GenerateManual/outputs/haul/haul.1 > docs/haul.1

"$bin" --generate-completion-script bash > docs/completions/haul.bash
"$bin" --generate-completion-script zsh > docs/completions/_haul
"$bin" --generate-completion-script fish > docs/completions/haul.fish

echo "wrote docs/haul.1 and docs/completions/{haul.bash,_haul,haul.fish}"
