package sim

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Config is the point of the configuration space one run simulates: which
// wrapper the workers use, how record ids are scoped to tenants, how leases
// are kept alive, the skew margin, the share of strict workers (and how
// they are strict), the cache and its size, payload validation, pacing and
// its interval, the batch's concurrency and full-batch error, the
// dead-letter path, sealed results, the completion's attempts and
// WrapJSON's check.
// [ConfigOf] draws it from the seed; a saved tape keeps it (a tape saved
// before configurations were drawn replays [Legacy]).
type Config struct {
	// Wrapper is how the record function is made idempotent: "wrap"
	// (Wrap of an events.SQSMessage), "json" (WrapJSON) or "do" (Do with
	// the key the function took from the body; under message-group
	// tenancy the group is put in the key, as Do's doc asks).
	Wrapper string `json:"wrapper"`
	// Tenancy: "none" (the default TenancyInvocation, no invocation
	// carries a tenant), "off" (TenancyOff, one tenant), "invocation"
	// (TenancyInvocation, two tenants; an invocation carries one tenant's
	// messages) or "group" (TenancyMessageGroup: a fair queue, each
	// message in one of two groups).
	Tenancy string `json:"tenancy"`
	// KeepAlive: "off" (the store implements no Extend), "default" (every
	// store's Extend, the guard's defaults, Lambda's 3 s deadline) or
	// "limit" (workers without a deadline, a 2 s lease kept alive up to
	// KeepAliveLimit, at or above a short ExpiresAfter: the limit's default
	// is ExpiresAfter).
	KeepAlive string `json:"keepalive"`
	// KeepAliveEvery, with keep-alive on, is every guard's
	// Config.KeepAliveEvery: zero (a third of the lease) or a shorter one.
	KeepAliveEvery time.Duration `json:"keepalive_every,omitempty"`
	ExpiresAfter   time.Duration `json:"expires_after,omitempty"`
	KeepAliveLimit time.Duration `json:"keepalive_limit,omitempty"`
	// SkewMargin is every guard's Config.SkewMargin; the clock skews a
	// run injects are drawn around it.
	SkewMargin time.Duration `json:"skew_margin"`
	// Strict is the chance (percent) that a worker's wrapper is strict.
	Strict int `json:"strict"`
	// Cache turns Config.CacheBytes on (1 MiB).
	Cache bool `json:"cache,omitempty"`
	// Payload turns WithPayload on (the body's field "p").
	Payload bool `json:"payload"`
	// Pacing sets batch.Options.Pacing's Changer: failed records' messages
	// are paced, and KeepVisible keeps running records' messages
	// invisible.
	Pacing bool `json:"pacing,omitempty"`
	// DeadLetter: operations sometimes fail permanently; package sqsdlq's
	// mover moves their messages to the dead-letter queue (as SQS's
	// redrive policy moves a message received MaxReceiveCount times), and
	// the operator redrives the dead-letter queue into the queue again (as
	// sqsonce-ops redrive does: each message sent anew with its body,
	// attributes and MessageGroupId).
	DeadLetter bool `json:"dead_letter,omitempty"`
	// FullBatchError sets batch.Options.AlwaysFullBatchError (Powertools'
	// behaviour): a batch whose every record failed returns an error, and
	// Lambda deletes none of its messages.
	FullBatchError bool `json:"full_batch_error,omitempty"`
	// QueueTimeout, with Pacing, sets KeepVisible.QueueTimeout to the
	// queue's visibility timeout: no change ends before it.
	QueueTimeout bool `json:"queue_timeout,omitempty"`
	// Sealer: "" or "off" (no Config.Sealer), "on" (every worker seals
	// its results with package kmsseal on an in-process KMS) or "mixed"
	// (every worker but slot 1's, which has none, as during a rollout:
	// a sealed record it reads fails its call with driver.ErrUnsealed).
	Sealer string `json:"sealer,omitempty"`
	// SmallCache, with Cache, sets Config.CacheBytes to 1 KiB instead:
	// two records, so that a run's keys evict each other.
	SmallCache bool `json:"small_cache,omitempty"`
	// StrictGuard makes the strict workers strict with Config.Strict (the
	// guard's every call) instead of the wrapper's option Strict().
	StrictGuard bool `json:"strict_guard,omitempty"`
	// Sequential sets batch.Options.Concurrency to 1: a batch's records
	// run one after another, in event order.
	Sequential bool `json:"sequential,omitempty"`
	// NoFullBatchError sets batch.Options.NoFullBatchError (never with
	// FullBatchError): a batch whose every record failed returns no error.
	NoFullBatchError bool `json:"no_full_batch_error,omitempty"`
	// KeepVisibleEvery, with Pacing, is KeepVisible.Every: zero (a third
	// of the records' window) or a shorter interval.
	KeepVisibleEvery time.Duration `json:"keep_visible_every,omitempty"`
	// OneCompleteAttempt sets Config.CompleteAttempts to 1: a completion
	// the network fails is not tried again.
	OneCompleteAttempt bool `json:"one_complete_attempt,omitempty"`
	// NoSkewMargin sets every guard's Config.SkewMargin to a nanosecond
	// instead of SkewMargin, as the field's doc says for none (the skews
	// drawn around it are then up to 2 s, beyond it).
	NoSkewMargin bool `json:"no_skew_margin,omitempty"`
	// ShortLimit, with KeepAlive "limit" and no KeepAliveLimit drawn, sets
	// KeepAliveLimit to 3 s, a second beyond the 2 s lease: operations of
	// several seconds outlive it, and their context ends.
	ShortLimit bool `json:"short_limit,omitempty"`
	// JSONChecked, with Wrapper "json", gives WrapJSON WithCheck (a check
	// every request passes) and DisallowUnknownFields.
	JSONChecked bool `json:"json_checked,omitempty"`
	// Legacy: the one configuration the simulation ran before it drew
	// one, with its draws (tapes saved then replay it).
	Legacy bool `json:"legacy,omitempty"`
}

