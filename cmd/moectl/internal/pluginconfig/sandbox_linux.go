package pluginconfig

import (
	"errors"
	"os"
	"syscall"
)

// sandboxAttr starts the child in new user and network namespaces: its only network device
// is a loopback that is down, so nothing it runs can connect anywhere (not even to this
// machine), while files stay readable as by the caller. The user namespace maps the
// caller's own uid and gid, so no privilege is gained.
func sandboxAttr() (*syscall.SysProcAttr, error) {
	uid, gid := os.Getuid(), os.Getgid()
	return &syscall.SysProcAttr{
		Cloneflags:                 syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: false,
		Pdeathsig:                  syscall.SIGKILL,
	}, nil
}

// isSandboxRefusal: the kernel refused the namespaces (unprivileged user namespaces
// disabled, e.g. by kernel.unprivileged_userns_clone=0 or an AppArmor restriction).
func isSandboxRefusal(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EACCES)
}
