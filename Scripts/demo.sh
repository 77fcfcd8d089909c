#!/usr/bin/env bash
# The main job, end to end, on this machine: start a local nginx serving a 1 GiB file, download it with
# haul's live progress bar, interrupt it halfway with Ctrl-C (SIGINT), run the same command again to resume,
# and check the SHA-256. Installs what is missing (nginx, openssl) and builds haul in release mode.
#
# Usage: Scripts/demo.sh [SIZE_MIB]     (default 1024)
set -euo pipefail
cd "$(dirname "$0")/.."
size_mib=${1:-1024}

needed=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || needed+=(nginx)
command -v openssl >/dev/null 2>&1 || needed+=(openssl)
dpkg -s libssl-dev >/dev/null 2>&1 || needed+=(libssl-dev)
command -v pkg-config >/dev/null 2>&1 || needed+=(pkg-config)
# The release link of haul takes libstdc++ statically (Package.swift): make sure the archive is there.
case "$(gcc -print-file-name=libstdc++.a 2>/dev/null)" in
    /*) ;;
    *) needed+=("libstdc++-$(gcc -dumpversion 2>/dev/null | cut -d. -f1)-dev") ;;
esac
if [ ${#needed[@]} -gt 0 ]; then
    echo "== installing: ${needed[*]}"
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${needed[@]}" >/dev/null
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

echo "== building haul (release)"
swift build -c release --product haul 2>&1 | tail -1
HAUL="$(swift build -c release --show-bin-path)/haul"

work=$(mktemp -d /tmp/haul-demo.XXXXXX)
nginx_pid=""
cleanup() {
    [ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/www" "$work/out"

echo "== creating a ${size_mib} MiB file of random bytes"
head -c "$((size_mib << 20))" /dev/urandom > "$work/www/big.bin"
expected=$(sha256sum "$work/www/big.bin" | cut -d' ' -f1)

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
user_line=""; [ "$(id -u)" -eq 0 ] && user_line="user root;"
cat > "$work/nginx.conf" <<CONF
daemon off; worker_processes 1; $user_line
error_log $work/error.log; pid $work/nginx.pid;
events { worker_connections 256; }
http {
    access_log off; sendfile on; tcp_nopush on; keepalive_requests 10000;
    client_body_temp_path $work/tmp; proxy_temp_path $work/tmp; fastcgi_temp_path $work/tmp;
    uwsgi_temp_path $work/tmp; scgi_temp_path $work/tmp;
    server { listen 127.0.0.1:$port; root $work/www; }
}
CONF
mkdir -p "$work/tmp"
"$NGINX" -c "$work/nginx.conf" -p "$work" &
nginx_pid=$!
for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.05
done
url="http://127.0.0.1:$port/big.bin"
out="$work/out/big.bin"

# Throttled so that "halfway" lasts long enough to see; the resumed run goes at full speed.
rate=$(( size_mib * 1024 * 1024 / 8 ))
echo "== downloading $url with 8 connections at ${rate} B/s; Ctrl-C will be sent after 4 s"
set +e
"$HAUL" -c 8 --limit-rate "$rate" -o "$out" "$url" &
haul_pid=$!
sleep 4
kill -INT "$haul_pid"
wait "$haul_pid"
status=$?
set -e
echo "== haul exited with $status (130 = interrupted, progress saved); on disk: $(ls "$work/out" | tr '\n' ' ')"
[ "$status" -eq 130 ] || { echo "expected exit status 130 after Ctrl-C" >&2; exit 1; }

echo "== running the same command again (no flag needed): it resumes from the journal"
"$HAUL" -c 8 -o "$out" "$url"

actual=$(sha256sum "$out" | cut -d' ' -f1)
echo "== SHA-256 expected $expected"
echo "== SHA-256 actual   $actual"
[ "$actual" = "$expected" ] || { echo "MISMATCH" >&2; exit 1; }
echo "== OK: interrupted, resumed and verified"
