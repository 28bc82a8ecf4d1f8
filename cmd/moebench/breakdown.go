package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The breakdown (-breakdown B1,B2): where the instructions of a config go, from the callgrind
// profiles a run kept, as exclusive (self) costs per request summed by category. Inclusive
// costs are no use here: Go switches stacks (systemstack, mcall, cgo callbacks), so callgrind's
// call tree of the Go side is wrong and its inclusive figures count some work several times.
// Self costs are exact; a category sums them over the functions it holds.

// callgrindNames undoes callgrind's name compression: "fn=(12) name" the first time a name
// is used, "fn=(12)" afterwards. Ids are per kind ("ob", "fl", "fn"); cob=, cfi=/cfl= and cfn=
// share the ids of ob=, fl= and fn=.
type callgrindNames map[string]map[string]string

// resolve returns the name that v (the text after "fn=" or the like) stands for, and
// remembers a newly numbered one.
func (n callgrindNames) resolve(kind, v string) string {
	if !strings.HasPrefix(v, "(") {
		return v
	}
	id, rest, ok := strings.Cut(v[1:], ")")
	if !ok {
		return v
	}
	if n[kind] == nil {
		n[kind] = map[string]string{}
	}
	if rest = strings.TrimSpace(rest); rest != "" {
		n[kind][id] = rest
		return rest
	}
	return n[kind][id]
}

