package oteltrace_test

import (
	"os"
	"testing"

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
)

var moto = motoserver.New()

func TestMain(m *testing.M) { os.Exit(moto.Run(m)) }
