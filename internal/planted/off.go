//go:build !sqsonceplanted

package planted

// On reports false: this build plants nothing.
func On(string) bool { return false }

// Tagged reports that this build has the planted defects' sites: the tag
// sqsonceplanted.
const Tagged = false

// If returns off: this build plants nothing.
func If[T any](_ string, _, off T) T { return off }
