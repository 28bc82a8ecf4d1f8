package main

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// Machine is where and when the figures were taken.
type Machine struct {
	Date      string `json:"date"`
	NProc     int    `json:"nproc"`
	CPUModel  string `json:"cpu_model"`
	Kernel    string `json:"kernel"`
	GoVersion string `json:"go_version"`
	Commit    string `json:"commit"`
	Valgrind  string `json:"valgrind"`
	Wrk       string `json:"wrk"`
}

func machine(start time.Time) Machine {
	return Machine{
		Date:      start.UTC().Format("2006-01-02 15:04 UTC"),
		NProc:     runtime.NumCPU(), // the CPUs this process may use, as nproc counts them
		CPUModel:  cpuModel(),
		Kernel:    strings.TrimSpace(readFile("/proc/sys/kernel/osrelease")),
		GoVersion: runtime.Version(),
		Commit:    commit(),
		Valgrind:  strings.TrimPrefix(firstLine(run("valgrind", "--version")), "valgrind-"),
		Wrk:       wrkVersion(),
	}
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// commit is the short HEAD, "+dirty" when the work tree has changes.
func commit() string {
	c := strings.TrimSpace(run("git", "rev-parse", "--short=12", "HEAD"))
	if c == "" {
		return "unknown"
	}
	if strings.TrimSpace(run("git", "status", "--porcelain", "--untracked-files=no")) != "" {
		c += "+dirty"
	}
	return c
}

// wrkVersion is "4.1.0" from wrk's usage text ("wrk 4.1.0 [epoll] Copyright ...").
func wrkVersion() string {
	f := strings.Fields(firstLine(run("wrk", "--version")))
	if len(f) >= 2 && f[0] == "wrk" {
		return f[1]
	}
	return "unknown"
}

// run returns a command's combined output ("" when it cannot run).
func run(name string, args ...string) string {
	out, _ := exec.Command(name, args...).CombinedOutput()
	return string(out)
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(l)
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}
