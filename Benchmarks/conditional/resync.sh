#!/bin/bash
# Re-sync of N unchanged small files: haul -N vs curl --etag-compare (one process each, keep-alive).
set -euo pipefail
N=${N:-2000}
B=$(mktemp -d "${TMPDIR:-/tmp}/haul-resync.XXXXXX"); chmod 755 "$B"  # nginx workers may run as another user
HAUL=${HAUL:-$(cd "$(dirname "$0")/../.." && pwd)/.build/release/haul}
rm -rf "$B/srv" "$B/h" "$B/c" "$B/nginx"; mkdir -p "$B/srv" "$B/h" "$B/c/out" "$B/c/etag" "$B/nginx"
for i in $(seq 1 $N); do head -c 2000 /dev/urandom > "$B/srv/f$i.bin"; done
PORT=${PORT:-38591}
cat > "$B/nginx/nginx.conf" <<CONF
pid $B/nginx/nginx.pid; error_log $B/nginx/error.log; worker_processes 1; daemon on;
events { worker_connections 1024; }
http { access_log $B/nginx/access.log; keepalive_requests 100000;
  client_body_temp_path $B/nginx; proxy_temp_path $B/nginx; fastcgi_temp_path $B/nginx; uwsgi_temp_path $B/nginx; scgi_temp_path $B/nginx;
  server { listen 127.0.0.1:$PORT; root $B/srv; } }
CONF
nginx -c "$B/nginx/nginx.conf" -p "$B/nginx"
trap 'kill $(cat $B/nginx/nginx.pid) 2>/dev/null; rm -rf $B' EXIT
for i in $(seq 1 $N); do echo "http://127.0.0.1:$PORT/f$i.bin"; done > "$B/list.txt"
: > "$B/curl.cfg"
for i in $(seq 1 $N); do [ $i -gt 1 ] && echo next >> "$B/curl.cfg"; printf 'url = "http://127.0.0.1:%s/f%s.bin"\noutput = "%s/c/out/f%s.bin"\netag-save = "%s/c/etag/f%s"\netag-compare = "%s/c/etag/f%s"\n' $PORT $i "$B" $i "$B" $i "$B" $i >> "$B/curl.cfg"; done
"$HAUL" -q -N -i "$B/list.txt" -d "$B/h" ; curl -s -K "$B/curl.cfg"
for round in 1 2 3; do
  : > "$B/nginx/access.log"; kill -USR1 $(cat $B/nginx/nginx.pid)
  t0=$(date +%s.%N); "$HAUL" -q -N -i "$B/list.txt" -d "$B/h"; t1=$(date +%s.%N)
  h304=$(grep -c '" 304 ' "$B/nginx/access.log" || true)
  t2=$(date +%s.%N); curl -s -K "$B/curl.cfg"; t3=$(date +%s.%N)
  c304=$(( $(grep -c '" 304 ' "$B/nginx/access.log" || true) - h304 ))
  echo "round $round: haul $(echo "$t1-$t0" | bc) s ($h304 x 304), curl $(echo "$t3-$t2" | bc) s ($c304 x 304)"
done
