package jsonkey

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// dupCorpus is text with objects small and large, their names often
// repeated, escaped or not, and now and then a syntax error after them.
func dupCorpus(count int) []string {
	r := rand.New(rand.NewPCG(1, 2))
	names := []string{`"a"`, `"\u0061"`, `"b"`, `"c"`, `"Σ"`, `"\u03a3"`, `"ab"`, `"a\"b"`, `"\ud83d\ude00"`, `"😀"`}
	var value func(depth int) string
	value = func(depth int) string {
		if depth > 2 || r.IntN(10) < 4 {
			return []string{"1", `"x"`, "null", "[]", "{}", `["a",{"a":1}]`}[r.IntN(6)]
		}
		n := r.IntN(5)
		if depth == 0 || r.IntN(4) == 0 {
			n = 10 + r.IntN(40) // around smallObject and beyond
		}
		unique := r.IntN(2) == 0
		members := make([]string, n)
		for i := range members {
			name := names[r.IntN(len(names))]
			if unique && r.IntN(20) != 0 {
				name = `"n` + strconv.Itoa(i) + `"`
			}
			members[i] = name + ":" + value(depth+1)
		}
		return "{" + strings.Join(members, ",") + "}"
	}
	texts := make([]string, count)
	for k := range texts {
		t := value(0)
		if r.IntN(8) == 0 {
			at := r.IntN(len(t))
			t = t[:at] + "?" + t[at+1:]
		}
		texts[k] = t
	}
	return texts
}

// TestDuplicateNamesUnderCollisions: names are told apart by their hashes
// only until two collide, then by the names themselves: with every hash
// colliding, Check and Select find the same duplicates at the same offsets
// as with the real hash.
func TestDuplicateNamesUnderCollisions(t *testing.T) {
	result := func(text string) string {
		_, serr := Select(text, [][]string{{"a"}, {"b", "c"}, {"n3"}})
		return fmt.Sprint(Check(text), "; ", serr)
	}
	texts := dupCorpus(1500)
	want := make([]string, len(texts))
	dups := 0
	for k, text := range texts {
		want[k] = result(text)
		if errors.Is(Check(text), ErrDuplicateName) {
			dups++
		}
	}
	if dups < len(texts)/4 || dups > len(texts)*3/4 {
		t.Fatalf("%d of %d texts name a member twice: the corpus tests too little", dups, len(texts))
	}
	real := nameHash
	defer func() { nameHash = real }()
	for name, h := range map[string]func(string) uint64{
		"one hash":     func(string) uint64 { return 7 },
		"three hashes": func(s string) uint64 { return uint64(len(s) % 3) },
	} {
		nameHash = h
		for k, text := range texts {
			if got := result(text); got != want[k] {
				t.Errorf("%s: %.80s: %s, want %s", name, text, got, want[k])
			}
		}
	}
}

// TestDuplicateNameLarge: in an object of more than smallObject members,
// the duplicate reported is the second member of the least name named
// twice, whatever the hashes.
func TestDuplicateNameLarge(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	for i := range 20 {
		b.WriteString(`"m` + strconv.Itoa(i) + `":0,`)
	}
	b.WriteString(`"z":1,"b":2,"\u0062":3,"z":4,"a":5,"a":6}`)
	text := b.String()
	want := strings.LastIndex(text, `"a"`)
	for _, h := range []func(string) uint64{nameHash, func(string) uint64 { return 0 }} {
		real := nameHash
		nameHash = h
		err := Check(text)
		nameHash = real
		if e, ok := errors.AsType[*Error](err); !ok || e.Kind != ErrDuplicateName || e.Offset != want {
			t.Errorf("Check: %v, want %v at byte %d", err, ErrDuplicateName, want)
		}
	}
}

// TestCheckMemory: Check keeps 8 bytes a member name of the objects it is
// in, not the name (16): a wide object of 1 MiB costs at most 2.5 times
// its size (about 1.4 times; 2 under -race), not 4.8 times as it did.
func TestCheckMemory(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"k":{`)
	for i := 0; b.Len() < 1<<20-40; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"Σk` + strconv.Itoa(i) + `":` + strconv.Itoa(i%10))
	}
	b.WriteString("}}")
	text := b.String()
	if err := Check(text); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := Check(text); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	got, limit := after.TotalAlloc-before.TotalAlloc, uint64(5*len(text)/2)
	t.Logf("Check of a wide object of %d bytes: %d bytes allocated", len(text), got)
	if got > limit {
		t.Errorf("Check of a wide object of %d bytes allocated %d bytes, over %d", len(text), got, limit)
	}
}
