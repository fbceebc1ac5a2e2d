// Package matrix runs the redelivery cases (several keys, each twice; a
// re-send with a new message id; two tenants with one key; a duplicate
// while the first runs; a batch holding a key twice; a claim whose worker
// died; a poison message; with a Sealer, a reader without it) in every
// row of an all-pairs matrix over the guard's configuration (wrapper ×
// tenancy × keep-alive × strict × cache × payload × store × format × the
// batch handler's options × sealer × dead-letter × tracing × replay hook ×
// the store's options × expiry, skew margin and completion attempts) on
// the real stores: moto's DynamoDB (with and without a sort key), redis-server,
// PostgreSQL and memstore. Every pair of values of two dimensions is in at
// least one row, but the pairs the matrix excludes: each exclusion says
// why, and one the library refuses is checked to be refused. It is test
// support, not part of the library.
package matrix

import "fmt"

// Dim is one dimension of the matrix and its values.
type Dim struct {
	Name   string
	Values []string
}

// Row is one configuration: a value index per dimension.
type Row []int

// Value names one value of a dimension.
type Value struct{ Dim, Value string }

// Exclusion is a pair of values of two dimensions that no row holds, and
// why: a configuration the library refuses (Refused: the matrix checks
// that it is refused), or one outside the scope of a value.
type Exclusion struct {
	A, B    Value
	Refused bool
	Why     string
}

// space indexes the values of every dimension globally, for the pairs.
type space struct {
	dims []Dim
	off  []int    // the global index of each dimension's first value
	dim  []int    // the dimension of each global index
	excl [][]bool // excl[x][y]: the pair of global values x, y is excluded
}

func newSpace(dims []Dim, excl []Exclusion) *space {
	s := &space{dims: dims}
	n := 0
	for i, d := range dims {
		s.off = append(s.off, n)
		for range d.Values {
			s.dim = append(s.dim, i)
		}
		n += len(d.Values)
	}
	s.excl = make([][]bool, n)
	for x := range s.excl {
		s.excl[x] = make([]bool, n)
	}
	for _, e := range excl {
		x, y := s.index(e.A), s.index(e.B)
		if s.dim[x] == s.dim[y] {
			panic(fmt.Sprintf("matrix: exclusion %v & %v names one dimension twice", e.A, e.B))
		}
		s.excl[x][y], s.excl[y][x] = true, true
	}
	return s
}

// index is v's global index; it panics on a value no dimension has.
func (s *space) index(v Value) int {
	for i, d := range s.dims {
		if d.Name != v.Dim {
			continue
		}
		for a, name := range d.Values {
			if name == v.Value {
				return s.off[i] + a
			}
		}
	}
	panic(fmt.Sprintf("matrix: no value %s=%s", v.Dim, v.Value))
}

// value is the global index of row r's value of dimension i.
func (s *space) value(r Row, i int) int { return s.off[i] + r[i] }

// Pairs returns rows in which every pair of values of two dimensions that
// excl does not exclude appears at least once, and no excluded pair does.
// Greedily, as AETG does: each row is the best of the candidates built
// from each pair not yet covered, every other dimension then taking the
// value (not excluded with those taken) that covers the most new pairs
// with them. It is deterministic, and panics when a pair cannot be put in
// a row without an excluded one.
func Pairs(dims []Dim, excl []Exclusion) []Row {
	s := newSpace(dims, excl)
	n := len(s.dim)
	uncovered := make([][]bool, n)
	left := 0
	for x := range uncovered {
		uncovered[x] = make([]bool, n)
		for y := range n {
			if s.dim[x] != s.dim[y] && !s.excl[x][y] {
				uncovered[x][y] = true
				if x < y {
					left++
				}
			}
		}
	}
	var rows []Row
	for left > 0 {
		demand := make([]int, n) // the uncovered pairs each value is in
		for x := range n {
			for y := range n {
				if uncovered[x][y] {
					demand[x]++
				}
			}
		}
		var best Row
		bestN := 0
		for x := range n {
			for y := x + 1; y < n; y++ {
				if !uncovered[x][y] {
					continue
				}
				r := s.build(x, y, uncovered, demand)
				if r == nil {
					continue
				}
				if k := s.newPairs(r, uncovered); k > bestN {
					best, bestN = r, k
				}
			}
		}
		if best == nil {
			panic("matrix: no row can hold the pairs left without an excluded pair")
		}
		rows = append(rows, best)
		for i := range best {
			for j := i + 1; j < len(best); j++ {
				x, y := s.value(best, i), s.value(best, j)
				if uncovered[x][y] {
					uncovered[x][y], uncovered[y][x] = false, false
					left--
				}
			}
		}
	}
	return rows
}

// build returns the row that holds the global values x and y and, in
// every other dimension in order, the value not excluded with those taken
// that covers the most uncovered pairs with them (then the one in the
// most uncovered pairs, then the first); nil when a dimension has no value
// left.
func (s *space) build(x, y int, uncovered [][]bool, demand []int) Row {
	r := make(Row, len(s.dims))
	taken := []int{x, y}
	r[s.dim[x]], r[s.dim[y]] = x-s.off[s.dim[x]], y-s.off[s.dim[y]]
	for i, d := range s.dims {
		if i == s.dim[x] || i == s.dim[y] {
			continue
		}
		bestV, bestN, bestD := -1, -1, -1
	values:
		for a := range d.Values {
			v := s.off[i] + a
			k := 0
			for _, t := range taken {
				if s.excl[v][t] {
					continue values
				}
				if uncovered[v][t] {
					k++
				}
			}
			if k > bestN || k == bestN && demand[v] > bestD {
				bestV, bestN, bestD = a, k, demand[v]
			}
		}
		if bestV < 0 {
			return nil
		}
		r[i] = bestV
		taken = append(taken, s.off[i]+bestV)
	}
	return r
}

func (s *space) newPairs(r Row, uncovered [][]bool) int {
	n := 0
	for i := range r {
		for j := i + 1; j < len(r); j++ {
			if uncovered[s.value(r, i)][s.value(r, j)] {
				n++
			}
		}
	}
	return n
}

// Missing returns the pairs of values that excl does not exclude and no
// row covers, as "dim=value & dim=value".
func Missing(dims []Dim, excl []Exclusion, rows []Row) []string {
	s := newSpace(dims, excl)
	var out []string
	for i := range dims {
		for j := i + 1; j < len(dims); j++ {
			for a := range dims[i].Values {
				for b := range dims[j].Values {
					if s.excl[s.off[i]+a][s.off[j]+b] {
						continue
					}
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

// Violations returns, for each row that holds an excluded pair, the row's
// index and the pair, as "row N: dim=value & dim=value".
func Violations(dims []Dim, excl []Exclusion, rows []Row) []string {
	s := newSpace(dims, excl)
	var out []string
	for n, r := range rows {
		for i := range r {
			for j := i + 1; j < len(r); j++ {
				if s.excl[s.value(r, i)][s.value(r, j)] {
					out = append(out, fmt.Sprintf("row %d: %s=%s & %s=%s", n+1, dims[i].Name, dims[i].Values[r[i]], dims[j].Name, dims[j].Values[r[j]]))
				}
			}
		}
	}
	return out
}
