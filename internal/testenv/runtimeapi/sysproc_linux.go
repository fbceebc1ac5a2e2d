package runtimeapi

import "syscall"

// procAttr puts the function in its own process group (so Close can kill
// all of it) and has the kernel kill it if the test binary dies first.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
