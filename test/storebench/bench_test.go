package storebench_test

import (
	"context"
	"crypto/rand"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/sqsonce/sqsonce/internal/testenv/motoserver"
	"github.com/sqsonce/sqsonce/internal/testenv/pgserver"
	"github.com/sqsonce/sqsonce/internal/testenv/redisserver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
	"github.com/sqsonce/sqsonce/middleware/idempotency/dynamostore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/pgstore"
	"github.com/sqsonce/sqsonce/middleware/idempotency/redisstore"
)

var (
	moto     = motoserver.New()
	redisSrv = redisserver.New()
	pg       = pgserver.New()
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, c := range []interface{ Close() error }{moto, redisSrv, pg} {
		_ = c.Close()
	}
	os.Exit(code)
}

type store struct {
	name string
	new  func(b *testing.B) driver.Store
}

var stores = []store{
	{"dynamodb-moto", func(b *testing.B) driver.Store {
		db := moto.DynamoDB(b)
		s, err := dynamostore.New(db, motoserver.NewTable(b, db))
		if err != nil {
			b.Fatal(err)
		}
		return s
	}},
	{"redis", func(b *testing.B) driver.Store {
		rdb := redis.NewClient(&redis.Options{Addr: redisSrv.Addr(b), ContextTimeoutEnabled: true})
		b.Cleanup(func() { rdb.Close() })
		s, err := redisstore.New(context.Background(), rdb)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}},
	{"postgres", func(b *testing.B) driver.Store {
		ctx := context.Background()
		pool, err := pgxpool.New(ctx, pg.NewDatabase(b))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(pool.Close)
		s, err := pgstore.New(pool)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.CreateSchema(ctx); err != nil {
			b.Fatal(err)
		}
		return s
	}},
}

func claim(key string, now time.Time) driver.Record {
	return driver.Record{
		ID: key, Status: driver.StatusInProgress,
		ExpiresAt: now.Add(time.Hour), LeaseUntil: now.Add(time.Minute), Owner: rand.Text(),
	}
}

// warm runs a few claims and completions so that connections are open and
// scripts and statements cached before the clock starts.
func warm(b *testing.B, s driver.Store) {
	ctx := context.Background()
	for range 20 {
		now := time.Now()
		rec := claim("warm#"+rand.Text(), now)
		if _, _, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil {
			b.Fatal(err)
		}
		rec.Status, rec.Data = driver.StatusCompleted, []byte(`{"summary":"warm"}`)
		if _, err := s.Complete(ctx, rec); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkClaimComplete(b *testing.B) {
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			s := st.new(b)
			warm(b, s)
			ctx := context.Background()
			prefix := "bench#" + rand.Text() + "-"
			data := []byte(`{"summary":"a short summary of the document","tokens":[120,45]}`)
			i := 0
			for b.Loop() {
				i++
				now := time.Now()
				rec := claim(prefix+strconv.Itoa(i), now)
				if _, loaded, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil || loaded {
					b.Fatalf("Acquire: loaded=%v %v", loaded, err)
				}
				rec.Status, rec.Data = driver.StatusCompleted, data
				if _, err := s.Complete(ctx, rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkReplay(b *testing.B) {
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			s := st.new(b)
			warm(b, s)
			ctx := context.Background()
			now := time.Now()
			rec := claim("replay#"+rand.Text(), now)
			if _, _, err := s.Acquire(ctx, rec, now, driver.Takeover); err != nil {
				b.Fatal(err)
			}
			rec.Status, rec.Data = driver.StatusCompleted, []byte(`{"summary":"done"}`)
			if _, err := s.Complete(ctx, rec); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				got, loaded, err := s.Acquire(ctx, claim(rec.ID, now), now, driver.Takeover)
				if err != nil || !loaded || got.Status != driver.StatusCompleted {
					b.Fatalf("replay: %+v loaded=%v %v", got, loaded, err)
				}
			}
		})
	}
}
