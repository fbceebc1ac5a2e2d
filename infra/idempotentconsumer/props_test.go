package idempotentconsumer

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"

	"github.com/sqsonce/sqsonce/middleware/batch"
)

func TestPlanDefaults(t *testing.T) {
	pl, err := Props{Namespace: "n"}.Plan()
	if err != nil {
		t.Fatal(err)
	}
	want := Plan{
		Handler:             DefaultHandler,
		MemorySize:          DefaultMemorySize,
		Timeout:             DefaultTimeout,
		Tracing:             awslambda.Tracing_DISABLED,
		VisibilityTimeout:   VisibilityFactor * DefaultTimeout,
		Retention:           DefaultRetention,
		DeadLetterRetention: DefaultDeadLetterRetention,
		MaxReceiveCount:     DefaultMaxReceiveCount,
		QueueWindow:         batch.QueueWindow(DefaultRetention, DefaultMaxReceiveCount, VisibilityFactor*DefaultTimeout),
		BatchSize:           DefaultBatchSize,
		MaxBatchingWindow:   DefaultMaxBatchingWindow,
		MaxConcurrency:      DefaultMaxConcurrency,
		LogRetention:        awslogs.RetentionDays_ONE_MONTH,
		NewTable:            true,
		TableRemovalPolicy:  awscdk.RemovalPolicy_RETAIN,
		DeletionProtection:  true,
		OldestMessageAlarm:  DefaultOldestMessageAlarm,
		MetricsNamespace:    DefaultMetricsNamespace,
		MetricsService:      "n",
	}
	want.DeadLetterWindow = DefaultDeadLetterRetention + want.QueueWindow
	want.ExpiresAfter = want.DeadLetterWindow + DefaultExpiryMargin
	if pl != want {
		t.Errorf("Plan()\n got %+v\nwant %+v", pl, want)
	}
	if pl.ExpiresAfter < pl.DeadLetterRetention+pl.QueueWindow {
		t.Errorf("default expiry %v below the dead-letter retention %v + the window %v", pl.ExpiresAfter, pl.DeadLetterRetention, pl.QueueWindow)
	}
}

func TestPlanDerivesFromSettings(t *testing.T) {
	for _, tc := range []struct {
		name                         string
		props                        Props
		visibility, window, dlWindow time.Duration
		expires, batchingWindow      time.Duration
	}{
		{
			name: "timeout sets visibility",
			props: Props{Namespace: "n", Timeout: time.Minute, Retention: time.Hour, DeadLetterRetention: 2 * time.Hour,
				MaxReceiveCount: 2, ExpiryMargin: time.Hour},
			visibility:     6 * time.Minute,
			window:         time.Hour + 2*6*time.Minute,
			dlWindow:       2*time.Hour + time.Hour + 2*6*time.Minute,
			expires:        4*time.Hour + 12*time.Minute,
			batchingWindow: DefaultMaxBatchingWindow,
		},
		{
			name: "explicit visibility and expiry",
			props: Props{Namespace: "n", Timeout: time.Minute, VisibilityTimeout: 10 * time.Minute, Retention: time.Hour,
				DeadLetterRetention: time.Hour, MaxReceiveCount: 3, ExpiresAfter: 3 * time.Hour},
			visibility:     10 * time.Minute,
			window:         time.Hour + 30*time.Minute,
			dlWindow:       2*time.Hour + 30*time.Minute,
			expires:        3 * time.Hour,
			batchingWindow: DefaultMaxBatchingWindow,
		},
		{
			name: "expiry exactly the dead-letter window",
			props: Props{Namespace: "n", Retention: time.Hour, DeadLetterRetention: time.Hour, MaxReceiveCount: 1,
				ExpiresAfter: 2*time.Hour + 18*time.Minute},
			visibility:     18 * time.Minute,
			window:         time.Hour + 18*time.Minute,
			dlWindow:       2*time.Hour + 18*time.Minute,
			expires:        2*time.Hour + 18*time.Minute,
			batchingWindow: DefaultMaxBatchingWindow,
		},
		{
			// A FIFO dead-letter queue restarts a message's retention, so it
			// may keep messages for less than the queue does, and the
			// message's time in the queue counts too.
			name: "FIFO",
			props: Props{Namespace: "n", FIFO: true, Retention: time.Hour, DeadLetterRetention: 30 * time.Minute,
				MaxReceiveCount: 1, ExpiryMargin: time.Hour},
			visibility: 18 * time.Minute,
			window:     time.Hour + 18*time.Minute,
			dlWindow:   time.Hour + 30*time.Minute + time.Hour + 18*time.Minute,
			expires:    3*time.Hour + 48*time.Minute,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl, err := tc.props.Plan()
			if err != nil {
				t.Fatal(err)
			}
			if pl.VisibilityTimeout != tc.visibility || pl.QueueWindow != tc.window || pl.DeadLetterWindow != tc.dlWindow || pl.ExpiresAfter != tc.expires {
				t.Errorf("visibility %v window %v dead-letter window %v expires %v, want %v %v %v %v",
					pl.VisibilityTimeout, pl.QueueWindow, pl.DeadLetterWindow, pl.ExpiresAfter, tc.visibility, tc.window, tc.dlWindow, tc.expires)
			}
			if want := batch.QueueWindow(pl.Retention, pl.MaxReceiveCount, pl.VisibilityTimeout); pl.QueueWindow != want {
				t.Errorf("window %v, batch.QueueWindow says %v", pl.QueueWindow, want)
			}
			if pl.MaxBatchingWindow != tc.batchingWindow {
				t.Errorf("batching window %v, want %v", pl.MaxBatchingWindow, tc.batchingWindow)
			}
		})
	}
}

