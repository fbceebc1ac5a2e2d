package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// stdin is what --body - and --result-file - read.
var stdin io.Reader = os.Stdin

// inspectCmd shows one record.
type inspectCmd struct{ sel selector }

func (c *inspectCmd) flags(fs *flag.FlagSet) { c.sel.flags(fs) }
func (c *inspectCmd) check() error           { return c.sel.check() }
func (c *inspectCmd) needsSQS() bool         { return false }

func (c *inspectCmd) exec(ctx context.Context, o *ops) int {
	id, err := c.sel.resolve(o, stdin)
	if err != nil {
		return refuse(o, "no record id: %v", err)
	}
	rec, err := o.inspect.Inspect(ctx, id)
	if err != nil && !errors.Is(err, driver.ErrNotFound) && rec.ID == "" {
		return failed(o, "inspect: %v", err)
	}
	at := now()
	v := view(o, id, rec, err, at)
	if o.g.json {
		printJSON(o.stdout, v)
	} else {
		printRecord(o.stdout, v, at)
	}
	if v.Problem != "" {
		return refuse(o, "the record cannot be read with this configuration (--namespace, --format, --data-format): %s", v.Problem)
	}
	return exitOK
}

// listCmd lists stuck and quarantined records.
type listCmd struct{ all bool }

func (c *listCmd) flags(fs *flag.FlagSet) {
	fs.BoolVar(&c.all, "all", false, "list every INPROGRESS record, live leases too")
}
func (c *listCmd) check() error   { return nil }
func (c *listCmd) needsSQS() bool { return false }

// listing is list's output.
type listing struct {
	Namespace   string       `json:"namespace"`
	Records     []recordView `json:"records"`
	LeaseLapsed int          `json:"lease_lapsed"`
	Quarantined int          `json:"quarantined"`
	InProgress  int          `json:"in_progress"`
	Unreadable  int          `json:"unreadable"`
	// Own counts the namespace's records of every status; OtherRecords
	// and OtherNamespaces the table's records of other namespaces, and
	// how many namespaces they are in.
	Own             int `json:"own"`
	OtherRecords    int `json:"other_records"`
	OtherNamespaces int `json:"other_namespaces"`
}

