//go:build unix

package logsink

import (
	"io/fs"

	"golang.org/x/sys/unix"
)

// canWrite says whether this process (its effective ids) may write target: a
// file to append to, or a directory to create name in. The error names what
// Acquire's op on name would fail with.
func canWrite(op, name, target string) error {
	mode := uint32(unix.W_OK)
	if name != target {
		mode |= unix.X_OK
	}
	if err := unix.Faccessat(unix.AT_FDCWD, target, mode, unix.AT_EACCESS); err != nil {
		return &fs.PathError{Op: op, Path: name, Err: err}
	}
	return nil
}