func TestPlanRejects(t *testing.T) {
	ok := Props{Namespace: "n"}
	for _, tc := range []struct {
		name  string
		edit  func(*Props)
		wants []string
	}{
		{"no namespace", func(p *Props) { p.Namespace = "" }, []string{"Props.Namespace is required"}},
		{"env owned by the construct", func(p *Props) { p.Environment = map[string]string{EnvExpiresAfter: "1s", "OTHER": "x"} }, []string{"sets SQSONCE_EXPIRES_AFTER"}},
		{"visibility below 6x timeout", func(p *Props) { p.Timeout = 3 * time.Minute; p.VisibilityTimeout = 17 * time.Minute }, []string{"VisibilityTimeout 17m0s is below 6 × Timeout 3m0s (18m0s)"}},
		{"visibility above 12h", func(p *Props) { p.VisibilityTimeout = 13 * time.Hour }, []string{"above SQS's maximum"}},
		{"expiry below window", func(p *Props) { p.ExpiresAfter = 96 * time.Hour }, []string{"ExpiresAfter 96h0m0s is below the queue's window 97h30m0s"}},
		{"negative margin", func(p *Props) { p.ExpiryMargin = -time.Hour }, []string{"ExpiryMargin -1h0m0s is negative", "below the dead-letter window"}},
		{"timeout too long", func(p *Props) { p.Timeout = 16 * time.Minute }, []string{"Timeout 16m0s is outside"}},
		{"fractional seconds", func(p *Props) { p.Timeout = 1500 * time.Millisecond }, []string{"Timeout 1.5s is not a whole number of seconds"}},
		{"retention too long", func(p *Props) { p.Retention = 15 * 24 * time.Hour }, []string{"Retention 360h0m0s is outside"}},
		{"DLQ shorter than queue", func(p *Props) { p.DeadLetterRetention = time.Hour }, []string{"DeadLetterRetention 1h0m0s is below Retention"}},
		{"receive count", func(p *Props) { p.MaxReceiveCount = -1 }, []string{"MaxReceiveCount -1 is outside"}},
		{"metrics namespace reserved", func(p *Props) { p.MetricsNamespace = "AWS/Lambda" }, []string{`MetricsNamespace "AWS/Lambda" is not one CloudWatch takes`}},
		{"metrics namespace too long", func(p *Props) { p.MetricsNamespace = strings.Repeat("n", 256) }, []string{"is not one CloudWatch takes"}},
		{"batch over 10 without window", func(p *Props) { p.BatchSize = 11; p.MaxBatchingWindow = -1 }, []string{"needs a MaxBatchingWindow"}},
		{"window too long", func(p *Props) { p.MaxBatchingWindow = 6 * time.Minute }, []string{"above Lambda's maximum"}},
		{"concurrency 1", func(p *Props) { p.MaxConcurrency = 1 }, []string{"MaxConcurrency 1 is outside 2–1000"}},
		{"concurrency 1001", func(p *Props) { p.MaxConcurrency = 1001 }, []string{"MaxConcurrency 1001 is outside 2–1000 (negative for no cap)"}},
		{"concurrency with pollers", func(p *Props) { p.MaxConcurrency = 5; p.ProvisionedPollers = ProvisionedPollers{Minimum: 2} },
			[]string{"MaxConcurrency 5 is set with ProvisionedPollers", "never both"}},
		{"no concurrency cap with pollers", func(p *Props) { p.MaxConcurrency = -1; p.ProvisionedPollers = ProvisionedPollers{Maximum: 10} },
			[]string{"MaxConcurrency -1 is set with ProvisionedPollers"}},
		{"minimum pollers 1", func(p *Props) { p.ProvisionedPollers = ProvisionedPollers{Minimum: 1} }, []string{"ProvisionedPollers.Minimum 1 is outside SQS's 2–200"}},
		{"minimum pollers 201", func(p *Props) { p.ProvisionedPollers = ProvisionedPollers{Minimum: 201, Maximum: 300} },
			[]string{"ProvisionedPollers.Minimum 201 is outside SQS's 2–200"}},
		{"maximum pollers 1", func(p *Props) { p.ProvisionedPollers = ProvisionedPollers{Maximum: 1} },
			[]string{"ProvisionedPollers.Maximum 1 is outside SQS's 2–2000", "ProvisionedPollers.Minimum 2 is above ProvisionedPollers.Maximum 1"}},
		{"maximum pollers 2001", func(p *Props) { p.ProvisionedPollers = ProvisionedPollers{Maximum: 2001} }, []string{"ProvisionedPollers.Maximum 2001 is outside SQS's 2–2000"}},
		{"negative pollers", func(p *Props) { p.ProvisionedPollers = ProvisionedPollers{Minimum: -2} }, []string{"ProvisionedPollers.Minimum -2 is outside"}},
		{"minimum above maximum", func(p *Props) { p.ProvisionedPollers = ProvisionedPollers{Minimum: 50, Maximum: 20} },
			[]string{"ProvisionedPollers.Minimum 50 is above ProvisionedPollers.Maximum 20"}},
		{"minimum above the default maximum", func(p *Props) { p.ProvisionedPollers = ProvisionedPollers{Minimum: 200, Maximum: 199} },
			[]string{"ProvisionedPollers.Minimum 200 is above ProvisionedPollers.Maximum 199"}},
		{"warm reads below a new table's", func(p *Props) { p.WarmThroughput = WarmThroughput{ReadUnitsPerSecond: 11999} },
			[]string{"WarmThroughput.ReadUnitsPerSecond 11999 is below the 12000 read units per second a new on-demand table serves already"}},
		{"warm writes below a new table's", func(p *Props) { p.WarmThroughput = WarmThroughput{WriteUnitsPerSecond: 1000} },
			[]string{"WarmThroughput.WriteUnitsPerSecond 1000 is below the 4000 write units per second"}},
		{"negative warm throughput", func(p *Props) { p.WarmThroughput = WarmThroughput{ReadUnitsPerSecond: -1, WriteUnitsPerSecond: -1} },
			[]string{"ReadUnitsPerSecond -1 is below", "WriteUnitsPerSecond -1 is below"}},
		{"namespace with a #", func(p *Props) { p.Namespace = "orders#v2" },
			[]string{`Props.Namespace "orders#v2" holds a "#", which ends the namespace in a record id`, "refuses it at start-up"}},
		{"namespace ending in #", func(p *Props) { p.Namespace = "orders#" }, []string{`Props.Namespace "orders#" holds a "#"`}},
		{"visibility below the timeout", func(p *Props) { p.Timeout = 5 * time.Minute; p.VisibilityTimeout = 4 * time.Minute },
			[]string{"VisibilityTimeout 4m0s is below Timeout 5m0s: Lambda refuses an event source mapping", "wants 6 × Timeout (30m0s)"}},
		{"no record could start", func(p *Props) { p.Timeout = 3 * time.Second; p.MinRemaining = 3 * time.Second },
			[]string{"Timeout 3s with MinRemaining 3s", "no record could start at a function timeout of 3s: the records' window is 2.5s", "raise the timeout above 3.5s"}},
		{"negative min remaining", func(p *Props) { p.MinRemaining = -time.Second }, []string{"MinRemaining -1s is negative"}},
		{"memory", func(p *Props) { p.MemorySize = 64 }, []string{"MemorySize 64 MB"}},
		{"several at once", func(p *Props) { p.Namespace = ""; p.BatchSize = -5 }, []string{"Namespace is required", "BatchSize -5"}},
		{"expiry below the dead-letter window", func(p *Props) { p.ExpiresAfter = 200 * time.Hour },
			[]string{"ExpiresAfter 200h0m0s is below the dead-letter window 433h30m0s (DeadLetterRetention 336h0m0s + the queue's window 97h30m0s)",
				"raise ExpiresAfter or shorten DeadLetterRetention"}},
		{"FIFO expiry below the dead-letter window", func(p *Props) { p.FIFO = true; p.ExpiresAfter = 500 * time.Hour },
			[]string{"ExpiresAfter 500h0m0s is below the dead-letter window 529h30m0s (Retention 96h0m0s + DeadLetterRetention 336h0m0s (a FIFO dead-letter queue restarts"}},
		{"destroy with deletion protection", func(p *Props) { p.TableRemovalPolicy = awscdk.RemovalPolicy_DESTROY },
			[]string{"TableRemovalPolicy destroy with deletion protection on"}},
		{"content-based deduplication without FIFO", func(p *Props) { p.ContentBasedDeduplication = true },
			[]string{"ContentBasedDeduplication is set without FIFO"}},
		{"FIFO batch above 10", func(p *Props) { p.FIFO = true; p.BatchSize = 11 }, []string{"BatchSize 11 is above 10, the most a FIFO queue's event source delivers"}},
		{"FIFO batching window", func(p *Props) { p.FIFO = true; p.MaxBatchingWindow = time.Second }, []string{"MaxBatchingWindow 1s is set with FIFO"}},
		{"fifo name on a standard queue", func(p *Props) { p.QueueName = "orders.fifo" }, []string{`QueueName "orders.fifo" ends in .fifo but FIFO is not set`}},
		{"queue name characters", func(p *Props) { p.QueueName = "orders queue" }, []string{`QueueName "orders queue" is not 1–80 letters`}},
		{"queue name length", func(p *Props) { p.FIFO = true; p.QueueName = strings.Repeat("q", 76) }, []string{"is not 1–80 letters"}},
		{"tracing", func(p *Props) { p.Tracing = "On" }, []string{`Tracing "On" is not Active, PassThrough or Disabled`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := ok
			tc.edit(&p)
			pl, err := p.Plan()
			if err == nil {
				t.Fatalf("Plan() = %+v, want an error", pl)
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwant it to contain %q", err, w)
				}
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "idempotentconsumer: ") {
					t.Errorf("error line %q lacks the package prefix", line)
				}
			}
			if pl != (Plan{}) {
				t.Errorf("Plan() returned %+v with its error", pl)
			}
		})
	}
}