func (c *listCmd) exec(ctx context.Context, o *ops) int {
	at := now()
	out := listing{Namespace: o.g.namespace, Records: []recordView{}}
	// Every record, so that a namespace that holds none on a table that
	// holds others' reads as a likely wrong --namespace, not as all clear.
	others := map[string]bool{}
	for rec, err := range o.inspect.List(ctx, driver.ListOptions{}) {
		if err != nil && rec.ID == "" {
			return failed(o, "list: %v", err)
		}
		if namespaceProblem(o, rec.ID) != "" {
			ns, _, _ := strings.Cut(rec.ID, "#")
			others[ns] = true
			out.OtherRecords++
			continue
		}
		out.Own++
		if rec.Status != driver.StatusInProgress {
			continue
		}
		v := view(o, rec.ID, rec, err, at)
		switch {
		case v.Problem != "":
			out.Unreadable++
		case v.State == stateLeaseLapsed:
			out.LeaseLapsed++
		case v.State == stateQuarantined:
			out.Quarantined++
		case v.State == stateInProgress && c.all:
			out.InProgress++
		default:
			continue
		}
		out.Records = append(out.Records, v)
	}
	out.OtherNamespaces = len(others)
	if o.g.json {
		printJSON(o.stdout, out)
	} else {
		fmt.Fprintf(o.stdout, "namespace %s: %d past their lease, %d quarantined", out.Namespace, out.LeaseLapsed, out.Quarantined)
		if c.all {
			fmt.Fprintf(o.stdout, ", %d in progress", out.InProgress)
		}
		fmt.Fprintf(o.stdout, ", %d unreadable\n", out.Unreadable)
		if len(out.Records) > 0 {
			tw := tabwriter.NewWriter(o.stdout, 2, 8, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTATE\tLEASE UNTIL\tOWNER\tQUARANTINED")
			for _, v := range out.Records {
				state := v.State
				if v.Problem != "" {
					state = "unreadable"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", v.ID, state, stamp(v.LeaseUntil), orDash(v.Owner), stamp(v.Quarantined))
			}
			_ = tw.Flush()
		}
	}
	if out.Own == 0 && out.OtherRecords > 0 {
		return refuse(o, "no record of namespace %s; the table holds %d record(s) of %d other namespace(s): is --namespace ($%s) the function's?",
			out.Namespace, out.OtherRecords, out.OtherNamespaces, envNamespace)
	}
	if out.OtherRecords > 0 && !o.g.json {
		fmt.Fprintf(o.stdout, "the table also holds %d record(s) of %d other namespace(s)\n", out.OtherRecords, out.OtherNamespaces)
	}
	if out.Unreadable > 0 {
		return refuse(o, "%d record(s) cannot be read with this configuration (--format, --data-format): inspect them with --id", out.Unreadable)
	}
	return exitOK
}

// writeCmd is what release and resolve share: the record, its owner as
// inspect showed it, and --dry-run.
type writeCmd struct {
	sel    selector
	owner  ownerFlag
	dryRun bool
	force  bool
}

// noOwner is how inspect and list show a record without an owner, and
// how --owner names one.
const noOwner = "-"

// ownerFlag is --owner: the owner inspect showed, "-" (or "") for none.
// It records whether it was given, so that --owner "" names a record
// without an owner rather than no flag.
type ownerFlag struct {
	owner string
	set   bool
}

func (f *ownerFlag) String() string { return f.owner }
func (f *ownerFlag) Set(v string) error {
	f.owner, f.set = v, true
	if v == noOwner {
		f.owner = ""
	}
	return nil
}

func (c *writeCmd) flags(fs *flag.FlagSet) {
	c.sel.flags(fs)
	fs.Var(&c.owner, "owner", "the record's owner, as inspect showed it (- for a record without one, as Powertools writes them): a record whose owner changed since is left alone")
	fs.BoolVar(&c.dryRun, "dry-run", false, "print what would be done, write nothing")
	fs.BoolVar(&c.force, "force", false, "act on a record whose lease is live (a worker may still be running its operation)")
}

func (c *writeCmd) check() error {
	err := c.sel.check()
	if !c.owner.set {
		err = errors.Join(err, errors.New("--owner is required: the record's owner as inspect shows it (- for none)"))
	}
	return err
}

func (c *writeCmd) needsSQS() bool { return false }

// target reads the record and checks that it is one to write: readable
// with the configuration, INPROGRESS, owned by --owner, its lease lapsed
// or quarantined (or --force). It returns the record, or the exit code.
func (c *writeCmd) target(ctx context.Context, o *ops, verb string) (string, driver.StoredRecord, int) {
	id, err := c.sel.resolve(o, stdin)
	if err != nil {
		return "", driver.StoredRecord{}, refuse(o, "no record id: %v", err)
	}
	if p := namespaceProblem(o, id); p != "" {
		return "", driver.StoredRecord{}, refuse(o, "%s", p)
	}
	rec, err := o.inspect.Inspect(ctx, id)
	switch {
	case errors.Is(err, driver.ErrNotFound):
		return "", rec, failed(o, "%s %s: no record (released, expired and deleted, or never written)", verb, id)
	case err != nil && rec.ID == "":
		return "", rec, failed(o, "%s %s: %v", verb, id, err)
	case err != nil:
		return "", rec, refuse(o, "%s %s: the record cannot be read with this configuration: %v", verb, id, err)
	}
	switch st := state(rec.Record, now()); {
	case rec.Status != driver.StatusInProgress:
		return "", rec, failed(o, "%s %s: the record is %s (%s), not INPROGRESS: nothing to %s", verb, id, rec.Status, st, verb)
	case rec.Owner != c.owner.owner:
		return "", rec, failed(o, "%s %s: the owner does not match: the record's owner is %s, --owner is %s; copy the owner inspect shows "+
			"(it is another if a worker claimed the record since you looked)", verb, id, orDash(rec.Owner), orDash(c.owner.owner))
	case st == stateExpired:
		return "", rec, failed(o, "%s %s: the record expired at %s: every store treats it as absent and the next delivery runs the operation; nothing to %s",
			verb, id, rec.ExpiresAt.UTC().Format(time.RFC3339), verb)
	case st == stateInProgress && !c.force:
		return "", rec, failed(o, "%s %s: its lease is live until %s: a worker may be running the operation; wait for the lease, or --force",
			verb, id, rec.LeaseEnd().UTC().Format(time.RFC3339))
	}
	return id, rec, exitOK
}

// writeResult is release's and resolve's output.
type writeResult struct {
	Action string      `json:"action"`
	DryRun bool        `json:"dry_run"`
	Before recordView  `json:"before"`
	After  *recordView `json:"after,omitempty"`
}

func (c *writeCmd) report(ctx context.Context, o *ops, action, id string, before driver.StoredRecord) int {
	at := now()
	out := writeResult{Action: action, DryRun: c.dryRun, Before: view(o, id, before, nil, at)}
	if !c.dryRun {
		rec, err := o.inspect.Inspect(ctx, id)
		if err == nil || errors.Is(err, driver.ErrNotFound) {
			v := view(o, id, rec, err, now())
			out.After = &v
		}
	}
	code := exitOK
	if out.After != nil && out.After.DataOmitted {
		// The stores refuse such a completion; should one be written
		// anyway, it is reported as the failure it is.
		code = failed(o, "%s %s: the record was completed WITHOUT the result: later deliveries replay an empty result", action, id)
	}
	if o.g.json {
		printJSON(o.stdout, out)
		return code
	}
	if c.dryRun {
		fmt.Fprintf(o.stdout, "dry run: would %s %s (state %s, owner %s); nothing written\n", action, id, out.Before.State, orDash(before.Owner))
		return code
	}
	fmt.Fprintf(o.stdout, "%s %s\n", pastTense(action), id)
	if out.After != nil {
		printRecord(o.stdout, *out.After, now())
	}
	return code
}

// writeFailed reports a release's or resolve's write that failed: refused
// by its fence (the record changed since it was read), or an error.
func writeFailed(o *ops, verb, id string, err error) int {
	if errors.Is(err, driver.ErrLeaseLost) {
		return failed(o, "%s %s: refused, nothing written: %v; inspect it again", verb, id, err)
	}
	return failed(o, "%s %s: %v", verb, id, err)
}

func pastTense(action string) string {
	if strings.HasSuffix(action, "e") {
		return action + "d"
	}
	return action + "ed"
}

// releaseCmd releases a claim.
type releaseCmd struct{ writeCmd }

func (c *releaseCmd) exec(ctx context.Context, o *ops) int {
	id, rec, code := c.target(ctx, o, "release")
	if code != exitOK {
		return code
	}
	if !c.dryRun {
		if err := o.inspect.ReleaseInspected(ctx, rec.Record); err != nil {
			return writeFailed(o, "release", id, err)
		}
	}
	return c.report(ctx, o, "release", id, rec)
}

// resolveCmd completes a claim with a given result.
type resolveCmd struct {
	writeCmd
	result     string
	resultFile string
}

func (c *resolveCmd) flags(fs *flag.FlagSet) {
	c.writeCmd.flags(fs)
	fs.StringVar(&c.result, "result", "", "the operation's result, one JSON value, as the operation would have returned it")
	fs.StringVar(&c.resultFile, "result-file", "", "a file holding the result, or - for standard input")
}

func (c *resolveCmd) check() error {
	err := c.writeCmd.check()
	if (c.result == "") == (c.resultFile == "") {
		err = errors.Join(err, errors.New("give the result with one of --result and --result-file"))
	}
	if c.result != "" && !jsonValue(c.result) {
		err = errors.Join(err, errors.New("--result is not one JSON value"))
	}
	if c.force {
		// The resolve completes under the claim's own owner: a worker still
		// running would find its late completion taken for its own.
		err = errors.Join(err, errors.New("--force is for release only: resolve acts on a lapsed or quarantined claim, never a live one"))
	}
	return err
}

func (c *resolveCmd) exec(ctx context.Context, o *ops) int {
	data := []byte(c.result)
	if c.resultFile != "" {
		var r io.Reader = stdin
		if c.resultFile != "-" {
			f, err := os.Open(c.resultFile)
			if err != nil {
				return refuse(o, "--result-file: %v", err)
			}
			defer f.Close()
			r = f
		}
		b, err := io.ReadAll(io.LimitReader(r, 64<<20))
		if err != nil {
			return refuse(o, "--result-file: %v", err)
		}
		if !jsonValue(string(b)) {
			return refuse(o, "--result-file does not hold one JSON value")
		}
		data = b
	}
	id, rec, code := c.target(ctx, o, "resolve")
	if code != exitOK {
		return code
	}
	if o.sealer == nil {
		if n, err := sealedRecords(ctx, o); err != nil {
			return failed(o, "resolve %s: looking for sealed records: %v", id, err)
		} else if n > 0 {
			return refuse(o, "resolve %s: the namespace's results are sealed (%d of its completed records): give the function's key, --seal-key ($%s), so that the result is sealed too, not written in plaintext", id, n, envSealKey)
		}
	}
	expires := rec.ExpiresAt
	if expires.IsZero() {
		expires = now().Add(defaultExpiresAfter)
	}
	// The claim's own owner; a claim without one (written by Powertools)
	// is completed under a new token, so that the store can tell its own
	// completion sent again.
	owner := rec.Owner
	if owner == "" {
		owner = rand.Text()
	}
	done := driver.Record{ID: id, Status: driver.StatusCompleted, Owner: owner,
		ExpiresAt: expires, Validation: rec.Validation, Data: data}
	if o.sealer == nil {
		done.Data = driver.PlainForm(data) // as the guard stores it
	} else {
		// As the guard seals: compressed first only where the store would
		// not keep the seal whole.
		sealed, err := driver.SealDataFor(ctx, o.sealer, o.store, done)
		if err != nil {
			return failed(o, "resolve %s: sealing the result with --seal-key: %v; nothing written", id, err)
		}
		done.Data = sealed
	}
	if !c.dryRun {
		if err := o.inspect.CompleteInspected(ctx, rec.Record, done); err != nil {
			return writeFailed(o, "resolve", id, err)
		}
	}
	return c.report(ctx, o, "resolve", id, rec)
}

// sealCheckRecords bounds the completed records resolve reads, without
// --seal-key, to tell whether the function seals its results.
const sealCheckRecords = 100

// sealedRecords returns how many of the namespace's first
// sealCheckRecords completed records hold a sealed result.
func sealedRecords(ctx context.Context, o *ops) (int, error) {
	n, seen := 0, 0
	for rec, err := range o.inspect.List(ctx, driver.ListOptions{Status: driver.StatusCompleted, Prefix: o.g.namespace + "#"}) {
		if err != nil && rec.ID == "" {
			return n, err
		}
		if driver.IsSealed(rec.Data) {
			n++
		}
		if seen++; seen == sealCheckRecords {
			break
		}
	}
	return n, nil
}

// stamp is t in UTC, or "-".
func stamp(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// defaultExpiresAfter is the guard's default Config.ExpiresAfter.
const defaultExpiresAfter = 15 * 24 * time.Hour
