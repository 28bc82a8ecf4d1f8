// Package logsink is what the log plugins of plugins/stream share: outputs
// (stdout, stderr, or a file rotated by size with lumberjack), one per path
// per process and shared by every config that writes there, and Queue, the
// bounded queue with its writer goroutine that keeps file and network I/O off
// Envoy's worker thread (a full queue drops lines and counts them; Close
// flushes what is queued).
package logsink

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"gopkg.in/natefinch/lumberjack.v2"

	"github.com/moeproxy/moe/shared/api"
)

// Rotation is the size-based rotation of a log file (lumberjack's settings).
type Rotation struct {
	// MaxSizeMB is the size in megabytes at which the file is rotated.
	MaxSizeMB int `json:"max_size_mb"`
	// MaxBackups is how many rotated files are kept (0 = all).
	MaxBackups int `json:"max_backups"`
	// MaxAgeDays removes rotated files older than this many days (0 = never).
	MaxAgeDays int `json:"max_age_days"`
	// Compress gzips rotated files.
	Compress bool `json:"compress"`
}

// DefaultRotation is 100 MB per file and 5 rotated files.
var DefaultRotation = Rotation{MaxSizeMB: 100, MaxBackups: 5}

// Validate checks the rotation settings of the config field named field.
func (r Rotation) Validate(field string) error {
	if err := api.CheckRange(field+".max_size_mb", r.MaxSizeMB, 1, 1<<20); err != nil {
		return err
	}
	if err := api.CheckRange(field+".max_backups", r.MaxBackups, 0, 10000); err != nil {
		return err
	}
	return api.CheckRange(field+".max_age_days", r.MaxAgeDays, 0, 36500)
}

// IsStd says whether path names a standard stream rather than a file.
func IsStd(path string) bool { return path == "stdout" || path == "stderr" }

// ValidatePath checks a destination: "stdout", "stderr" or an absolute file
// path.
func ValidatePath(field, path string) error {
	if IsStd(path) {
		return nil
	}
	if path == "" {
		return api.FieldErrorf(field, "is required (stdout, stderr or an absolute file path)")
	}
	if !filepath.IsAbs(path) {
		return api.FieldErrorf(field, "must be stdout, stderr or an absolute file path, got %q", path)
	}
	if filepath.Base(path) == "." || path[len(path)-1] == '/' {
		return api.FieldErrorf(field, "must name a file, got %q", path)
	}
	return nil
}

// Output is a shared destination. Writes are serialized; a file output
// rotates by size.
type Output struct {
	key  string
	mu   sync.Mutex
	w    io.Writer
	lj   *lumberjack.Logger
	rot  Rotation
	refs int
}

var (
	outputsMu sync.Mutex
	outputs   = map[string]*Output{}
)

// Acquire returns the output for path ("stdout", "stderr" or a file path),
// opening it if no config holds it yet; Release gives it back. A file is
// opened (and its directory created) here, so that a config naming a file
// that cannot be written is refused when it is loaded, not dropped silently
// later. When configs disagree on the rotation of one file, the last one
// acquired wins (the file is reopened with its settings).
func Acquire(path string, rot Rotation) (*Output, error) {
	key := path
	if !IsStd(path) {
		key = filepath.Clean(path)
	}
	outputsMu.Lock()
	defer outputsMu.Unlock()
	if o, ok := outputs[key]; ok {
		o.mu.Lock()
		if o.lj != nil && o.rot != rot {
			_ = o.lj.Close()
			o.lj = newLumberjack(key, rot)
			o.w, o.rot = o.lj, rot
		}
		o.refs++
		o.mu.Unlock()
		return o, nil
	}
	o := &Output{key: key, refs: 1, rot: rot}
	switch key {
	case "stdout":
		o.w = os.Stdout
	case "stderr":
		o.w = os.Stderr
	default:
		if err := os.MkdirAll(filepath.Dir(key), 0o755); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(key, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		_ = f.Close()
		o.lj = newLumberjack(key, rot)
		o.w = o.lj
	}
	outputs[key] = o
	return o, nil
}

// Check says what Acquire would refuse for path, with no side effect: nothing
// is opened, created or written (a config that is only checked, see
// api.ConfigEnv.CheckOnly). A standard stream is always fine. An existing
// file must be writable and not a directory; for a missing one, the closest
// existing ancestor must be a directory in which this process may create the
// rest (Acquire creates the missing directories).
func Check(path string) error {
	if IsStd(path) {
		return nil
	}
	key := filepath.Clean(path)
	st, err := os.Stat(key)
	switch {
	case err == nil && st.IsDir():
		return &fs.PathError{Op: "open", Path: key, Err: syscall.EISDIR}
	case err == nil:
		return canWrite("open", key, key)
	case !absent(err):
		return err
	}
	// Up from the file to the closest existing ancestor: one step per path
	// element, ending at the root of the absolute path.
	missing := key
	for dir := filepath.Dir(key); ; dir = filepath.Dir(dir) {
		st, err := os.Stat(dir)
		switch {
		case err == nil && !st.IsDir():
			return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		case err == nil:
			op := "mkdir"
			if missing == key {
				op = "open"
			}
			return canWrite(op, missing, dir)
		case !absent(err):
			return err
		case filepath.Dir(dir) == dir:
			return err
		}
		missing = dir
	}
}

// absent: a path that does not exist, or under one that is not a directory.
func absent(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

func newLumberjack(path string, rot Rotation) *lumberjack.Logger {
	return &lumberjack.Logger{
		Filename:   path,
		MaxSize:    rot.MaxSizeMB,
		MaxBackups: rot.MaxBackups,
		MaxAge:     rot.MaxAgeDays,
		Compress:   rot.Compress,
	}
}

// Write writes p (whole lines) in one call.
func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.w.Write(p)
}

// Release gives the output back; the last holder closes a file.
func (o *Output) Release() {
	outputsMu.Lock()
	defer outputsMu.Unlock()
	o.mu.Lock()
	defer o.mu.Unlock()
	o.refs--
	if o.refs > 0 {
		return
	}
	delete(outputs, o.key)
	if o.lj != nil {
		_ = o.lj.Close()
	}
}

// String names the output for logs.
func (o *Output) String() string { return o.key }

// openOutputs is for tests: how many outputs are held.
func openOutputs() int {
	outputsMu.Lock()
	defer outputsMu.Unlock()
	return len(outputs)
}