// TestPlanThreeSecondTimeout: Lambda's default timeout plans with the
// default MinRemaining (which follows the invocation) and with one below
// the records' window of 2.5 s.
func TestPlanThreeSecondTimeout(t *testing.T) {
	for _, mr := range []time.Duration{0, 2 * time.Second} {
		pl, err := Props{Namespace: "n", Timeout: 3 * time.Second, MinRemaining: mr}.Plan()
		if err != nil {
			t.Fatalf("MinRemaining %v: %v", mr, err)
		}
		if pl.Timeout != 3*time.Second || pl.MinRemaining != mr {
			t.Errorf("MinRemaining %v: plan %v / %v", mr, pl.Timeout, pl.MinRemaining)
		}
	}
}

// TestPlanScale: standard mode caps the event source at MaxConcurrency
// (default 5, or none); provisioned mode takes no cap, and each bound of
// the pollers left zero is Lambda's default; the warm throughput is passed
// on as given.
func TestPlanScale(t *testing.T) {
	for _, tc := range []struct {
		name        string
		props       Props
		concurrency int
		pollers     ProvisionedPollers
		warm        WarmThroughput
	}{
		{"defaults", Props{}, DefaultMaxConcurrency, ProvisionedPollers{}, WarmThroughput{}},
		{"a cap", Props{MaxConcurrency: 1000}, 1000, ProvisionedPollers{}, WarmThroughput{}},
		{"the smallest cap", Props{MaxConcurrency: 2}, 2, ProvisionedPollers{}, WarmThroughput{}},
		{"no cap", Props{MaxConcurrency: -1}, 0, ProvisionedPollers{}, WarmThroughput{}},
		{"pollers", Props{ProvisionedPollers: ProvisionedPollers{Minimum: 10, Maximum: 100}}, 0, ProvisionedPollers{10, 100}, WarmThroughput{}},
		{"minimum pollers only", Props{ProvisionedPollers: ProvisionedPollers{Minimum: 200}}, 0, ProvisionedPollers{200, DefaultMaximumPollers}, WarmThroughput{}},
		{"maximum pollers only", Props{ProvisionedPollers: ProvisionedPollers{Maximum: 2000}}, 0, ProvisionedPollers{DefaultMinimumPollers, 2000}, WarmThroughput{}},
		{"the fewest pollers", Props{ProvisionedPollers: ProvisionedPollers{Minimum: 2, Maximum: 2}}, 0, ProvisionedPollers{2, 2}, WarmThroughput{}},
		{"warm throughput", Props{WarmThroughput: WarmThroughput{ReadUnitsPerSecond: 12000, WriteUnitsPerSecond: 10000}}, DefaultMaxConcurrency,
			ProvisionedPollers{}, WarmThroughput{12000, 10000}},
		{"warm writes only", Props{WarmThroughput: WarmThroughput{WriteUnitsPerSecond: 4000}}, DefaultMaxConcurrency,
			ProvisionedPollers{}, WarmThroughput{0, 4000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.props
			p.Namespace = "n"
			pl, err := p.Plan()
			if err != nil {
				t.Fatal(err)
			}
			if pl.MaxConcurrency != tc.concurrency || pl.ProvisionedPollers != tc.pollers || pl.WarmThroughput != tc.warm {
				t.Errorf("MaxConcurrency %d, ProvisionedPollers %+v, WarmThroughput %+v; want %d, %+v, %+v",
					pl.MaxConcurrency, pl.ProvisionedPollers, pl.WarmThroughput, tc.concurrency, tc.pollers, tc.warm)
			}
		})
	}
}

