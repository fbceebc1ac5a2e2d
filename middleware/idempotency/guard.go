package idempotency

// Guard runs operations at most once per idempotency key. Create one with
// [New] at start-up and share it: it is safe for concurrent use.
type Guard struct {
	cfg Config
	*calls
}

// New fills in cfg's defaults, validates it and returns a Guard. It
// reports every problem of the configuration at once.
func New(cfg Config) (*Guard, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	g := &Guard{cfg: cfg, calls: &calls{flights: make(map[flightID]*flight)}}
	if cfg.CacheBytes > 0 {
		g.cache = newCache(cfg.CacheBytes)
	}
	return g, nil
}
