package chaos

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/memstore"
	"github.com/sqsonce/sqsonce/test/history"
)

// Report is the accounting of one run.
type Report struct {
	Profile Profile
	Wall    time.Duration

	Keys        int
	Sent        map[string]int // by kind: first, duplicate, resend
	Receives    int            // receives logged by workers
	RecvErrors  int            // ReceiveMessage calls that failed (timed out) in workers
	MaxPerKey   int            // the most receives of one key
	Kills       map[string]int // by cause: random, after_op, deadline
	Processes   int            // worker incarnations
	RunsBegun   int            // operation runs started
	RunsDone    int            // operation runs that finished (op_done)
	ExtraRuns   int            // finished runs whose result is not the stored one
	ExtraKill   int            // ...explained: its worker was killed between the operation and its completion
	ExtraStore  int            // ...explained: its completion failed with a store error (exception 2 of the promise in package idempotency)
	ExtraDouble int            // ...explained: its call reported double_run (it outlived its lease and another worker ran the key: exception 1)
	DoubleRuns  int            // double_run outcomes logged
	Acks        int            // deliveries acknowledged (deleted)
	Paced       int            // visibility changes of failed records (pacing on)
	PaceFailed  int            // ...that SQS refused or that failed
	Completed   int            // keys COMPLETED at the end

	OwnCompletionReplayed int // calls that ran the operation, stored its result and were reported as something other than claimed

	// Keep-alive (Profile.KeepAlive).
	Extensions     int // lease extensions the store applied
	MaxExtensions  int // ...the most for one claim
	TakenOverLive  int // claims taken over while their owner lived: its worker not killed, its operation running
	TakeoversTotal int // claims taken over
	NotKeptAlive   int // operations whose context ended with idempotency.ErrLeaseNotExtended (released, run again later)

	// Strict mode (Profile.Strict).
	SecondRuns       int // runs of a key started after an earlier run that was not released: never in strict mode
	Quarantined      int // keys quarantined at the end (INPROGRESS, marked)
	QuarantinedNoRun int // ...whose claim's worker died before the operation started
	QuarantineEvents int // quarantined outcomes logged

	DLQ          int            // messages in the DLQ
	DLQCompleted int            // ...of keys that completed anyway
	DLQReasons   map[string]int // the last failure of each DLQ message (see WriteTable)
	DLQKeys      int            // keys not completed, with a message in the DLQ

	DupLatency []time.Duration // from a duplicate's or re-send's first receive to its acknowledgement, sorted

	StoreFaults   map[string]int // injected by the proxy, by fault
	StoreRequests int            // DynamoDB requests through the proxy

	NotDrained int // messages left in the queue when the drain bound passed

	// Verdict is history.Check's verdict on the run's history.
	Verdict *history.Verdict
	// RunsBy and AcksBy count the runs begun and the deliveries
	// acknowledged by each kind of worker, from the history.
	RunsBy, AcksBy map[history.Reader]int
	// Findings are the violations a Powertools worker's own write caused
	// (a claim, an unconditional completion or delete of Powertools): what
	// Powertools does that the promise forbids, reported, not counted
	// against sqsonce; and the account's findings on the keys they hit.
	Findings []string

	// Violations lists every broken promise, the account's and the
	// verdict's, and every property the profile requires (Profile.Require)
	// that the run gave no case to check; a run passes when it is empty.
	Violations []string
}

