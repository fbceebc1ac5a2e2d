package linearize

import (
	"flag"
	"os"
	"testing"
	"time"

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/internal/testenv/pgserver"
	"github.com/sqsonce/sqsonce/internal/testenv/redisserver"
)

var (
	flagSeed    = flag.Uint64("linearize.seed", 1, "the workload's seed (0: a new one each run, printed; make verify passes 0, make test keeps the fixed default)")
	flagOps     = flag.Int("linearize.ops", 300, "operations per store (make verify passes more)")
	flagClients = flag.Int("linearize.clients", 16, "concurrent clients per store")
	flagRecords = flag.Int("linearize.records", 6, "records in use at a time")
	flagTimeout = flag.Duration("linearize.timeout", time.Minute, "porcupine's time limit per store")
	flagOut     = flag.String("linearize.out", "", "directory for porcupine's visualizations (default: the system's temporary directory)")
)

// The shared servers; the porcupine runs of Redis and PostgreSQL start
// servers of their own, which they fail over and restart.
var (
	moto        = motoserver.New()
	redisServer = redisserver.New()
	pgServer    = pgserver.New()
)

func TestMain(m *testing.M) {
	code := moto.Run(m)
	_ = redisServer.Close()
	_ = pgServer.Close()
	os.Exit(code)
}
