package pluginconfig

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// ChildArg, as the first argument, makes a binary linking this package the sandboxed
// checker: it reads targets as JSON on stdin and writes their problems as JSON on stdout.
// moectl's main and the test binaries that check plugin configs call MaybeRunChild first.
const ChildArg = "__moectl-plugin-init-check"

// childTimeout bounds the whole child run (Init of a config is expected to take
// milliseconds; a hung one must not hang moectl).
const childTimeout = 60 * time.Second

// MaybeRunChild runs the child and exits when the process was started as one.
func MaybeRunChild() {
	if len(os.Args) > 1 && os.Args[1] == ChildArg {
		os.Exit(runChild(os.Stdin, os.Stdout))
	}
}

type childResult struct {
	Problems [][]Problem `json:"problems"`
}

func runChild(in io.Reader, out io.Writer) int {
	var targets []Target
	if err := json.NewDecoder(in).Decode(&targets); err != nil {
		fmt.Fprintf(os.Stderr, "moectl plugin check: read targets: %v\n", err)
		return 2
	}
	res := childResult{Problems: make([][]Problem, len(targets))}
	for i := range targets {
		tg := targets[i]
		tg.Config = &anypb.Any{}
		if err := proto.Unmarshal(tg.ConfigBytes, tg.Config); err != nil {
			res.Problems[i] = []Problem{{Reason: err.Error(), Message: err.Error()}}
			continue
		}
		res.Problems[i] = Check(tg, true)
	}
	if err := json.NewEncoder(out).Encode(res); err != nil {
		return 2
	}
	return 0
}

// ErrNoSandbox: the full check needs a process without network, which this machine does
// not allow.
var ErrNoSandbox = errors.New("no network sandbox")

// RunFull checks every target with the full parse (Init included) in a child process that
// has no network: a new network namespace, entered as an unprivileged user namespace
// (Linux). exe is the binary to start (moectl itself, or a test binary that calls
// MaybeRunChild). An error means nothing was checked (the caller falls back to Check with
// full=false and says so).
func RunFull(exe string, targets []Target) ([][]Problem, error) {
	if len(targets) == 0 {
		return nil, nil
	}
	attr, err := sandboxAttr()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoSandbox, err)
	}
	for i := range targets {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(targets[i].Config)
		if err != nil {
			return nil, err
		}
		targets[i].ConfigBytes = b
	}
	in, err := json.Marshal(targets)
	if err != nil {
		return nil, err
	}
	home, err := os.MkdirTemp("", "moectl-check-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(home)
	ctx, cancel := context.WithTimeout(context.Background(), childTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, ChildArg)
	cmd.SysProcAttr = attr
	// The working directory stays the caller's (relative jwks.file paths, like Envoy's);
	// anything a library writes under $HOME or $TMPDIR goes to a directory removed afterwards.
	cmd.Env = []string{"HOME=" + home, "TMPDIR=" + home, "PATH=/usr/bin:/bin"}
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 2000 {
			msg = msg[len(msg)-2000:]
		}
		if isSandboxRefusal(err) {
			return nil, fmt.Errorf("%w: %v", ErrNoSandbox, err)
		}
		return nil, fmt.Errorf("plugin check process: %v: %s", err, msg)
	}
	var res childResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil || len(res.Problems) != len(targets) {
		return nil, fmt.Errorf("plugin check process: unreadable result (%v)", err)
	}
	return res.Problems, nil
}
