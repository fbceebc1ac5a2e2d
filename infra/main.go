package main

import (
	"fmt"
	"os"
)

func main() {
	app, err := newApp(nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	app.Synth(nil)
}