// judge adds v's violations to r's, and a violation for each property
// the profile requires that v checked no case of. A violation whose
// breaking write (history.Violation.Breaker) is a Powertools worker's own
// claim, completion or delete (readers names each process's kind) is a
// finding about Powertools instead, and so is a violation about a
// Powertools worker's own report or acknowledgement that no write broke,
// and the account's violation of a key such a finding names. A violation
// beside a Powertools write that another worker's write broke, or that
// the checker can name no breaker of, stays a violation.
func (r *Report) judge(v *history.Verdict, readers map[string]history.Reader) {
	r.Verdict = v
	peerKeys := map[string]bool{}
	for _, res := range v.Results {
		for _, x := range res.Violations {
			pos := make([]string, len(x.Events))
			peer := false
			for i, e := range x.Events {
				pos[i] = fmt.Sprintf("#%d", e.Pos)
				if e.Pos != x.Breaker {
					continue
				}
				pos[i] += " (broke it)"
				switch e.Ev {
				case history.KindClaim, history.KindComplete, history.KindRelease, history.KindAck, history.KindOutcome:
					peer = readers[e.Proc] == history.ReaderPowertoolsTS
				}
			}
			msg := fmt.Sprintf("history: %s: key %s: %s (events %s)", res.Property, x.Key, x.Msg, strings.Join(pos, " "))
			if peer {
				peerKeys[x.Key] = true
				r.Findings = append(r.Findings, msg)
				continue
			}
			r.Violations = append(r.Violations, msg)
		}
		if res.Checked == 0 && slices.Contains(r.Profile.Require, res.Property) {
			r.Violations = append(r.Violations, fmt.Sprintf("history: %s checked no case: the run did not exercise what profile %s is for", res.Property, r.Profile.Name))
		}
	}
	r.Violations = slices.DeleteFunc(r.Violations, func(msg string) bool {
		key, ok := strings.CutPrefix(msg, "key ")
		if key, _, _ = strings.Cut(key, ":"); ok && peerKeys[key] {
			r.Findings = append(r.Findings, "account: "+msg)
			return true
		}
		return false
	})
}

// Failed reports whether the run broke a promise.
func (r *Report) Failed() bool { return len(r.Violations) > 0 }

// runInfo is what the logs say about one run of the operation.
type runInfo struct {
	key       string
	inc       string
	t         int64 // when it started
	released  bool  // an outcome says its claim was released (the operation failed)
	done      bool
	stored    bool // an outcome says its completion was stored by this call
	storeFail bool // an outcome says its completion failed with a store error
	double    bool // an outcome says another worker ran the key too: double_run
}

