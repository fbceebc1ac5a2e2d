package main

import (
	"archive/zip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sqsonce/sqsonce/internal/testenv/rie"
)

// `sam local invoke -t cdk.out/Sqsonce.template.json SummariseFunction`
// finds the function by its logical id and its code through the asset
// metadata CDK writes; it applies an --env-vars file's variables only where
// the template declares them. TestSAMLocalInvoke checks the template has
// what SAM needs, and that every sam local invoke command in the READMEs
// and docs/deploy.md names that function and template, events that exist,
// and an env-vars file make invoke reads the same way whose variables SAM
// would apply.
func TestSAMLocalInvoke(t *testing.T) {
	s := synth(t)
	fn := functionOf(t, s.templates[defaultStack])
	for k, want := range map[string]string{"Runtime": "provided.al2023", "Handler": "bootstrap"} {
		if got := fn.Properties[k]; got != want {
			t.Errorf("%s %v, want %q", k, got, want)
		}
	}
	if got := fn.Metadata["aws:asset:property"]; got != "Code" {
		t.Errorf("aws:asset:property %v, want Code", got)
	}
	asset, _ := fn.Metadata["aws:asset:path"].(string)
	zr, err := zip.OpenReader(filepath.Join(s.outdir, asset))
	if err != nil {
		t.Fatalf("aws:asset:path %q: %v", asset, err)
	}
	defer zr.Close()
	found := false
	for _, f := range zr.File {
		if f.Name == "bootstrap" {
			found = true
			if f.Mode()&0o111 == 0 {
				t.Errorf("bootstrap in %s is not executable: %v", asset, f.Mode())
			}
		}
	}
	if !found {
		t.Errorf("%s holds no bootstrap at its root", asset)
	}

	declared := envOf(t, s.templates[defaultStack])
	commands := 0
	for _, readme := range []string{"README.md", "../README.md", "../docs/deploy.md"} {
		for _, cmd := range samCommands(t, readme) {
			commands++
			checkSAMCommand(t, readme, cmd, declared)
		}
	}
	if commands < 2 {
		t.Errorf("%d sam local invoke commands in the READMEs and docs/deploy.md, want one in infra's README and one in the manual", commands)
	}
}

// samCommands returns the sam local invoke commands of a README, with
// continued lines joined.
func samCommands(t *testing.T, readme string) []string {
	t.Helper()
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	for _, line := range strings.Split(text, "\n") {
		if i := strings.Index(line, "sam local invoke "); i >= 0 && !strings.Contains(line, "`sam local invoke") {
			cmds = append(cmds, strings.Join(strings.Fields(line[i:]), " "))
		}
	}
	return cmds
}

var samArgs = regexp.MustCompile(`^sam local invoke -t (\S+) (\S+)(.*)$`)

func checkSAMCommand(t *testing.T, readme, cmd string, declared map[string]any) {
	t.Helper()
	m := samArgs.FindStringSubmatch(cmd)
	if m == nil {
		t.Errorf("%s: %q is not `sam local invoke -t TEMPLATE FUNCTION ...`", readme, cmd)
		return
	}
	if want := "infra/cdk.out/" + defaultStack + ".template.json"; m[1] != want {
		t.Errorf("%s: template %s, want make synth's %s", readme, m[1], want)
	}
	if m[2] != functionLogicalID {
		t.Errorf("%s: function %s, want the logical id %s", readme, m[2], functionLogicalID)
	}
	// Every file gives the command from the repository's root.
	base := ".."
	rest := strings.Fields(m[3])
	for i := 0; i+1 < len(rest); i++ {
		path := filepath.Join(base, rest[i+1])
		switch rest[i] {
		case "-e":
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: event: %v", readme, err)
			}
		case "--env-vars":
			f, err := os.Open(path)
			if err != nil {
				t.Errorf("%s: env-vars: %v", readme, err)
				continue
			}
			vars, err := rie.ReadEnvVars(f, functionLogicalID)
			f.Close()
			if err != nil {
				t.Errorf("%s: %v", readme, err)
			}
			if len(vars) == 0 {
				t.Errorf("%s: %s sets nothing for %s", readme, path, functionLogicalID)
			}
			for k := range vars {
				if _, ok := declared[k]; !ok {
					t.Errorf("%s: %s sets %s, which the template does not declare: SAM would ignore it", readme, path, k)
				}
			}
		}
	}
}
