package redisstore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

var _ driver.Inspector = (*Store)(nil)

// scanCount is the COUNT hint of each SCAN step.
const scanCount = 200

// Inspect implements [driver.Inspector.Inspect] with one HGETALL. A
// release marker is no record.
func (s *Store) Inspect(ctx context.Context, id string) (driver.StoredRecord, error) {
	if id == "" {
		return driver.StoredRecord{}, storeError("inspect", "", errors.New("redisstore: empty record id"))
	}
	fields, err := s.rdb.HGetAll(ctx, s.RedisKey(id)).Result()
	if err != nil {
		if strings.HasPrefix(err.Error(), "WRONGTYPE") {
			err = fmt.Errorf("redisstore: the key holds a value that is not a hash, which this store never writes: %w", err)
		}
		return driver.StoredRecord{}, storeError("inspect", id, err)
	}
	if isMarker(fields) {
		return driver.StoredRecord{}, storeError("inspect", id, driver.ErrNotFound)
	}
	return inspected(id, fields)
}

// List implements [driver.Inspector.List] with SCAN over the hashes
// whose keys start with the store's key prefix (and opts.Prefix), and one
// HGETALL per key. Through a *redis.ClusterClient it scans every master in
// turn. Release markers are left out; a key deleted while the listing runs
// may be missed, and one written meanwhile may or may not be listed (as
// SCAN guarantees).
func (s *Store) List(ctx context.Context, opts driver.ListOptions) iter.Seq2[driver.StoredRecord, error] {
	return func(yield func(driver.StoredRecord, error) bool) {
		nodes, err := s.nodes(ctx)
		if err != nil {
			yield(driver.StoredRecord{}, storeError("list", "", err))
			return
		}
		match := globEscape(s.prefix+opts.Prefix) + "*"
		for _, node := range nodes {
			var cursor uint64
			for {
				keys, next, err := node.ScanType(ctx, cursor, match, scanCount, "hash").Result()
				if err != nil {
					yield(driver.StoredRecord{}, storeError("list", "", err))
					return
				}
				for _, key := range keys {
					fields, err := s.rdb.HGetAll(ctx, key).Result()
					if err != nil {
						yield(driver.StoredRecord{}, storeError("list", "", err))
						return
					}
					if isMarker(fields) {
						continue // released, or deleted since the SCAN
					}
					rec, err := inspected(strings.TrimPrefix(key, s.prefix), fields)
					if opts.Status != "" && rec.Status != opts.Status && err == nil {
						continue
					}
					if !yield(rec, err) {
						return
					}
				}
				if cursor = next; cursor == 0 {
					break
				}
			}
		}
	}
}

// scanner is the SCAN of one node.
type scanner interface {
	ScanType(ctx context.Context, cursor uint64, match string, count int64, keyType string) *redis.ScanCmd
}

// nodes returns the clients to SCAN: the client, or a Cluster's masters.
func (s *Store) nodes(ctx context.Context) ([]scanner, error) {
	c, ok := s.rdb.(*redis.ClusterClient)
	if !ok {
		return []scanner{s.rdb}, nil
	}
	var (
		mu    sync.Mutex
		nodes []scanner
	)
	err := c.ForEachMaster(ctx, func(_ context.Context, node *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		nodes = append(nodes, node)
		return nil
	})
	return nodes, err
}

// isMarker reports whether a hash's fields are no record: none (the key
// is gone), or only a release marker.
func isMarker(fields map[string]string) bool {
	_, hasStatus := fields[driver.AttrStatus]
	return !hasStatus
}

// inspected decodes a record's fields, as the store's other reads do, with
// how its result is stored.
func inspected(id string, fields map[string]string) (driver.StoredRecord, error) {
	kv := make([]string, 0, 2*len(fields))
	for k, v := range fields {
		kv = append(kv, k, v)
	}
	rec, err := decode(id, kv)
	out := driver.StoredRecord{Record: rec}
	out.Size = len(fields[driver.AttrData])
	out.Encoding = fields[driver.AttrDataEncoding]
	out.Omitted = fields[driver.AttrDataOmitted] == omittedTrue
	if err != nil {
		return out, storeError("inspect", id, err)
	}
	return out, nil
}

// globEscape quotes the characters SCAN's MATCH pattern gives a meaning,
// byte by byte: a prefix that is not valid UTF-8 stays as it is.
func globEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\', '^', '-':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