// account checks the promises against the call logs, the table and the DLQ.
func account(p Profile, sends []sent, incs []incarnation, logs map[string][]entry, records map[string]storedRecord, dlq []dlqMessage, left int) (*Report, error) {
	r := &Report{
		Profile: p, Keys: p.Keys, Processes: len(incs),
		Sent: map[string]int{}, Kills: map[string]int{}, DLQReasons: map[string]int{},
		NotDrained: left,
	}
	violate := func(format string, args ...any) { r.Violations = append(r.Violations, fmt.Sprintf(format, args...)) }
	if left > 0 {
		violate("%d messages still in the queue %v after the faults ended", left, p.Drain)
	}

	final, err := finalRecords(p, sends, records)
	if err != nil {
		return nil, err
	}
	stored := func(key string) (storedRecord, bool) {
		rec := final[key]
		return rec, rec.Status == string(driver.StatusCompleted)
	}

	killed := map[string]bool{}
	for _, inc := range incs {
		if inc.Killed {
			killed[inc.Name] = true
			if inc.Random {
				r.Kills["random"]++
			}
		}
	}

	runs := map[string]*runInfo{}
	perKey := map[string]int{}
	firstRecv := map[string]int64{} // by message
	firstAck := map[string]int64{}
	type lastSeen struct {
		t      int64
		inc    string
		class  string // the record's failure class; "" while unknown
		closed bool   // a record entry followed the receive
		acked  bool   // an ack entry followed the receive
	}
	last := map[string]*lastSeen{} // by message: its latest receive
	type claimInfo struct {
		inc string
		d   string // its delivery
		ext int
	}
	claims := map[string]*claimInfo{}                        // by owner
	opStart, opEnd := map[string]int64{}, map[string]int64{} // by delivery: when its operation started, and returned
	var takeovers []struct {
		prev string
		t    int64
	}
	for _, inc := range incs {
		for _, e := range logs[inc.Name] {
			switch e.Ev {
			case evClaim:
				claims[e.Owner] = &claimInfo{inc: inc.Name, d: e.D}
				if e.Prev != "" {
					takeovers = append(takeovers, struct {
						prev string
						t    int64
					}{e.Prev, e.T})
				}
			case evOpStart:
				opStart[e.D] = e.T
			case evOpDone:
				opEnd[e.D] = e.T
			case evOpFail:
				opEnd[e.D] = e.T
				if strings.Contains(e.Err, idempotency.ErrLeaseNotExtended.Error()) {
					r.NotKeptAlive++
				}
			case evExtend:
				if c := claims[e.Owner]; c != nil {
					c.ext++
				}
				r.Extensions++
			}
		}
	}
	for _, c := range claims {
		r.MaxExtensions = max(r.MaxExtensions, c.ext)
	}
	for _, tk := range takeovers {
		r.TakeoversTotal++
		c := claims[tk.prev]
		if c == nil || killed[c.inc] {
			continue
		}
		if started, ok := opStart[c.d]; ok && started <= tk.t && (opEnd[c.d] == 0 || opEnd[c.d] > tk.t) {
			r.TakenOverLive++
		}
	}
	if p.KeepAlive && r.TakenOverLive > 0 {
		violate("%d claims taken over while their owner lived (its worker not killed, its operation running): keep-alive must keep them", r.TakenOverLive)
	}
	for _, inc := range incs {
		for _, e := range logs[inc.Name] {
			switch e.Ev {
			case evRecv:
				r.Receives++
				perKey[e.Key]++
				if _, ok := firstRecv[e.Msg]; !ok {
					firstRecv[e.Msg] = e.T
				}
				if l := last[e.Msg]; l == nil || e.T > l.t {
					last[e.Msg] = &lastSeen{t: e.T, inc: inc.Name}
				}
			case evRecord:
				if l := last[e.Msg]; l != nil && l.inc == inc.Name {
					l.closed, l.class = true, e.Class
				}
			case evOpStart:
				r.RunsBegun++
				runs[e.Run] = &runInfo{key: e.Key, inc: inc.Name, t: e.T}
			case evOpDone:
				if ri := runs[e.Run]; ri != nil {
					ri.done = true
				}
			case evOutcome:
				if e.Outcome == string(idempotency.OutcomeQuarantined) {
					r.QuarantineEvents++
				}
				ri := runs[e.Run]
				if !e.Ran || ri == nil {
					continue
				}
				if e.Outcome == string(idempotency.OutcomeReleased) {
					ri.released = true
				}
				if e.Err == "" && (e.Outcome == string(idempotency.OutcomeClaimed) || e.Outcome == string(idempotency.OutcomeTakenOver)) {
					ri.stored = true
				}
				if e.Class == "store_complete" {
					ri.storeFail = true
				}
				if e.Outcome == string(idempotency.OutcomeDoubleRun) {
					r.DoubleRuns++
					ri.double = true
				}
				if rec, ok := stored(ri.key); ok && rec.Run == e.Run && !ri.stored {
					r.OwnCompletionReplayed++
				}
			case evAck:
				r.Acks++
				if l := last[e.Msg]; l != nil && l.inc == inc.Name {
					l.acked = true
				}
				if _, ok := firstAck[e.Msg]; !ok {
					firstAck[e.Msg] = e.T
				}
				rec, ok := stored(e.Key)
				switch {
				case !ok:
					violate("key %s: message %s acknowledged but the key is %q, not COMPLETED", e.Key, e.Msg, rec.Status)
				case e.Run != rec.Run:
					violate("key %s: message %s acknowledged with the result of run %q, the stored one is %q", e.Key, e.Msg, e.Run, rec.Run)
				}
			case evKill:
				r.Kills[e.Class]++
			case evRecvErr:
				r.RecvErrors++
			case evPace:
				r.Paced++
				if e.Err != "" {
					r.PaceFailed++
				}
			}
		}
	}

	// Runs: every finished run but the stored one needs an explanation.
	byKey := map[string][]string{}
	for id, ri := range runs {
		if ri.done {
			r.RunsDone++
			byKey[ri.key] = append(byKey[ri.key], id)
		}
	}
	for key, ids := range byKey {
		sort.Strings(ids)
		rec, ok := stored(key)
		if ok && !slices.Contains(ids, rec.Run) {
			violate("key %s: the stored result is from run %q, which never finished", key, rec.Run)
		}
		var unexplained []string
		for _, id := range ids {
			if ok && id == rec.Run {
				if runs[id].double {
					violate("key %s: run %s reported double_run, yet its result is the stored one", key, id)
				}
				continue
			}
			ri := runs[id]
			switch {
			case killed[ri.inc] && !ri.stored:
				r.ExtraKill++
			case ri.storeFail:
				r.ExtraStore++
			case ri.double:
				r.ExtraDouble++
			default:
				unexplained = append(unexplained, id)
			}
		}
		extra := len(ids)
		if ok {
			extra--
		}
		if !ok && len(unexplained) > 0 {
			// Nothing was stored: one unexplained run is the key's single run.
			unexplained = unexplained[1:]
			extra--
		}
		r.ExtraRuns += max(extra, 0)
		for _, id := range unexplained {
			violate("key %s: run %s finished in %s and is not the stored result, and its worker was not killed before completing it", key, id, runs[id].inc)
		}
	}
	for _, n := range perKey {
		r.MaxPerKey = max(r.MaxPerKey, n)
	}
	strictRuns(p, r, runs, final, violate)

	// Keys: completed, or in the DLQ with a reason.
	inDLQ := map[string][]string{}
	for _, m := range dlq {
		r.DLQ++
		inDLQ[m.Key] = append(inDLQ[m.Key], m.Msg)
		reason := "receive_lost" // SQS counted receives no worker got (a ReceiveMessage that timed out)
		if l := last[m.Msg]; l != nil {
			switch {
			case l.closed && l.class != "":
				reason = l.class
			case !l.closed && killed[l.inc]:
				reason = "killed"
			case !l.acked && killed[l.inc]:
				reason = "killed_before_return"
			case l.acked:
				reason = "acked_after_visibility"
			default:
				reason = ""
			}
		}
		r.DLQReasons[reason]++
		if _, ok := stored(m.Key); ok {
			r.DLQCompleted++
		} else if reason == "" {
			violate("key %s: message %s is in the DLQ and no log explains its last failure", m.Key, m.Msg)
		}
	}
	for key := range final {
		if _, ok := stored(key); ok {
			r.Completed++
			continue
		}
		if len(inDLQ[key]) == 0 {
			violate("key %s: neither COMPLETED (%q) nor in the DLQ", key, final[key].Status)
		} else {
			r.DLQKeys++
		}
	}

	for _, s := range sends {
		r.Sent[s.Kind]++
		if s.Kind == "first" {
			continue
		}
		if a, ok := firstAck[s.Msg]; ok {
			if f, ok := firstRecv[s.Msg]; ok {
				r.DupLatency = append(r.DupLatency, time.Duration(a-f))
			}
		}
	}
	slices.Sort(r.DupLatency)
	sort.Strings(r.Violations)
	return r, nil
}

