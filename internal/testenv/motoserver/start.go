package motoserver

import (
	"fmt"
	"os/exec"

	"github.com/sqsonce/sqsonce/internal/testenv/testproc"
)

// Start starts a moto_server on a free loopback port for a program that is
// not a test (make bench-peer), and returns its endpoint and the function
// that stops it.
func Start() (endpoint string, stop func() error, err error) {
	path, err := exec.LookPath(Command)
	if err != nil {
		return "", nil, fmt.Errorf("motoserver: %s not found in PATH: %w", Command, err)
	}
	p, endpoint, err := testproc.Launch(func() (*testproc.Process, string, error) { return launch(path) })
	if err != nil {
		return "", nil, fmt.Errorf("motoserver: %w", err)
	}
	return endpoint, func() error { return stopProcess(p) }, nil
}