func TestNewRejectsBeforeTouchingScope(t *testing.T) {
	// A nil scope proves New never reaches it: CDK would fail on it.
	_, err := New(nil, "Consumer", Props{Namespace: "n", Timeout: time.Hour})
	if err == nil {
		t.Fatal("New accepted props without Code and with a 1h timeout")
	}
	for _, w := range []string{"Props.Code is required", "Timeout 1h0m0s is outside"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
}

func TestGoSeconds(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{time.Second, "1s"},
		{97*time.Hour + 30*time.Minute, "351000s"},
		{121*time.Hour + 30*time.Minute, "437400s"},
	} {
		got := GoSeconds(tc.d)
		if got != tc.want {
			t.Errorf("GoSeconds(%v) = %q, want %q", tc.d, got, tc.want)
		}
		back, err := time.ParseDuration(got)
		if err != nil || back != tc.d {
			t.Errorf("time.ParseDuration(%q) = %v, %v; want %v", got, back, err, tc.d)
		}
	}
}

func TestItemActionsExcludeScans(t *testing.T) {
	for name, actions := range map[string]func() []string{"ItemActions": ItemActions, "RecordActions": RecordActions} {
		a := actions()
		for _, bad := range []string{"dynamodb:Scan", "dynamodb:Query", "dynamodb:BatchWriteItem", "dynamodb:BatchGetItem"} {
			for _, x := range a {
				if x == bad || strings.Contains(x, "*") {
					t.Errorf("%s has %s", name, x)
				}
			}
		}
		a[0] = "mutated"
		if actions()[0] == "mutated" {
			t.Errorf("%s shares its slice between callers", name)
		}
	}
	for _, x := range RecordActions() {
		if x == "dynamodb:DeleteItem" {
			t.Error("RecordActions has dynamodb:DeleteItem: dynamostore never deletes a record")
		}
	}
	if got, want := TableOperations(), []string{"GetItem", "PutItem", "UpdateItem", "TransactWriteItems"}; !slices.Equal(got, want) {
		t.Errorf("TableOperations %v, want %v: what dynamostore calls", got, want)
	}
}

