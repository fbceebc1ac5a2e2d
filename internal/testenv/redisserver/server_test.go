package redisserver_test

import (
	"bufio"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/internal/testenv/redisserver"
)

var srv = redisserver.New()

func TestMain(m *testing.M) { os.Exit(srv.Run(m)) }

func TestServerAnswersOnLoopback(t *testing.T) {
	addr := srv.Addr(t)
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv(redisserver.EnvAddr) == "" && host != "127.0.0.1" {
		t.Errorf("server listens on %s, want 127.0.0.1", host)
	}
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("SET redisserver-test hello\r\nGET redisserver-test\r\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	var got []string
	for range 3 {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.TrimSpace(line))
	}
	if want := []string{"+OK", "$5", "hello"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("SET then GET answered %q, want %q", got, want)
	}
}
