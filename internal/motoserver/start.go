package motoserver

import (
	"fmt"
	"os/exec"
)

// Start starts a moto_server on a free loopback port for a program that is
// not a test (make bench-peer), and returns its endpoint and the function
// that stops it.
func Start() (endpoint string, stop func() error, err error) {
	path, err := exec.LookPath(Command)
	if err != nil {
		return "", nil, fmt.Errorf("motoserver: %s not found in PATH: %w", Command, err)
	}
	for range 3 { // a free port can be taken before moto_server binds it
		var p *process
		if p, endpoint, err = launch(path); err == nil {
			return endpoint, p.stop, nil
		}
	}
	return "", nil, fmt.Errorf("motoserver: %w", err)
}
