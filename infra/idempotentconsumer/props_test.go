package idempotentconsumer

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"

	"github.com/sqsonce/sqsonce/middleware/idempotency"
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
		VisibilityTimeout:   VisibilityFactor * DefaultTimeout,
		Retention:           DefaultRetention,
		DeadLetterRetention: DefaultDeadLetterRetention,
		MaxReceiveCount:     DefaultMaxReceiveCount,
		QueueWindow:         idempotency.QueueWindow(DefaultRetention, DefaultMaxReceiveCount, VisibilityFactor*DefaultTimeout),
		BatchSize:           DefaultBatchSize,
		MaxBatchingWindow:   DefaultMaxBatchingWindow,
		MaxConcurrency:      DefaultMaxConcurrency,
		LogRetention:        awslogs.RetentionDays_ONE_MONTH,
		TableRemovalPolicy:  awscdk.RemovalPolicy_RETAIN,
		OldestMessageAlarm:  DefaultOldestMessageAlarm,
	}
	want.ExpiresAfter = want.QueueWindow + DefaultExpiryMargin
	if pl != want {
		t.Errorf("Plan()\n got %+v\nwant %+v", pl, want)
	}
	if pl.ExpiresAfter < pl.QueueWindow {
		t.Errorf("default expiry %v below the window %v", pl.ExpiresAfter, pl.QueueWindow)
	}
}

func TestPlanDerivesFromSettings(t *testing.T) {
	for _, tc := range []struct {
		name                string
		props               Props
		visibility, expires time.Duration
		window              time.Duration
	}{
		{
			name:       "timeout sets visibility",
			props:      Props{Namespace: "n", Timeout: time.Minute, Retention: time.Hour, MaxReceiveCount: 2, ExpiryMargin: time.Hour},
			visibility: 6 * time.Minute,
			window:     time.Hour + 2*6*time.Minute,
			expires:    2*time.Hour + 12*time.Minute,
		},
		{
			name:       "explicit visibility and expiry",
			props:      Props{Namespace: "n", Timeout: time.Minute, VisibilityTimeout: 10 * time.Minute, Retention: time.Hour, MaxReceiveCount: 3, ExpiresAfter: 2 * time.Hour},
			visibility: 10 * time.Minute,
			window:     time.Hour + 30*time.Minute,
			expires:    2 * time.Hour,
		},
		{
			name:       "expiry exactly the window",
			props:      Props{Namespace: "n", Retention: time.Hour, MaxReceiveCount: 1, ExpiresAfter: time.Hour + 18*time.Minute},
			visibility: 18 * time.Minute,
			window:     time.Hour + 18*time.Minute,
			expires:    time.Hour + 18*time.Minute,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl, err := tc.props.Plan()
			if err != nil {
				t.Fatal(err)
			}
			if pl.VisibilityTimeout != tc.visibility || pl.QueueWindow != tc.window || pl.ExpiresAfter != tc.expires {
				t.Errorf("visibility %v window %v expires %v, want %v %v %v",
					pl.VisibilityTimeout, pl.QueueWindow, pl.ExpiresAfter, tc.visibility, tc.window, tc.expires)
			}
			if want := idempotency.QueueWindow(pl.Retention, pl.MaxReceiveCount, pl.VisibilityTimeout); pl.QueueWindow != want {
				t.Errorf("window %v, idempotency.QueueWindow says %v", pl.QueueWindow, want)
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
		{"negative margin", func(p *Props) { p.ExpiryMargin = -time.Hour }, []string{"ExpiryMargin -1h0m0s is negative", "below the queue's window"}},
		{"timeout too long", func(p *Props) { p.Timeout = 16 * time.Minute }, []string{"Timeout 16m0s is outside"}},
		{"fractional seconds", func(p *Props) { p.Timeout = 1500 * time.Millisecond }, []string{"Timeout 1.5s is not a whole number of seconds"}},
		{"retention too long", func(p *Props) { p.Retention = 15 * 24 * time.Hour }, []string{"Retention 360h0m0s is outside"}},
		{"DLQ shorter than queue", func(p *Props) { p.DeadLetterRetention = time.Hour }, []string{"DeadLetterRetention 1h0m0s is below Retention"}},
		{"receive count", func(p *Props) { p.MaxReceiveCount = -1 }, []string{"MaxReceiveCount -1 is outside"}},
		{"batch over 10 without window", func(p *Props) { p.BatchSize = 11; p.MaxBatchingWindow = -1 }, []string{"needs a MaxBatchingWindow"}},
		{"window too long", func(p *Props) { p.MaxBatchingWindow = 6 * time.Minute }, []string{"above Lambda's maximum"}},
		{"concurrency 1", func(p *Props) { p.MaxConcurrency = 1 }, []string{"MaxConcurrency 1 is outside 2–1000"}},
		{"memory", func(p *Props) { p.MemorySize = 64 }, []string{"MemorySize 64 MB"}},
		{"several at once", func(p *Props) { p.Namespace = ""; p.BatchSize = -5 }, []string{"Namespace is required", "BatchSize -5"}},
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
	a := ItemActions()
	for _, bad := range []string{"dynamodb:Scan", "dynamodb:Query", "dynamodb:BatchWriteItem", "dynamodb:BatchGetItem"} {
		for _, x := range a {
			if x == bad || strings.Contains(x, "*") {
				t.Errorf("ItemActions has %s", x)
			}
		}
	}
	a[0] = "mutated"
	if ItemActions()[0] == "mutated" {
		t.Error("ItemActions shares its slice between callers")
	}
}