// Legacy is the configuration of tapes saved before configurations were
// drawn: Wrap, memstore without Extend, no tenant, the default skew margin
// and 15-day expiry, a third of workers strict, no cache, payload
// validation, no pacing, no dead-letter path.
func Legacy() Config {
	return Config{Wrapper: "wrap", Tenancy: "none", KeepAlive: "off", SkewMargin: defaultSkewMargin,
		Strict: 35, Payload: true, Legacy: true}
}

// The values of each dimension, in the order ConfigOf draws them.
var (
	Wrappers    = []string{"wrap", "json", "do"}
	Tenancies   = []string{"none", "off", "invocation", "group"}
	KeepAlives  = []string{"off", "default", "limit"}
	SkewMargins = []time.Duration{defaultSkewMargin, 2 * time.Second, time.Second}
	StrictMix   = []int{0, 35, 100}
	Sealers     = []string{"off", "on", "mixed"}
)

// ConfigOf draws seed's configuration, from a generator of its own (so that
// the tape's draws stay the run's schedule): one seed, one configuration.
// Every twentieth seed's is Legacy.
func ConfigOf(seed uint64) Config {
	if seed%20 == 0 {
		return Legacy()
	}
	r := rand.New(rand.NewPCG(seed, 0xc0f1c0f1))
	pick := func(n int) int { return r.IntN(n) }
	c := Config{
		Wrapper:    Wrappers[pick(len(Wrappers))],
		Tenancy:    Tenancies[pick(len(Tenancies))],
		KeepAlive:  KeepAlives[pick(len(KeepAlives))],
		SkewMargin: SkewMargins[pick(len(SkewMargins))],
		Strict:     StrictMix[pick(len(StrictMix))],
		Cache:      pick(2) == 1,
		Payload:    pick(2) == 1,
		Pacing:     pick(2) == 1,
		DeadLetter: pick(2) == 1,
	}
	// Drawn last, so that the draws above are those of earlier releases.
	c.FullBatchError = pick(2) == 1
	c.QueueTimeout = c.Pacing && pick(2) == 1
	if c.KeepAlive == "limit" {
		// At least 4 s beyond the margin: two 2 s leases fit before the
		// point where a skewed reader takes the record as expired.
		c.ExpiresAfter = c.SkewMargin + time.Duration(4+2*pick(3))*time.Second
		if pick(2) == 1 {
			c.KeepAliveLimit = c.ExpiresAfter
		}
	}
	// After every draw of earlier releases: their seeds draw what they drew.
	if s := Sealers[pick(len(Sealers))]; s != "off" {
		c.Sealer = s
	}
	if c.KeepAlive != "off" && pick(2) == 1 {
		c.KeepAliveEvery = 400 * time.Millisecond
	}
	// After every draw above, as they were drawn before these.
	c.SmallCache = c.Cache && pick(2) == 1
	c.StrictGuard = c.Strict > 0 && pick(2) == 1
	c.Sequential = pick(2) == 1
	c.NoFullBatchError = !c.FullBatchError && pick(2) == 1
	if c.Pacing && pick(2) == 1 {
		c.KeepVisibleEvery = 250 * time.Millisecond
	}
	// Drawn last: saved seeds keep their configurations.
	c.OneCompleteAttempt = pick(2) == 1
	c.NoSkewMargin = pick(4) == 0
	c.ShortLimit = c.KeepAlive == "limit" && c.KeepAliveLimit == 0 && pick(2) == 1
	if c.ShortLimit {
		c.KeepAliveLimit = 3 * time.Second
	}
	c.JSONChecked = c.Wrapper == "json" && pick(2) == 1
	return c
}

