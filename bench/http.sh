#!/usr/bin/env bash
# HTTP load figures with wrk, on loopback only and for a bounded time:
# raw reads and creates on a live single node, raw reads through
# `pastenode mirror` of an export, and nginx serving the same bytes from a
# file as a baseline. Needs bin/ (make build), wrk and nginx.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
CONNS=${CONNS:-32}
BIN=$PWD/bin
for tool in wrk nginx curl; do
  command -v "$tool" >/dev/null || { echo "bench/http.sh needs $tool (apt-get install -y wrk nginx-light curl)" >&2; exit 1; }
done

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

wait_http() {
  for _ in $(seq 100); do curl -fs "$1" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "no answer from $1" >&2; exit 1
}

rps() { awk '/Requests\/sec/ {print $2}'; }

"$BIN/pastenode" --node-id bench --data-dir "$tmp/data" --http-addr 127.0.0.1:18480 \
  --raft-addr 127.0.0.1:18470 --gossip-addr 127.0.0.1:18460 --log-level warn 2>"$tmp/node.log" &
pids+=($!)
wait_http http://127.0.0.1:18480/readyz

head -c 768 /dev/urandom | base64 -w 0 | head -c 1024 > "$tmp/paste.txt"
id=$(curl -fs --data-binary @"$tmp/paste.txt" http://127.0.0.1:18480/ -o /dev/null -D - | tr -d "\r" | awk -F": " "tolower(\$1)==\"x-paste-id\" {print \$2}")

live=$(wrk -t2 -c"$CONNS" -d"$DURATION" "http://127.0.0.1:18480/raw/$id" | rps)

cat > "$tmp/post.lua" <<'LUA'
wrk.method = "POST"
wrk.body   = string.rep("x", 1024)
wrk.headers["Content-Type"] = "application/octet-stream"
LUA
creates=$(wrk -t2 -c"$CONNS" -d"$DURATION" -s "$tmp/post.lua" http://127.0.0.1:18480/ | rps)

"$BIN/pastectl" --addr http://127.0.0.1:18480 export --out "$tmp/export.cdb" >/dev/null
"$BIN/pastenode" mirror --cdb "$tmp/export.cdb" --http-addr 127.0.0.1:18481 --log-level warn 2>"$tmp/mirror.log" &
pids+=($!)
wait_http http://127.0.0.1:18481/healthz
mirror=$(wrk -t2 -c"$CONNS" -d"$DURATION" "http://127.0.0.1:18481/raw/$id" | rps)

mkdir -p "$tmp/www/raw"
cp "$tmp/paste.txt" "$tmp/www/raw/$id"
cat > "$tmp/nginx.conf" <<NGINX
worker_processes 2;
pid $tmp/nginx.pid;
error_log $tmp/nginx-error.log;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $tmp;
  proxy_temp_path $tmp;
  fastcgi_temp_path $tmp;
  uwsgi_temp_path $tmp;
  scgi_temp_path $tmp;
  server { listen 127.0.0.1:18482; root $tmp/www; default_type text/plain; }
}
NGINX
nginx -c "$tmp/nginx.conf" -g 'daemon off;' &
pids+=($!)
wait_http "http://127.0.0.1:18482/raw/$id"
static=$(wrk -t2 -c"$CONNS" -d"$DURATION" "http://127.0.0.1:18482/raw/$id" | rps)

printf '%-34s %12s\n' "wrk, $CONNS connections, $DURATION" "requests/s"
printf '%-34s %12s\n' "live node: GET /raw/{id} (1 KiB)" "$live"
printf '%-34s %12s\n' "live node: POST / (1 KiB creates)" "$creates"
printf '%-34s %12s\n' "mirror: GET /raw/{id}" "$mirror"
printf '%-34s %12s\n' "nginx: the same file" "$static"
