package motoserver

import "fmt"

// Start starts a moto_server on a free loopback port for a program that is
// not a test (make bench-peer), and returns its endpoint and the function
// that stops it.
func Start() (endpoint string, stop func() error, err error) {
	if endpoint, stop, err = start(); err != nil {
		return "", nil, fmt.Errorf("motoserver: %w", err)
	}
	return endpoint, stop, nil
}
