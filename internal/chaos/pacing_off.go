package chaos

import (
	"errors"

	"github.com/sqsonce/sqsonce/middleware/batch"
)

// pace turns on paced redelivery in opts when the worker is configured for
// it.
func (w *worker) pace(_ *batch.Options) error {
	if w.cfg.Pacing {
		return errors.New("chaos: pacing is not available in this build")
	}
	return nil
}