// finalRecords returns the record of every key sent, as found at the end
// (the zero storedRecord for none), mapping keys to record ids the way the
// workers' guard does.
func finalRecords(p Profile, sends []sent, records map[string]storedRecord) (map[string]storedRecord, error) {
	gc := guardConfig(WorkerConfig{Namespace: namespace, Shared: p.Shared()})
	gc.Store = memstore.New()
	g, err := idempotency.New(gc)
	if err != nil {
		return nil, err
	}
	keyFn := keySelector(p.Shared())
	final := map[string]storedRecord{} // by key
	for _, s := range sends {
		if _, ok := final[s.Key]; ok {
			continue
		}
		body := fmt.Sprintf(`{%q:%q}`, KeyField, s.Key)
		key, err := idempotency.Select(keyFn, events.SQSMessage{Body: body})
		if err != nil {
			return nil, err
		}
		id, err := g.ID(key)
		if err != nil {
			return nil, err
		}
		final[s.Key] = records[id]
	}
	return final, nil
}

// quantile returns the q-quantile of sorted ds (nearest rank), 0 if empty.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := int(q*float64(len(ds))+0.5) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

// WriteTable prints reports side by side, one column each. The DLQ reasons
// are the last failure of each DLQ message: a record's failure class
// (in_progress, not_started, store_acquire, store_complete, deadline, ...),
// or killed (its worker died while it ran), killed_before_return (it
// succeeded, and its worker died before the batch returned),
// acked_after_visibility (acknowledged after its last receive's visibility
// expired and SQS moved it), receive_lost (no worker logged its last
// receive: a ReceiveMessage that failed on the client after SQS counted it).
func WriteTable(w io.Writer, reports ...*Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(label string, f func(r *Report) string) {
		fmt.Fprint(tw, label+"\t")
		for _, r := range reports {
			fmt.Fprint(tw, f(r)+"\t")
		}
		fmt.Fprintln(tw)
	}
	row("profile", func(r *Report) string { return r.Profile.Name })
	row("pacing", func(r *Report) string { return onOff(r.Profile.Pacing) })
	row("table key", func(r *Report) string {
		if r.Profile.SortKey {
			return TableKey.Partition + " + " + TableKey.Sort
		}
		return "id"
	})
	row("keys / workers", func(r *Report) string { return fmt.Sprintf("%d / %d", r.Keys, r.Profile.Workers) })
	row("invocations at once per worker", func(r *Report) string { return fmt.Sprint(max(r.Profile.Invocations, 1)) })
	row("messages sent (first+dup+resend)", func(r *Report) string {
		return fmt.Sprintf("%d+%d+%d", r.Sent["first"], r.Sent["duplicate"], r.Sent["resend"])
	})
	row("receives (per key, max)", func(r *Report) string {
		return fmt.Sprintf("%d (%.2f, %d)", r.Receives, float64(r.Receives)/float64(max(r.Keys, 1)), r.MaxPerKey)
	})
	row("failed ReceiveMessage calls", func(r *Report) string { return fmt.Sprint(r.RecvErrors) })
	row("worker processes", func(r *Report) string { return fmt.Sprint(r.Processes) })
	row("SIGKILLs random/after-op/deadline", func(r *Report) string {
		return fmt.Sprintf("%d/%d/%d", r.Kills["random"], r.Kills["after_op"], r.Kills["deadline"])
	})
	row("store faults 5xx/throttle/reset-before/reset-after", func(r *Report) string {
		f := r.StoreFaults
		return fmt.Sprintf("%d/%d/%d/%d", f[faultServerError], f[faultThrottle], f[faultResetBefore], f[faultResetAfter])
	})
	row("store requests", func(r *Report) string { return fmt.Sprint(r.StoreRequests) })
	row("runs begun / finished", func(r *Report) string { return fmt.Sprintf("%d / %d", r.RunsBegun, r.RunsDone) })
	row("extra runs (killed after op / completion failed / double_run)", func(r *Report) string {
		return fmt.Sprintf("%d (%d / %d / %d)", r.ExtraRuns, r.ExtraKill, r.ExtraStore, r.ExtraDouble)
	})
	row("double_run outcomes", func(r *Report) string { return fmt.Sprint(r.DoubleRuns) })
	if slices.ContainsFunc(reports, func(r *Report) bool { return r.Profile.anyStrict() }) {
		row("strict: second runs of a key", func(r *Report) string { return fmt.Sprint(r.SecondRuns) })
		row("strict: keys quarantined (no run) / outcomes", func(r *Report) string {
			return fmt.Sprintf("%d (%d) / %d", r.Quarantined, r.QuarantinedNoRun, r.QuarantineEvents)
		})
	}
	if slices.ContainsFunc(reports, func(r *Report) bool { return r.Profile.KeepAlive }) {
		row("keep-alive: extensions (per run begun, max per claim)", func(r *Report) string {
			return fmt.Sprintf("%d (%.2f, %d)", r.Extensions, float64(r.Extensions)/float64(max(r.RunsBegun, 1)), r.MaxExtensions)
		})
		row("keep-alive: taken-over live owners / takeovers", func(r *Report) string {
			return fmt.Sprintf("%d / %d", r.TakenOverLive, r.TakeoversTotal)
		})
		row("keep-alive: operations ended, lease not extended", func(r *Report) string { return fmt.Sprint(r.NotKeptAlive) })
	}
	row("own completion reported as not claimed", func(r *Report) string { return fmt.Sprint(r.OwnCompletionReplayed) })
	row("acknowledged deliveries", func(r *Report) string { return fmt.Sprint(r.Acks) })
	row("visibility changes (failed)", func(r *Report) string { return fmt.Sprintf("%d (%d)", r.Paced, r.PaceFailed) })
	row("keys COMPLETED", func(r *Report) string { return fmt.Sprint(r.Completed) })
	row("keys not completed, in DLQ", func(r *Report) string { return fmt.Sprint(r.DLQKeys) })
	row("DLQ messages (key completed)", func(r *Report) string { return fmt.Sprintf("%d (%d)", r.DLQ, r.DLQCompleted) })
	row("DLQ reasons", func(r *Report) string { return reasons(r.DLQReasons) })
	row("dup/resend: receive to ack p50 / p95", func(r *Report) string {
		return fmt.Sprintf("%v / %v", quantile(r.DupLatency, 0.5).Round(10*time.Millisecond), quantile(r.DupLatency, 0.95).Round(10*time.Millisecond))
	})
	row("wall time", func(r *Report) string { return r.Wall.Round(100 * time.Millisecond).String() })
	if slices.ContainsFunc(reports, func(r *Report) bool { return r.Verdict != nil }) {
		row("history: events / deliveries checked", func(r *Report) string {
			if r.Verdict == nil {
				return "-"
			}
			return fmt.Sprintf("%d / %d", r.Verdict.Events, r.Verdict.Deliveries)
		})
		for _, p := range history.Properties {
			row("history: "+string(p.Property)+" checked (violations)", func(r *Report) string {
				if r.Verdict == nil {
					return "-"
				}
				res := r.Verdict.Result(p.Property)
				return fmt.Sprintf("%d (%d)", res.Checked, len(res.Violations))
			})
		}
	}
	if slices.ContainsFunc(reports, func(r *Report) bool { return r.Profile.Shared() }) {
		for _, k := range []history.Reader{history.ReaderSqsonce, history.ReaderSqsonceStrict, history.ReaderPowertoolsTS} {
			row("runs begun / acks by "+string(k), func(r *Report) string { return fmt.Sprintf("%d / %d", r.RunsBy[k], r.AcksBy[k]) })
		}
		row("findings about Powertools", func(r *Report) string { return fmt.Sprint(len(r.Findings)) })
	}
	row("violations", func(r *Report) string { return fmt.Sprint(len(r.Violations)) })
	if err := tw.Flush(); err != nil {
		return err
	}
	// Each run's verdict table, with the first violations and their events.
	for _, r := range reports {
		if r.Verdict == nil {
			continue
		}
		fmt.Fprintf(w, "\nhistory of %s, pacing %s:\n", r.Profile.Name, onOff(r.Profile.Pacing))
		if err := r.Verdict.Write(w, 3); err != nil {
			return err
		}
		if len(r.Findings) > 0 {
			fmt.Fprintf(w, "findings about Powertools (%d; not violations of sqsonce's promise):\n", len(r.Findings))
			for _, f := range r.Findings {
				fmt.Fprintf(w, "  %s\n", f)
			}
		}
	}
	return nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func reasons(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s:%d", k, m[k])
	}
	return b.String()
}

