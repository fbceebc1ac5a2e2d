package chaos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCallLog writes entries, cuts the last line short as a SIGKILL during a
// write could, and reads back every whole entry; a bad line in the middle is
// an error.
func TestCallLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.log")
	l, err := openLog(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.write(entry{Ev: evRecv, Msg: "m1", Key: "k", N: 1}, entry{Ev: evOpStart, Msg: "m1", Key: "k", Run: "w-1"}); err != nil {
		t.Fatal(err)
	}
	if err := l.close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"t":1,"ev":"op_do`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	es, err := readLog(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[0].Ev != evRecv || es[1].Run != "w-1" || es[0].T == 0 {
		t.Errorf("read %+v", es)
	}
	if _, err := readLog(strings.NewReader(string(b) + "\n" + `{"t":2,"ev":"ack"}` + "\n")); err == nil {
		t.Error("a bad line before the last was accepted")
	}
}