// String is the configuration in one line, as a failing seed prints it and
// the history's header keeps it (Profile).
func (c Config) String() string {
	s := fmt.Sprintf("wrapper=%s tenancy=%s keepalive=%s", c.Wrapper, c.Tenancy, c.KeepAlive)
	if c.KeepAlive == "limit" {
		s += fmt.Sprintf(" expires=%v limit=%v", c.ExpiresAfter, c.KeepAliveLimit)
	}
	if c.KeepAliveEvery != 0 {
		s += fmt.Sprintf(" keepalive_every=%v", c.KeepAliveEvery)
	}
	s += fmt.Sprintf(" skew_margin=%v strict=%d%% cache=%v payload=%v pacing=%v dead_letter=%v", c.SkewMargin, c.Strict, c.Cache, c.Payload, c.Pacing, c.DeadLetter)
	if c.FullBatchError {
		s += " full_batch_error=true"
	}
	if c.QueueTimeout {
		s += " queue_timeout=true"
	}
	if c.Sealer != "" {
		s += " sealer=" + c.Sealer
	}
	if c.SmallCache {
		s += " small_cache=true"
	}
	if c.StrictGuard {
		s += " strict_guard=true"
	}
	if c.Sequential {
		s += " sequential=true"
	}
	if c.NoFullBatchError {
		s += " no_full_batch_error=true"
	}
	if c.KeepVisibleEvery != 0 {
		s += fmt.Sprintf(" keep_visible_every=%v", c.KeepVisibleEvery)
	}
	if c.OneCompleteAttempt {
		s += " one_complete_attempt=true"
	}
	if c.NoSkewMargin {
		s += " no_skew_margin=true"
	}
	if c.ShortLimit {
		s += " short_limit=true"
	}
	if c.JSONChecked {
		s += " json_checked=true"
	}
	if c.Legacy {
		s += " (legacy)"
	}
	return s
}

// deadline reports whether invocations have Lambda's deadline (and are
// killed at it).
func (c Config) deadline() bool { return c.KeepAlive != "limit" }

// sealed reports whether the workers of slot seal their results.
func (c Config) sealed(slot int) bool {
	return c.Sealer == "on" || c.Sealer == "mixed" && slot != 1
}

// scoped reports whether record ids are scoped to the messages' tenants.
func (c Config) scoped() bool { return c.Tenancy == "invocation" || c.Tenancy == "group" }

// skews returns the clock offsets a skew draws from: the legacy list, or
// offsets around the skew margin (inside it, at it, beyond it).
func (c Config) skews() []time.Duration {
	if c.Legacy {
		return []time.Duration{-7 * time.Second, -3 * time.Second, -time.Second, time.Second, 3 * time.Second, 7 * time.Second, 7 * time.Second, 11 * time.Second}
	}
	m := c.margin()
	return []time.Duration{-m - 2*time.Second, -m * 3 / 5, -m / 5, m / 5, m * 3 / 5, m * 3 / 5, m * 4 / 5, m, m + 2*time.Second}
}

// margin is every guard's Config.SkewMargin.
func (c Config) margin() time.Duration {
	if c.NoSkewMargin {
		return time.Nanosecond
	}
	return c.SkewMargin
}

// defaultSkewMargin is the guard's default Config.SkewMargin.
const defaultSkewMargin = 5 * time.Second
