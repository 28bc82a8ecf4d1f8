//go:build !linux

package pluginconfig

import (
	"errors"
	"syscall"
)

func sandboxAttr() (*syscall.SysProcAttr, error) {
	return nil, errors.New("a network sandbox needs Linux namespaces")
}

func isSandboxRefusal(error) bool { return false }
