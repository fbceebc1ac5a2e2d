package chaos

import "syscall"

// procAttr puts a worker in its own process group (so it can be killed
// whole) and has the kernel kill it if the harness dies first.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
