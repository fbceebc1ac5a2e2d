package history

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Write prints v: what the history held, a table of the properties (cases
// checked, violations), the explained double runs by cause, then for each
// violated property its first shown violations with their events (#place
// in the history, process:sequence number, the line), and last a verdict
// line. shown < 1 shows one.
func (v *Verdict) Write(w io.Writer, shown int) error {
	shown = max(shown, 1)
	b := &strings.Builder{}
	h := v.Header
	fmt.Fprintf(b, "run %q: seed %d, profile %q; %d processes", h.Run, h.Seed, h.Profile, v.Procs)
	if v.Truncated > 0 {
		fmt.Fprintf(b, " (%d cut short by a kill)", v.Truncated)
	}
	fmt.Fprintf(b, ", %d events\n", v.Events)
	fmt.Fprintf(b, "keys %d, deliveries %d, runs %d (completed %d), acknowledged %d, quarantines %d, faults %d\n",
		v.Keys, v.Deliveries, v.Runs, v.CompletedRuns, v.Acks, v.Quarantines, v.Faults)
	if h.Replay != "" {
		fmt.Fprintf(b, "replay: %s\n", h.Replay)
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "property\tchecked\tviolations\twhat it requires")
	for _, r := range v.Results {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", r.Property, r.Checked, len(r.Violations), r.Doc)
	}
	tw.Flush()
	var causes []string
	total := 0
	for _, c := range Causes {
		causes = append(causes, fmt.Sprintf("%s %d", c, v.Explained[c]))
		total += v.Explained[c]
	}
	fmt.Fprintf(b, "runs not stored, explained: %d (%s)\n", total, strings.Join(causes, ", "))
	for _, r := range v.Results {
		if len(r.Violations) == 0 {
			continue
		}
		fmt.Fprintf(b, "\n%s: %s", r.Property, violations(len(r.Violations)))
		if len(r.Violations) > shown {
			fmt.Fprintf(b, "; the first %d", shown)
		}
		b.WriteString("\n")
		for _, x := range r.Violations[:min(shown, len(r.Violations))] {
			fmt.Fprintf(b, "  key %s: %s\n", x.Key, x.Msg)
			for _, e := range x.Events {
				line, err := json.Marshal(e)
				if err != nil {
					return fmt.Errorf("history: %w", err)
				}
				fmt.Fprintf(b, "    #%d %s:%d %s\n", e.Pos, e.Proc, e.Seq, line)
			}
		}
	}
	if v.Failed() {
		fmt.Fprintf(b, "\nverdict: FAIL, %s\n", violations(v.Violations()))
	} else {
		fmt.Fprintf(b, "\nverdict: PASS, %d properties held\n", len(v.Results))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func violations(n int) string {
	if n == 1 {
		return "1 violation"
	}
	return fmt.Sprintf("%d violations", n)
}
