#!/usr/bin/env bash
# Serves an Envoy bootstrap through moe-host, with what it needs, until Ctrl-C:
#   make run                   -> envoy/serve.sh envoy/envoy.yaml            (the demo)
#   make example NAME=key-auth -> envoy/serve.sh envoy/examples/key-auth.yaml
#
# Every bootstrap here has its listener on 127.0.0.1:10000, admin on 127.0.0.1:9901 and its
# upstream on 127.0.0.1:8080, which this script serves with out/echo-upstream. A bootstrap names
# anything else it needs in its leading comment, one line each:
#   # needs: redis-server 127.0.0.1:6379
#   # needs: echo-upstream 127.0.0.1:9002
# and lists the requests to try after a "# Try:" line; they are printed once it serves.
#
# It fails (exit 1, reason on stderr) when a port it needs is taken or a process dies;
# Ctrl-C stops everything and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."

file=${1:?usage: envoy/serve.sh <bootstrap.yaml>}
[ -f "$file" ] || { echo "serve: no such bootstrap: $file" >&2; exit 1; }
for bin in out/moe-host out/echo-upstream out/libgolang.so out/moectl; do
  [ -e "$bin" ] || { echo "serve: $bin is missing: run make build" >&2; exit 1; }
done

# port_taken HOST PORT: something already accepts connections there.
port_taken() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

need_port() {
  if port_taken "$1" "$2"; then
    echo "serve: $1:$2 is already in use (another make run or example?); stop it first" >&2
    exit 1
  fi
}

pids=()
names=()
start() { # NAME COMMAND...
  local name=$1
  shift
  "$@" &
  pids+=($!)
  names+=("$name")
}

stopping=0
stop_all() {
  stopping=1
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap 'stop_all; exit 0' INT TERM
trap 'stop_all' EXIT

need_port 127.0.0.1 10000
need_port 127.0.0.1 9901
need_port 127.0.0.1 8080
start "echo-upstream 127.0.0.1:8080" out/echo-upstream -addr 127.0.0.1:8080 -name upstream

while read -r tool addr; do
  host=${addr%:*}
  port=${addr##*:}
  need_port "$host" "$port"
  case $tool in
    redis-server)
      command -v redis-server >/dev/null || { echo "serve: $file needs redis-server (apt-get install redis-server, or make deps)" >&2; exit 1; }
      start "redis-server $addr" redis-server --bind "$host" --port "$port" --save '' --appendonly no --loglevel warning
      ;;
    echo-upstream)
      start "echo-upstream $addr" out/echo-upstream -addr "$addr" -name "echo-$port"
      ;;
    *)
      echo "serve: $file needs $tool, which this script cannot start" >&2
      exit 1
      ;;
  esac
done < <(sed -n 's/^# needs: *//p' "$file")

start "moe-host -c $file" out/moe-host -c "$file" --concurrency 2 -l info

ready=0
for _ in $(seq 1 100); do
  if curl -fsS -o /dev/null http://127.0.0.1:9901/ready 2>/dev/null; then
    ready=1
    break
  fi
  for i in "${!pids[@]}"; do
    if ! kill -0 "${pids[$i]}" 2>/dev/null; then
      echo "serve: ${names[$i]} exited during start" >&2
      exit 1
    fi
  done
  sleep 0.1
done
[ "$ready" = 1 ] || { echo "serve: moe-host did not become ready within 10s" >&2; exit 1; }

echo
echo "serving $file on http://127.0.0.1:10000 (admin: http://127.0.0.1:9901)"
sed -n '/^# Try:/,/^[^#]/{/^#/p}' "$file" | sed 's/^# \{0,1\}//'
echo "Press Ctrl-C to stop."

# Any process ending on its own is a failure (Ctrl-C is handled by the trap above).
set +e
wait -n "${pids[@]}"
status=$?
set -e
if [ "$stopping" = 0 ]; then
  for i in "${!pids[@]}"; do
    if ! kill -0 "${pids[$i]}" 2>/dev/null; then
      echo "serve: ${names[$i]} exited (status $status)" >&2
    fi
  done
  exit 1
fi
