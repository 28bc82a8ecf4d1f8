#!/usr/bin/env bash
# vs-htnn.sh: moe's filter manager against HTNN's, equal work, in the same run.
#
#   cmd/moebench/vs-htnn.sh /path/to/htnn [rounds]     (make bench-htnn HTNN=/path/to/htnn)
#
# /path/to/htnn is a checkout of github.com/mosn/htnn (unmodified; only its own
# api/pkg/filtermanager benchmarks run). Each pair below does the same calls per request
# (shared/filtermanager/bench_test.go, BenchmarkEqualWork):
#
#   HTNN BenchmarkFilterManagerAllPhaseCanSyncRun  moe all-phases-sync/1
#   HTNN BenchmarkFilterManagerAllPhase            moe all-phases-async/1
#   HTNN BenchmarkFilterManagerRegular             moe regular-async/1
#
# Two figures per pair, in out/bench/htnn/report.md:
#   - ns/op: rounds (default 8) of BENCH_N (default 300000) iterations, the two test binaries
#     interleaved, GOMAXPROCS=1, medians. Shared machines are noisy: read the ratio, not the ns.
#   - instructions/op under callgrind (when valgrind is installed): the difference between a
#     run of ICOUNT_N2 and one of ICOUNT_N1 iterations (defaults 42000 and 2000) over the
#     difference in iterations, so start-up and the benchmark harness cancel out. Stable to
#     about ±3% (a GC cycle more or less in one of the two runs).
set -euo pipefail

htnn=${1:?usage: $0 /path/to/htnn [rounds]}
rounds=${2:-8}
n=${BENCH_N:-300000}
n1=${ICOUNT_N1:-2000}
n2=${ICOUNT_N2:-42000}
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/out/bench/htnn
mkdir -p "$out"
rm -f "$out"/*.txt

(cd "$htnn/api/pkg/filtermanager" && go test -c -o "$out/htnn.test" .)
(cd "$root/shared/filtermanager" && go test -c -o "$out/moe.test" .)

pairs=(
	"FilterManagerAllPhaseCanSyncRun all-phases-sync"
	"FilterManagerAllPhase all-phases-async"
	"FilterManagerRegular regular-async"
)
htnnBench() { echo "^Benchmark$1\$"; }
moeBench() { echo "^BenchmarkEqualWork\$/^$1\$/^1\$"; }

# Each binary runs in its own package directory, as `go test` would.
run() { # dir binary regex iterations
	(cd "$1" && GOMAXPROCS=1 "$2" -test.run '^$' -test.bench "$3" -test.benchtime "${4}x" -test.benchmem)
}

for r in $(seq "$rounds"); do
	for p in "${pairs[@]}"; do
		set -- $p
		run "$htnn/api/pkg/filtermanager" "$out/htnn.test" "$(htnnBench "$1")" "$n" | grep '^Benchmark' >>"$out/htnn-ns.txt"
		run "$root/shared/filtermanager" "$out/moe.test" "$(moeBench "$2")" "$n" | grep '^Benchmark' >>"$out/moe-ns.txt"
	done
done

icount() { # dir binary regex -> instructions per iteration
	local a b
	count() {
		(cd "$1" && GODEBUG=asyncpreemptoff=1 GOMAXPROCS=1 valgrind --tool=callgrind --fair-sched=yes \
			--callgrind-out-file=/dev/null "$2" -test.run '^$' -test.bench "$3" -test.benchtime "${4}x" 2>&1 |
			sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
	}
	a=$(count "$1" "$2" "$3" "$n1")
	b=$(count "$1" "$2" "$3" "$n2")
	echo $(((b - a) / (n2 - n1)))
}

if command -v valgrind >/dev/null; then
	for p in "${pairs[@]}"; do
		set -- $p
		echo "$1 $(icount "$htnn/api/pkg/filtermanager" "$out/htnn.test" "$(htnnBench "$1")")" >>"$out/htnn-instr.txt"
		echo "$2 $(icount "$root/shared/filtermanager" "$out/moe.test" "$(moeBench "$2")")" >>"$out/moe-instr.txt"
	done
fi

python3 - "$out" "$rounds" "$n" "${pairs[@]}" <<'EOF'
import os, statistics, subprocess, sys, time
out, rounds, n, pairs = sys.argv[1], sys.argv[2], sys.argv[3], [p.split() for p in sys.argv[4:]]

def medians(path):
    ns, allocs = {}, {}
    for line in open(path):
        f = line.split()
        name = f[0]  # no -N suffix: GOMAXPROCS=1
        ns.setdefault(name, []).append(float(f[2]))
        allocs[name] = f"{f[6]} alloc{'' if f[6] == '1' else 's'}, {f[4]} B" if len(f) > 6 else ""
    return {k: statistics.median(v) for k, v in ns.items()}, allocs

def instr(path):
    if not os.path.exists(path):
        return {}
    return {f[0]: int(f[1]) for f in (l.split() for l in open(path))}

h_ns, h_alloc = medians(f"{out}/htnn-ns.txt")
m_ns, m_alloc = medians(f"{out}/moe-ns.txt")
h_in, m_in = instr(f"{out}/htnn-instr.txt"), instr(f"{out}/moe-instr.txt")
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
lines = [f"moe {commit} against HTNN's filter manager, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: "
         f"{rounds} interleaved rounds of {n} iterations, GOMAXPROCS=1, medians.", "",
         "| one plugin | HTNN ns/op | moe ns/op | moe / HTNN | HTNN instr/op | moe instr/op | moe / HTNN |",
         "|---|--:|--:|--:|--:|--:|--:|"]
for h, m in pairs:
    hk, mk = f"Benchmark{h}", f"BenchmarkEqualWork/{m}/1"
    ri = f"{m_in[m] / h_in[h]:.2f}x" if h in h_in and m in m_in and h_in[h] else "-"
    lines.append(f"| {m} | {h_ns[hk]:.0f} ({h_alloc[hk]}) | {m_ns[mk]:.0f} ({m_alloc[mk]}) | {m_ns[mk] / h_ns[hk]:.2f}x "
                 f"| {h_in.get(h, '-')} | {m_in.get(m, '-')} | {ri} |")
open(f"{out}/report.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
