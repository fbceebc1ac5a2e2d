//go:build unix && !linux

package runtimeapi

import "syscall"

// procAttr puts the function in its own process group, so Close can kill
// all of it.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
