package main

import (
	"io"
	"os"
	"strings"
	"testing"
)

// TestREADMECommands parses every command line the manual's Operating
// page (docs/operating.md) shows, with the environment its export lines
// set: each flag exists and each command's flags are complete.
func TestREADMECommands(t *testing.T) {
	b, err := os.ReadFile("../../docs/operating.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(b)
	env := map[string]string{}
	var lines [][]string
	inCode := false
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
			continue
		}
		if !inCode {
			continue
		}
		words, err := shellWords(line)
		if err != nil {
			t.Fatalf("docs/operating.md: %q: %v", line, err)
		}
		switch {
		case len(words) > 1 && words[0] == "export":
			for _, kv := range words[1:] {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
		case len(words) > 0 && words[0] == "sqsonce-ops":
			lines = append(lines, words[1:])
		}
	}
	if len(lines) < 10 {
		t.Fatalf("docs/operating.md shows %d command lines, want the examples of every command", len(lines))
	}
	seen := map[string]bool{}
	for _, args := range lines {
		if _, err := parse(args, func(k string) string { return env[k] }, io.Discard); err != nil {
			t.Errorf("docs/operating.md: sqsonce-ops %s: %v", strings.Join(args, " "), err)
		}
		seen[args[0]] = true
	}
	for _, c := range commands {
		if !seen[c.name] {
			t.Errorf("docs/operating.md shows no example of %s", c.name)
		}
	}
}

// shellWords splits a line as sh does for the manual's simple commands:
// single and double quotes, and a comment from an unquoted #.
func shellWords(line string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		in    bool // a word is open
		quote rune
	)
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				words, in = append(words, cur.String()), false
				cur.Reset()
			}
		case r == '#' && !in && (i == 0 || line[i-1] == ' '):
			return words, nil
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, io.ErrUnexpectedEOF
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}
