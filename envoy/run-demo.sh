#!/usr/bin/env bash
# `make run`: the demo upstream on 127.0.0.1:8080 and moe-host with envoy/envoy.yaml on
# 127.0.0.1:10000 (admin on 127.0.0.1:9901). Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."

out/echo-upstream -addr 127.0.0.1:8080 &
upstream=$!
out/moe-host -c envoy/envoy.yaml --concurrency 2 -l info &
host=$!
trap 'kill -TERM $host $upstream 2>/dev/null; wait' INT TERM EXIT

for _ in $(seq 1 50); do
  curl -fsS -o /dev/null http://127.0.0.1:9901/ready 2>/dev/null && break
  sleep 0.1
done

cat <<'MSG'

moe demo is serving on http://127.0.0.1:10000 (admin: http://127.0.0.1:9901)
Try:
  curl -i http://127.0.0.1:10000/public/hello                         # no key needed: 200 from the echo upstream
  curl -i http://127.0.0.1:10000/hello                                # 401: missing API key
  curl -i -H 'x-api-key: bob-demo-key' http://127.0.0.1:10000/hello   # 200, upstream sees x-consumer-name: bob
  curl -i -X POST -H 'x-api-key: bob-demo-key' http://127.0.0.1:10000/hello    # 403: bob may only read
  curl -i -X POST -H 'x-api-key: alice-demo-key' http://127.0.0.1:10000/hello  # 200: alice is an admin
  for i in $(seq 60); do curl -s -o /dev/null -w '%{http_code} ' http://127.0.0.1:10000/public/; done; echo  # 429s after the burst
  curl -s http://127.0.0.1:9901/stats | grep -E 'moe|golang'
  curl -s http://127.0.0.1:9901/stats/prometheus | head
Press Ctrl-C to stop.
MSG
wait $host
