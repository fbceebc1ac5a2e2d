package redisserver

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/internal/testenv/testproc"
)

// Replicated is a Redis Cluster of one test's own, not shared: a primary
// holding every slot and one replica of it, for tests that fail the
// cluster over. Create it with [StartReplicated].
type Replicated struct {
	nodes [2]clusterNode
}

type clusterNode struct {
	addr string
	p    *testproc.Process
}

// StartReplicated starts two redis-server nodes in cluster mode on free
// loopback ports, without persistence, gives every slot to the first and
// makes the second its replica, and waits until both report the cluster
// ok and the replica in sync. They are stopped when t ends. When
// redis-server cannot be started, t fails under CI=true and is skipped
// otherwise.
func StartReplicated(t testing.TB) *Replicated {
	t.Helper()
	r, err := startReplicated()
	if err != nil {
		testproc.Unavailable(t, "redisserver", err, hint)
	}
	t.Cleanup(r.stop)
	return r
}

func startReplicated() (*Replicated, error) {
	path, err := exec.LookPath(Command)
	if err != nil {
		return nil, fmt.Errorf("%s not found in PATH: %w", Command, err)
	}
	r := &Replicated{}
	for i := range r.nodes {
		p, addr, err := testproc.Launch(func() (*testproc.Process, string, error) { return launchNode(path) })
		if err != nil {
			r.stop()
			return nil, err
		}
		r.nodes[i] = clusterNode{addr: addr, p: p}
	}
	if err := r.join(); err != nil {
		r.stop()
		return nil, err
	}
	return r, nil
}

// launchNode starts one redis-server in cluster mode, with no slots, and
// waits until it answers PING.
func launchNode(path string) (*testproc.Process, string, error) {
	port, err := testproc.FreePort()
	if err != nil {
		return nil, "", err
	}
	dir, err := os.MkdirTemp("", "redisserver-")
	if err != nil {
		return nil, "", err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cmd := exec.Command(path,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir,
		"--daemonize", "no", "--protected-mode", "yes", "--loglevel", "notice",
		"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"),
		"--repl-diskless-sync-delay", "0")
	p, err := testproc.Start(Command, cmd)
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	if err := p.WaitReady(startTimeout, func() error { return ping(addr) }); err != nil {
		_ = p.Stop()
		os.RemoveAll(dir)
		return nil, "", fmt.Errorf("%s on %s: %w", Command, addr, err)
	}
	go func() { <-p.Exited(); os.RemoveAll(dir) }()
	return p, addr, nil
}

// join gives every slot to the first node and makes the second its
// replica.
func (r *Replicated) join() error {
	primary, replica := r.nodes[0].addr, r.nodes[1].addr
	if _, err := command(primary, "CLUSTER ADDSLOTSRANGE 0 16383"); err != nil {
		return err
	}
	id, err := command(primary, "CLUSTER MYID")
	if err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(primary)
	if _, err := command(replica, "CLUSTER MEET "+host+" "+port); err != nil {
		return err
	}
	// CLUSTER REPLICATE needs the replica to know the primary's id.
	if err := waitFor(startTimeout, func() error {
		nodes, err := command(replica, "CLUSTER NODES")
		if err != nil {
			return err
		}
		if !strings.Contains(nodes, id) {
			return errors.New("the replica does not know the primary yet")
		}
		return nil
	}); err != nil {
		return err
	}
	if _, err := command(replica, "CLUSTER REPLICATE "+id); err != nil {
		return err
	}
	return waitFor(startTimeout, func() error { return r.settled(primary, replica) })
}

// settled reports whether primary is the master, replica its replica in
// sync, and both see the cluster ok.
func (r *Replicated) settled(primary, replica string) error {
	for _, addr := range []string{primary, replica} {
		info, err := command(addr, "CLUSTER INFO")
		if err != nil {
			return err
		}
		if !strings.Contains(info, "cluster_state:ok") {
			return fmt.Errorf("%s: cluster state is not ok", addr)
		}
	}
	if role, err := field(primary, "role"); err != nil || role != "master" {
		return fmt.Errorf("%s: role %q, want master (%v)", primary, role, err)
	}
	// Each node's view of the cluster, which a manual failover needs: the
	// primary ignores a failover request from a node it does not know as
	// its replica.
	id, err := command(primary, "CLUSTER MYID")
	if err != nil {
		return err
	}
	for _, addr := range []string{primary, replica} {
		nodes, err := command(addr, "CLUSTER NODES")
		if err != nil {
			return err
		}
		if !replicaOf(nodes, replica, id) {
			return fmt.Errorf("%s does not see %s as a replica of %s yet", addr, replica, id)
		}
	}
	info, err := command(replica, "INFO replication")
	if err != nil {
		return err
	}
	for _, want := range []string{"role:slave", "master_link_status:up", "master_sync_in_progress:0"} {
		if !strings.Contains(info, want) {
			return fmt.Errorf("%s: no %s yet", replica, want)
		}
	}
	return nil
}

// Addrs returns the nodes' addresses: the seeds of a redis.ClusterClient.
func (r *Replicated) Addrs() []string {
	return []string{r.nodes[0].addr, r.nodes[1].addr}
}

// Primary returns the address of the node that is the master now.
func (r *Replicated) Primary() (string, error) {
	for _, n := range r.nodes {
		if role, err := field(n.addr, "role"); err == nil && role == "master" {
			return n.addr, nil
		}
	}
	return "", errors.New("redisserver: no node reports itself master")
}

// Failover promotes the replica with CLUSTER FAILOVER, a manual failover
// (the primary stops taking writes, the replica applies its replication
// stream up to the primary's offset, then takes the slots over, so that no
// acknowledged write is lost), and waits up to timeout until the old
// primary is the new one's replica in sync and both see the cluster ok. It
// returns the new primary's address.
func (r *Replicated) Failover(timeout time.Duration) (string, error) {
	primary, err := r.Primary()
	if err != nil {
		return "", err
	}
	replica := r.nodes[0].addr
	if replica == primary {
		replica = r.nodes[1].addr
	}
	if _, err := command(replica, "CLUSTER FAILOVER"); err != nil {
		return "", fmt.Errorf("redisserver: failover to %s: %w", replica, err)
	}
	if err := waitFor(timeout, func() error { return r.settled(replica, primary) }); err != nil {
		return "", fmt.Errorf("redisserver: failover to %s: %w\n%s", replica, err, r.output())
	}
	return replica, nil
}

// output is the tail of each node's log.
func (r *Replicated) output() string {
	var b strings.Builder
	for _, n := range r.nodes {
		fmt.Fprintf(&b, "%s %s:\n%s\n", Command, n.addr, n.p.Output())
	}
	return b.String()
}

func (r *Replicated) stop() {
	for _, n := range r.nodes {
		if n.p != nil {
			_ = n.p.Stop()
		}
	}
}

// replicaOf reports whether the CLUSTER NODES listing nodes shows the
// node at addr as a replica of the node id.
func replicaOf(nodes, addr, id string) bool {
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) >= 4 && strings.HasPrefix(f[1], addr+"@") {
			return strings.Contains(f[2], "slave") && f[3] == id
		}
	}
	return false
}

// field returns one field of the node's INFO, such as role.
func field(addr, name string) (string, error) {
	info, err := command(addr, "INFO replication")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("no %s in INFO", name)
}

// waitFor calls ready every 20 ms until it returns nil or timeout passes,
// and returns its last error then.
func waitFor(timeout time.Duration, ready func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := ready()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready within %v: %w", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
