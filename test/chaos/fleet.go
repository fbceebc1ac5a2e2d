package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/sqsonce/sqsonce/test/history"
)

// incarnation is one worker process, from start to exit.
type incarnation struct {
	Name   string // "w{slot}.{generation}"
	Killed bool   // it ended by SIGKILL (ours, its own, or its watchdog's)
	Random bool   // the harness killed it at a random moment
}

// fleet keeps Workers worker processes running: one slot each, restarted as
// a new incarnation whenever it dies (as Lambda starts a new execution
// environment), until stop.
type fleet struct {
	bin  string
	dir  string
	base WorkerConfig
	skew time.Duration // each incarnation's clock is off by up to this
	kind func(slot int) history.Reader
	hist *history.Writer // the harness's history: kills and clock offsets

	mu       sync.Mutex
	procs    []*proc // the live incarnation of each slot
	incs     []incarnation
	stopping bool
	errs     []error
	wg       sync.WaitGroup
}

type proc struct {
	name   string
	cmd    *exec.Cmd
	done   chan struct{}
	random bool // set under fleet.mu before a random kill
}

func newFleet(bin, dir string, base WorkerConfig, p Profile, hist *history.Writer) *fleet {
	return &fleet{bin: bin, dir: dir, base: base, skew: p.ClockSkew, kind: p.Reader, hist: hist, procs: make([]*proc, p.Workers)}
}

func (f *fleet) start(ctx context.Context) {
	for i := range f.procs {
		f.wg.Go(func() { f.slot(ctx, i) })
	}
}

// slot runs the incarnations of slot i one after another.
func (f *fleet) slot(ctx context.Context, i int) {
	for gen := 0; ctx.Err() == nil; gen++ {
		f.mu.Lock()
		if f.stopping {
			f.mu.Unlock()
			return
		}
		p, err := f.spawn(i, gen)
		if err != nil {
			f.errs = append(f.errs, err)
			f.mu.Unlock()
			return
		}
		f.procs[i] = p
		f.mu.Unlock()

		<-p.done
		inc := incarnation{Name: p.name}
		if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && (ws.Signal() == syscall.SIGKILL || ws.Signal() == syscall.SIGUSR1) { // SIGUSR1: killed before it set up its handler
			inc.Killed = true
		}
		f.mu.Lock()
		inc.Random = p.random
		f.incs = append(f.incs, inc)
		f.procs[i] = nil
		if !inc.Killed && !f.stopping && p.cmd.ProcessState.ExitCode() != 0 {
			f.errs = append(f.errs, fmt.Errorf("chaos: worker %s exited with %v (see %s)", p.name, p.cmd.ProcessState, filepath.Join(f.dir, p.name+".err")))
		}
		f.mu.Unlock()
	}
}

// spawn starts incarnation gen of slot i in its own process group. Called
// with f.mu held.
func (f *fleet) spawn(i, gen int) (*proc, error) {
	name := fmt.Sprintf("w%d.%d", i, gen)
	cfg := f.base
	cfg.Name = name
	cfg.Seed = f.base.Seed*1_000_003 + uint64(i)*10_007 + uint64(gen)
	cfg.Reader = f.kind(i)
	if f.skew > 0 && cfg.Reader != history.ReaderPowertoolsTS {
		rng := rand.New(rand.NewPCG(cfg.Seed, 0xc10c))
		cfg.ClockOffset = time.Duration(rng.Int64N(int64(2*f.skew)+1)) - f.skew
		if err := f.hist.Write(history.Event{Ev: history.KindFault, Fault: history.FaultClockSkew, Target: name, Off: int64(cfg.ClockOffset)}); err != nil {
			return nil, err
		}
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(f.dir, name+".json")
	if err := os.WriteFile(cfgPath, b, 0o644); err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	stderr, err := os.Create(filepath.Join(f.dir, name+".err"))
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	defer stderr.Close()
	cmd := exec.Command(f.bin, "-config", cfgPath)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("chaos: start worker %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// kill kills slot i's live incarnation, if any, with its process group,
// and waits for it to die.
func (f *fleet) kill(i int) {
	f.mu.Lock()
	p := f.procs[i]
	if p == nil || f.stopping {
		f.mu.Unlock()
		return
	}
	p.random = true
	f.mu.Unlock()
	// SIGUSR1: the worker SIGKILLs its group once its store calls in
	// flight are recorded (at most killGrace), so that a write the store
	// applied is in the history, and records the kill itself, when it
	// happens; SIGKILL, recorded here, if it has not died by then.
	_ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGUSR1)
	select {
	case <-p.done:
		return
	case <-time.After(killGrace + time.Second):
	}
	_ = f.hist.Write(history.Event{Ev: history.KindFault, Fault: history.FaultProcKill, Target: p.name, Class: killRandom})
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
	}
}

// stop ends every worker: SIGTERM first (a worker finishes the batch in
// hand and exits), SIGKILL to the process group after grace. It returns the
// incarnations and the errors seen.
func (f *fleet) stop(grace time.Duration) ([]incarnation, error) {
	f.mu.Lock()
	f.stopping = true
	live := make([]*proc, 0, len(f.procs))
	for _, p := range f.procs {
		if p != nil {
			live = append(live, p)
		}
	}
	f.mu.Unlock()
	for _, p := range live {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	}
	end := time.Now().Add(grace)
	for _, p := range live {
		select {
		case <-p.done:
		case <-time.After(time.Until(end)):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	}
	f.wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	var err error
	if len(f.errs) > 0 {
		err = f.errs[0]
	}
	return f.incs, err
}
