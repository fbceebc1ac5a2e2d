package metrics

import (
	"errors"
	"strings"
)

// maxNamespace is the longest CloudWatch namespace, in characters.
const maxNamespace = 255

// CheckNamespace returns nil when CloudWatch takes metrics into the
// namespace ns, else an error saying why, without quoting ns: an empty
// namespace, one beginning with "AWS/" (reserved for AWS) or ':', or one
// longer than 255 characters is refused, and CloudWatch would drop every
// metric line written into it (the alarms on them would watch nothing).
// [Config.Namespace]'s empty default is [DefaultNamespace], which passes.
func CheckNamespace(ns string) error {
	switch {
	case ns == "":
		return errors.New("metrics: the namespace is empty")
	case strings.HasPrefix(ns, "AWS/"):
		return errors.New("metrics: the namespace begins with AWS/, which is reserved for AWS")
	case strings.HasPrefix(ns, ":"):
		return errors.New("metrics: the namespace begins with ':'")
	case len([]rune(ns)) > maxNamespace:
		return errors.New("metrics: the namespace is longer than 255 characters")
	}
	return nil
}