// selfCosts returns the exclusive Ir of a callgrind profile per (object, file, function).
func selfCosts(r io.Reader) (map[costKey]int64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	names := callgrindNames{}
	name := names.resolve
	out := map[costKey]int64{}
	var cur costKey
	positions, irAt := 1, -1
	skipNext := false // the cost line after calls= is the call's inclusive cost
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		if c := line[0]; c >= '0' && c <= '9' || c == '+' || c == '-' || c == '*' {
			if skipNext {
				skipNext = false
				continue
			}
			if irAt < 0 {
				return nil, fmt.Errorf("cost line before the events: line")
			}
			f := strings.Fields(line)
			if i := positions + irAt; i < len(f) {
				n, err := strconv.ParseInt(f[i], 10, 64)
				if err != nil {
					return nil, fmt.Errorf("bad cost line %q: %w", line, err)
				}
				out[cur] += n
			}
			continue
		}
		key, val, _ := strings.Cut(line, "=")
		switch key {
		case "ob":
			cur.object = name("ob", val)
		case "fl":
			cur.file = name("fl", val)
		case "fi", "fe":
			name("fl", val) // inlined code: the cost stays with the function
		case "fn":
			cur.function = name("fn", val)
		case "cob":
			name("ob", val)
		case "cfi", "cfl":
			name("fl", val)
		case "cfn":
			name("fn", val)
		case "calls":
			skipNext = true
		default:
			switch {
			case strings.HasPrefix(line, "positions:"):
				positions = len(strings.Fields(strings.TrimPrefix(line, "positions:")))
			case strings.HasPrefix(line, "events:"):
				for i, e := range strings.Fields(strings.TrimPrefix(line, "events:")) {
					if e == "Ir" {
						irAt = i
					}
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if irAt < 0 {
		return nil, fmt.Errorf("no Ir in the events: line (not a callgrind profile?)")
	}
	return out, nil
}

type costKey struct{ object, file, function string }

var (
	gcFuncs    = regexp.MustCompile(`^runtime\.(gcDrain|gcBgMarkWorker|gcMark|gcStart|gcSweep|gcResetMarkState|gcFlush|gcWriteBarrier|gcAssist|gcParkAssist|gcScanFinalizer|markroot|scan|greyobject|findObject|tryDeferToSpanScan|typePointers|sweep|bgsweep|bgscavenge|deductSweepCredit|queuefinalizer|runFinalizers|wbBuf|bulkBarrier|shade|spanOf|(\(\*(mspan|gcWork|spanSet|sweepLocked|activeSweep|mheap|pageAlloc|pallocBits|scavengerState|scavengeIndex|spanInlineMarkBits|gcControllerState|gcCPULimiterState|mcentral)\)))`)
	allocFuncs = regexp.MustCompile(`^runtime\.(mallocgc|newobject|newarray|makeslice|makemap|growslice|memclrNoHeapPointers|memmove|typedmemmove|typedslicecopy|rawstring|rawbyteslice|slicebytetostring|stringtoslicebyte|concatstring|convT|heapSetType|nextFreeFast|roundupsize|publicationBarrier|\(\*mcache\)|\(\*mspan\)\.writeHeapBits)`)
	cgoFuncs   = regexp.MustCompile(`^(runtime\.(cgo|asmcgocall|entersyscall|exitsyscall|reentersyscall|cgocallback|callbackUpdateSystemStack|needm|dropm|lockOSThread|unlockOSThread|systemstack|mcall|save|casgstatus)|crosscall|_cgo|_cgoexp|x_cgo|gosave)`)
	mapFuncs   = regexp.MustCompile(`^(internal/runtime/maps\.|runtime\.(mapaccess|mapassign|mapdelete|mapiter|makemap|strhash|memhash|aeshash)|aeshashbody|memhash)`)
	goPkg      = regexp.MustCompile(`^((?:[\w.-]+/)*[\w.-]+?)\.`)
	recursion  = regexp.MustCompile(`'\d+$`)
)

// goObjects are the objects of a profile that hold Go code (libgolang.so, libconformance.so):
// those with a function of Go's runtime package.
func goObjects(costs map[costKey]int64) map[string]bool {
	gos := map[string]bool{}
	for k := range costs {
		if strings.HasPrefix(k.function, "runtime.") {
			gos[k.object] = true
		}
	}
	return gos
}

// category names where a function's self cost goes.
func category(k costKey, gos map[string]bool) string {
	fn := recursion.ReplaceAllString(k.function, "")
	obj := filepath.Base(k.object)
	switch {
	case strings.HasPrefix(obj, "moe-host"):
		return "moe-host: " + filepath.Base(k.file)
	case !gos[k.object]:
		return "lib: " + strings.SplitN(obj, ".so", 2)[0]
	}
	switch {
	case cgoFuncs.MatchString(fn):
		return "go: cgo crossing (runtime)"
	case allocFuncs.MatchString(fn):
		return "go: allocation (runtime)"
	case gcFuncs.MatchString(fn):
		return "go: GC (mark, sweep, finalizers)"
	case mapFuncs.MatchString(fn):
		return "go: maps (runtime)"
	case strings.HasPrefix(fn, "runtime.") || strings.HasPrefix(fn, "internal/runtime/") || strings.HasPrefix(fn, "runtime/"):
		return "go: runtime, other"
	}
	m := goPkg.FindStringSubmatch(fn)
	if m == nil {
		return "go: other"
	}
	pkg := m[1]
	switch {
	case strings.HasPrefix(pkg, "github.com/moeproxy/moe/"):
		return "go: moe " + strings.TrimPrefix(pkg, "github.com/moeproxy/moe/")
	case strings.HasPrefix(pkg, "github.com/envoyproxy/envoy/"):
		return "go: Envoy Go SDK"
	case strings.HasPrefix(pkg, "github.com/") || strings.HasPrefix(pkg, "golang.org/") || strings.HasPrefix(pkg, "google.golang.org/"):
		parts := strings.Split(pkg, "/")
		if len(parts) > 3 {
			parts = parts[:3]
		}
		return "go: " + strings.Join(parts, "/")
	}
	return "go: std " + pkg
}

// breakdown sums the self costs of each profile by category, per request.
func breakdown(profiles []string, requests []int) (cats []string, perReq []map[string]float64, totals []float64, err error) {
	seen := map[string]bool{}
	for i, p := range profiles {
		f, err := os.Open(p)
		if err != nil {
			return nil, nil, nil, err
		}
		costs, err := selfCosts(f)
		f.Close()
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", p, err)
		}
		m := map[string]float64{}
		var total float64
		gos := goObjects(costs)
		for k, v := range costs {
			c := category(k, gos)
			x := float64(v) / float64(requests[i])
			m[c] += x
			total += x
			if !seen[c] {
				seen[c] = true
				cats = append(cats, c)
			}
		}
		perReq = append(perReq, m)
		totals = append(totals, total)
	}
	last := len(perReq) - 1
	sort.Slice(cats, func(a, b int) bool {
		da := perReq[last][cats[a]] - perReq[0][cats[a]]
		db := perReq[last][cats[b]] - perReq[0][cats[b]]
		if da != db {
			return da > db
		}
		return cats[a] < cats[b]
	})
	return cats, perReq, totals, nil
}

// breakdownMarkdown renders the table: one column per config, the last minus the first, rows
// below 50 instructions a request in every column left out (their sum is the "rest" row).
func breakdownMarkdown(ids []string, cats []string, perReq []map[string]float64, totals []float64) string {
	var b strings.Builder
	b.WriteString("| self cost per request |")
	for _, id := range ids {
		b.WriteString(" " + id + " |")
	}
	fmt.Fprintf(&b, " %s − %s |\n|---|", ids[len(ids)-1], ids[0])
	for range ids {
		b.WriteString("--:|")
	}
	b.WriteString("--:|\n")
	last := len(ids) - 1
	rest := make([]float64, len(ids))
	for _, c := range cats {
		small := true
		for i := range ids {
			if perReq[i][c] >= 50 {
				small = false
			}
		}
		if small {
			for i := range ids {
				rest[i] += perReq[i][c]
			}
			continue
		}
		fmt.Fprintf(&b, "| %s |", c)
		for i := range ids {
			fmt.Fprintf(&b, " %.0f |", perReq[i][c])
		}
		fmt.Fprintf(&b, " %+.0f |\n", perReq[last][c]-perReq[0][c])
	}
	b.WriteString("| (rest, under 50 each) |")
	for i := range ids {
		fmt.Fprintf(&b, " %.0f |", rest[i])
	}
	fmt.Fprintf(&b, " %+.0f |\n| **total** |", rest[last]-rest[0])
	for i := range ids {
		fmt.Fprintf(&b, " **%.0f** |", totals[i])
	}
	fmt.Fprintf(&b, " **%+.0f** |\n", totals[last]-totals[0])
	return b.String()
}
