//go:build !linux

package chaos

import "syscall"

// procAttr puts a worker in its own process group, so it can be killed
// whole.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
