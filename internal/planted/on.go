//go:build sqsonceplanted

package planted

import (
	"fmt"
	"slices"
	"sync/atomic"
)

// Tagged reports that this build has the planted defects' sites: the tag
// sqsonceplanted.
const Tagged = true

// Names lists every planted defect.
var Names = []string{
	CompleteUnfenced, EarlyTakeover, NoSkewMargin, CompleteNotIdempotent, InProgressReplayed,
	StrictLeaseReadable, FlightIgnoresPayload, QuarantineLapses, ReleaseUnfenced, LostAsClaimed,
	LoggedAsSuccess, JSONGroupUnscoped, JSONIgnoresPayload, JSONDropsStrict, CacheIgnoresPayload, TenantUnscoped,
	StrictExtendReadable, DLQDropsGroup, KeepAliveToExpiry, CacheKeepsSealed, NoSealerReplays,
}

var enabled atomic.Pointer[map[string]bool]

// On reports whether the defect name is switched on.
func On(name string) bool {
	m := enabled.Load()
	return m != nil && (*m)[name]
}

// Enable switches on exactly the defects names (none: every defect off)
// until the returned function restores the set before it. It panics for a
// name not in [Names]. The set is the process's: tests that enable
// defects must not run in parallel.
func Enable(names ...string) (restore func()) {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		if !slices.Contains(Names, n) {
			panic(fmt.Sprintf("planted: no defect %q", n))
		}
		m[n] = true
	}
	old := enabled.Swap(&m)
	return func() { enabled.Store(old) }
}

// If returns on when the defect name is switched on, else off.
func If[T any](name string, on, off T) T {
	if On(name) {
		return on
	}
	return off
}
