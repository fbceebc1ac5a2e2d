package idempotency

import (
	"math"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// cacheEntryOverhead is what a cached record costs besides its strings and
// result: the driver.Record, the map entry and the list element, rounded up.
const cacheEntryOverhead = 256

// cache holds completed records in process, bounded by the bytes they hold
// ([Config.CacheBytes]): adding one evicts the least recently used until
// the total fits. It is safe for concurrent use.
type cache struct {
	mu    sync.Mutex
	lru   *simplelru.LRU[string, driver.Record]
	bytes int // held now
	limit int
}

func newCache(limit int) *cache {
	c := &cache{limit: limit}
	// Bounded by bytes, not entries: the count limit is never reached
	// (every entry costs at least cacheEntryOverhead bytes).
	c.lru, _ = simplelru.NewLRU(math.MaxInt, func(_ string, rec driver.Record) { c.bytes -= cacheCost(rec) })
	return c
}

// cacheCost is the bytes a cached record counts for.
func cacheCost(rec driver.Record) int {
	return cacheEntryOverhead + len(rec.ID) + len(rec.Data) + len(rec.Validation) + len(rec.Owner) + len(rec.Status)
}

// get returns the record cached under id, marking it recently used.
func (c *cache) get(id string) (driver.Record, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Get(id)
}

// add caches rec, unless it alone exceeds the limit, evicting the least
// recently used records until the total fits.
func (c *cache) add(rec driver.Record) {
	cost := cacheCost(rec)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Remove(rec.ID) // an update: its old cost is given back
	if cost > c.limit {
		return
	}
	c.lru.Add(rec.ID, rec)
	c.bytes += cost
	for c.bytes > c.limit {
		c.lru.RemoveOldest()
	}
}

// remove drops the record cached under id.
func (c *cache) remove(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Remove(id)
}

// size returns the number of records and the bytes they count for.
func (c *cache) size() (records, bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len(), c.bytes
}
