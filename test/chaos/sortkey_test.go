package chaos

import "testing"

// TestShortProfileSortKey runs the short profile on a table with a sort key
// (see TableKey), the layout of a table shared with Powertools'
// sortKeyAttr: every fault, the same account.
func TestShortProfileSortKey(t *testing.T) {
	p := Short(1)
	p.SortKey = true
	testShortProfile(t, p)
}
