#!/usr/bin/env bash
# make fuzz: runs every fuzz target for a bounded time and prints the CPU time each one used.
#   FUZZTIME=30s    time per target (Go's -fuzztime syntax: 30s, 2m, 1h; libFuzzer gets seconds)
#   FUZZ=regex      only targets whose name (package/Target or libfuzzer/target) matches
#   FUZZWORKERS=1   parallel fuzzing processes per target (Go -parallel, libFuzzer -workers)
#   FUZZLIST=1      only list the targets
# Go targets are every `func FuzzXxx(f *testing.F)` in a *_fuzz_test.go file; the libFuzzer
# targets are built by cgo/host/fuzz/Makefile (clang). New inputs go to out/fuzz/ (the Go
# fuzz cache and the libFuzzer working corpora), never into the repository: a failing input
# is reported with the command that reproduces it, and becomes a seed (regression test) when
# it is committed under testdata/fuzz/<Target>/ (Go) or cgo/host/fuzz/corpus/<target>/.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
FUZZTIME=${FUZZTIME:-30s}
FUZZ=${FUZZ:-.}
FUZZWORKERS=${FUZZWORKERS:-1}
OUT=$ROOT/out/fuzz
mkdir -p "$OUT/bin" "$OUT/cache" "$OUT/corpus" "$OUT/artifacts" "$OUT/logs"

seconds() {
  local t=$1
  case $t in
    *ms) echo 1 ;;
    *s) echo "${t%s}" ;;
    *m) echo $(( ${t%m} * 60 )) ;;
    *h) echo $(( ${t%h} * 3600 )) ;;
    *) echo "$t" ;;
  esac
}
SECS=$(seconds "$FUZZTIME")

# Go targets: "dir Target" lines.
go_targets() {
  grep -rl --include='*_fuzz_test.go' -E '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' \
    --exclude-dir=out --exclude-dir=istiodcheck . | sort | while read -r f; do
    d=$(dirname "$f")
    grep -oE '^func Fuzz[A-Za-z0-9_]*' "$f" | sed 's/^func //' | while read -r t; do echo "${d#./} $t"; done
  done
}
LIB_TARGETS=(http1_request http1_response http1_serialize bootstrap path_normalizer)

if [ "${FUZZLIST:-}" = 1 ]; then
  go_targets | awk '{print $1 "/" $2}'
  for t in "${LIB_TARGETS[@]}"; do echo "libfuzzer/$t"; done
  exit 0
fi

results=()
failed=0
declare -A built
TIMEFORMAT='%U %S'

# cpu_run LOG CMD...: runs CMD with output in LOG; sets RC and CPU (user+sys seconds of it and
# everything it started, bash's time keyword on the waited-for process tree).
cpu_run() {
  local log=$1
  shift
  local t
  t=$( { time "$@" >"$log" 2>&1; echo "rc=$?" >>"$log"; } 2>&1 )
  RC=$(tail -1 "$log" | sed 's/^rc=//')
  CPU=$(echo "$t" | awk '{printf "%.1f", $1 + $2}')
}

while read -r dir target; do
  name="$dir/$target"
  [[ $name =~ $FUZZ ]] || continue
  pkg=$(echo "$dir" | tr / _)
  bin=$OUT/bin/$pkg.test
  echo "== $name ($FUZZTIME)"
  # -fuzz at build time: the binary is built with coverage instrumentation (without it Go
  # fuzzes blind). One binary per package serves all its targets.
  if [ ! -x "$bin" ] || [ "${built[$pkg]:-}" != 1 ]; then
    if ! go test -c -fuzz . -o "$bin" "./$dir" >"$OUT/logs/$pkg.build.log" 2>&1; then
      cat "$OUT/logs/$pkg.build.log"
      results+=("$name|-|build failed")
      failed=1
      continue
    fi
    built[$pkg]=1
  fi
  log=$OUT/logs/$pkg.$target.log
  # Run from the package directory: testdata/fuzz/<Target> is its seed corpus.
  cpu_run "$log" bash -c "cd '$ROOT/$dir' && exec '$bin' -test.run '^\$' -test.fuzz '^$target\$' \
    -test.fuzztime '$FUZZTIME' -test.parallel '$FUZZWORKERS' -test.fuzzcachedir '$OUT/cache/$pkg.$target'"
  execs=$(grep -oE 'execs: [0-9]+' "$log" | tail -1 | awk '{print $2}')
  if [ "$RC" = 0 ]; then
    results+=("$name|$CPU|ok, ${execs:-?} execs")
  else
    failed=1
    grep -E 'Failing input|panic|--- FAIL|fuzz_test.go|\.go:[0-9]+:' "$log" | head -8
    results+=("$name|$CPU|FAILED (log: ${log#$ROOT/})")
  fi
done < <(go_targets)

want_lib=0
for t in "${LIB_TARGETS[@]}"; do [[ libfuzzer/$t =~ $FUZZ ]] && want_lib=1; done
if [ $want_lib = 1 ]; then
  if ! command -v clang++ >/dev/null 2>&1; then
    echo "clang++ not found: run make deps (build/install-deps.sh installs clang)" >&2
    results+=("libfuzzer/*|-|clang++ missing")
    failed=1
  elif ! make -s -C cgo/host/fuzz >"$OUT/logs/libfuzzer.build.log" 2>&1; then
    cat "$OUT/logs/libfuzzer.build.log"
    results+=("libfuzzer/*|-|build failed")
    failed=1
  else
    for t in "${LIB_TARGETS[@]}"; do
      name=libfuzzer/$t
      [[ $name =~ $FUZZ ]] || continue
      echo "== $name (${SECS}s)"
      corpus=$OUT/corpus/$t
      mkdir -p "$corpus"
      log=$OUT/logs/libfuzzer.$t.log
      # New inputs go to the first (working) directory; the repository's seeds are read only.
      # Both time limits: -max_total_time ends the run, -timeout fails one slow input.
      if [ "$FUZZWORKERS" -gt 1 ]; then par="-workers=$FUZZWORKERS -jobs=$FUZZWORKERS"; else par=""; fi
      cpu_run "$log" "$OUT/bin/fuzz_$t" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$OUT/artifacts/$t-" $par "$corpus" "cgo/host/fuzz/corpus/$t"
      execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | awk '{print $2}')
      if [ "$RC" = 0 ]; then
        results+=("$name|$CPU|ok, ${execs:-?} execs")
      else
        failed=1
        grep -E 'ERROR|SUMMARY|artifact|Test unit written' "$log" | head -8
        results+=("$name|$CPU|FAILED (log: ${log#$ROOT/})")
      fi
    done
  fi
fi

echo
printf '%-58s %10s  %s\n' "target" "CPU s" "result"
for r in "${results[@]}"; do
  IFS='|' read -r n c s <<<"$r"
  printf '%-58s %10s  %s\n' "$n" "$c" "$s"
done
exit $failed