// strictRuns checks strict mode's promise from the call logs: a key's
// operation starts again only after a run that failed and was released;
// every key that did not complete is quarantined, after at most one run.
// Without strict mode no record may be quarantined. In a mixed fleet only
// the quarantines are counted: the history's strict_once and
// quarantine_holds hold each strict claim to its promise.
func strictRuns(p Profile, r *Report, runs map[string]*runInfo, final map[string]storedRecord, violate func(string, ...any)) {
	strict := slices.Equal(p.readers(), []history.Reader{history.ReaderSqsonceStrict})
	byKey := map[string][]string{}
	for id, ri := range runs {
		byKey[ri.key] = append(byKey[ri.key], id)
	}
	for key, rec := range final {
		ids := byKey[key]
		sort.Slice(ids, func(i, j int) bool { return runs[ids[i]].t < runs[ids[j]].t })
		live := 0 // runs not released: at most one in strict mode
		for i, id := range ids {
			if runs[id].released {
				continue
			}
			live++
			if strict && i < len(ids)-1 {
				r.SecondRuns += len(ids) - 1 - i
				violate("key %s: run %s was not released, yet the operation started again (%v): strict mode ran it twice", key, id, ids[i+1:])
				break
			}
		}
		quarantined := rec.Quarantined && rec.Status == string(driver.StatusInProgress)
		switch {
		case quarantined && !p.anyStrict():
			violate("key %s: quarantined without strict mode", key)
		case quarantined:
			r.Quarantined++
			if live == 0 {
				r.QuarantinedNoRun++
			}
		case strict && rec.Status != string(driver.StatusCompleted):
			violate("key %s: strict mode left it neither COMPLETED nor quarantined (%q)", key, rec.Status)
		}
	}
}