func TestPlanQueueName(t *testing.T) {
	for _, tc := range []struct {
		name string
		fifo bool
		want string
	}{
		{"orders", false, "orders"},
		{"orders", true, "orders.fifo"},
		{"orders.fifo", true, "orders.fifo"},
		{"", false, ""}, // generated by CloudFormation
		{"", true, ""},
	} {
		pl, err := Props{Namespace: "n", QueueName: tc.name, FIFO: tc.fifo}.Plan()
		if err != nil {
			t.Fatalf("QueueName %q FIFO %v: %v", tc.name, tc.fifo, err)
		}
		if pl.QueueName != tc.want {
			t.Errorf("QueueName %q FIFO %v: plan %q, want %q", tc.name, tc.fifo, pl.QueueName, tc.want)
		}
	}
}

// TestREADMEProps keeps the props table of ../README.md equal to [Props]:
// the same fields in the same order, each with its Go type.
func TestREADMEProps(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const header = "| prop | type | default | meaning |"
	var rows [][2]string
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == header:
			if in || rows != nil {
				t.Fatalf("README.md has two tables headed %q", header)
			}
			in = true
		case in && strings.HasPrefix(line, "|---"):
		case in && strings.HasPrefix(line, "|"):
			cells := strings.Split(strings.Trim(line, "|"), "|")
			if len(cells) != 4 {
				t.Fatalf("README.md props row %q has %d cells, want 4", line, len(cells))
			}
			name := strings.Trim(strings.TrimSpace(cells[0]), "`")
			typ := strings.Trim(strings.TrimSpace(cells[1]), "`")
			if strings.TrimSpace(cells[2]) == "" || strings.TrimSpace(cells[3]) == "" {
				t.Errorf("README.md props row %s has an empty default or meaning", name)
			}
			rows = append(rows, [2]string{name, typ})
		default:
			in = false
		}
	}
	var fields [][2]string
	pt := reflect.TypeFor[Props]()
	for i := range pt.NumField() {
		f := pt.Field(i)
		fields = append(fields, [2]string{f.Name, f.Type.String()})
	}
	if len(rows) == 0 {
		t.Fatalf("README.md has no table headed %q", header)
	}
	if !reflect.DeepEqual(rows, fields) {
		t.Errorf("README.md props table (name, type):\n%v\nProps fields:\n%v", rows, fields)
	}
}

// TestKeySourcePlan: Plan refuses a key source the function's reader
// would refuse, and keeps a good one as the reader spells it.
func TestKeySourcePlan(t *testing.T) {
	if _, err := (Props{Namespace: "orders", KeySource: "header:x"}).Plan(); err == nil || !strings.Contains(err.Error(), "Props.KeySource") {
		t.Errorf("KeySource header:x: %v, want a refusal naming Props.KeySource", err)
	}
	pl, err := (Props{Namespace: "orders", KeySource: "body:customer_id, amount"}).Plan()
	if err != nil || pl.KeySource != "body:customer_id,amount" {
		t.Errorf("KeySource: %q, %v", pl.KeySource, err)
	}
}
