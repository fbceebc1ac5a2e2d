// Package matrix runs the redelivery cases (the same message twice, a
// re-send with a new message id, two tenants with one key, a duplicate
// while the first runs, a poison message; with a Sealer, a reader without
// it) in every row of an all-pairs matrix over the guard's configuration
// (wrapper × tenancy × keep-alive × strict × cache × payload × store ×
// batch options × sealer) on the real stores: moto's DynamoDB,
// redis-server, PostgreSQL and memstore. Every pair of values of two
// dimensions is in at least one row. It is test support, not part of the
// library.
package matrix

// Dim is one dimension of the matrix and its values.
type Dim struct {
	Name   string
	Values []string
}

// Row is one configuration: a value index per dimension.
type Row []int

// Pairs returns rows in which every pair of values of two dimensions
// appears at least once: greedily, each row the first of all
// configurations (in order) that covers the most pairs not yet covered.
// It is deterministic.
func Pairs(dims []Dim) []Row {
	uncovered := map[[4]int]bool{}
	for i := range dims {
		for j := i + 1; j < len(dims); j++ {
			for a := range dims[i].Values {
				for b := range dims[j].Values {
					uncovered[[4]int{i, a, j, b}] = true
				}
			}
		}
	}
	all := []Row{{}}
	for _, d := range dims {
		var next []Row
		for _, r := range all {
			for v := range d.Values {
				next = append(next, append(append(Row{}, r...), v))
			}
		}
		all = next
	}
	var rows []Row
	for len(uncovered) > 0 {
		best, bestN := Row(nil), 0
		for _, r := range all {
			if n := newPairs(r, uncovered); n > bestN {
				best, bestN = r, n
			}
		}
		rows = append(rows, best)
		for i := range best {
			for j := i + 1; j < len(best); j++ {
				delete(uncovered, [4]int{i, best[i], j, best[j]})
			}
		}
	}
	return rows
}

func newPairs(r Row, uncovered map[[4]int]bool) int {
	n := 0
	for i := range r {
		for j := i + 1; j < len(r); j++ {
			if uncovered[[4]int{i, r[i], j, r[j]}] {
				n++
			}
		}
	}
	return n
}

// Missing returns the pairs of values no row covers, as "dim=value &
// dim=value".
func Missing(dims []Dim, rows []Row) []string {
	var out []string
	for i := range dims {
		for j := i + 1; j < len(dims); j++ {
			for a := range dims[i].Values {
				for b := range dims[j].Values {
					found := false
					for _, r := range rows {
						if r[i] == a && r[j] == b {
							found = true
							break
						}
					}
					if !found {
						out = append(out, dims[i].Name+"="+dims[i].Values[a]+" & "+dims[j].Name+"="+dims[j].Values[b])
					}
				}
			}
		}
	}
	return out
}
