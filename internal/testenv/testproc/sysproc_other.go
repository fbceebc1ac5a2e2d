//go:build unix && !linux

package testproc

import "syscall"

// procAttr puts the server in its own process group, so Close can kill all
// of it.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
