package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/sqsonce/sqsonce/internal/inflate"
	"github.com/sqsonce/sqsonce/middleware/idempotency/driver"
)

// The flags of a stored result: the fields and values dynamostore writes,
// with one meaning. data_encoding "gzip": data holds the result
// gzip-compressed; data_omitted "true": the result was too large to store,
// and every delivery gets none.
const (
	encodingGzip = "gzip"
	omittedTrue  = "true"
)

// maxInflated bounds the size of a decompressed result, as dynamostore's.
const maxInflated = 64 << 20

// Placements of a result, as completeScript names them.
const (
	placeNone    = "none"    // no result (Data nil)
	placePlain   = "plain"   // data holds the result
	placeGzip    = "gzip"    // data holds it gzip-compressed
	placeOmitted = "omitted" // too large: data_omitted is set
)

// place decides how data is stored: plain, compressed, or left out when it
// does not fit in WithMaxData even compressed. It returns the placement
// and the bytes to write.
func (s *Store) place(ctx context.Context, id string, data []byte) (string, []byte) {
	where, stored := s.placement(data)
	if where != placeOmitted {
		return where, stored
	}
	s.logger.LogAttrs(ctx, slog.LevelError, "redisstore: record completed WITHOUT its result: the result does not fit "+
		"in WithMaxData, even compressed; later deliveries of the key get an empty result, the operation is not run again",
		slog.String("record_id", id), slog.Int("result_bytes", len(data)), slog.Int("max_bytes", s.maxData))
	return placeOmitted, nil
}

// placement is place's decision, without its log line.
func (s *Store) placement(data []byte) (string, []byte) {
	if data == nil {
		return placeNone, nil
	}
	plainFits := len(data) <= s.maxData
	if len(data) > s.compressAbove || !plainFits {
		if z := inflate.Gzip(data); len(z) < len(data) && len(z) <= s.maxData {
			return placeGzip, z
		}
	}
	if plainFits {
		return placePlain, data
	}
	return placeOmitted, nil
}

var _ driver.DataFitter = (*Store)(nil)

// FitsData implements [driver.DataFitter]: whether Complete stores rec.Data
// whole, as it is or compressed, as place decides (without its log line).
// A guard with a Sealer then compresses a result before sealing it only
// where its seal would be left out.
func (s *Store) FitsData(rec driver.Record) bool {
	if len(rec.Data) <= s.maxData {
		return true
	}
	where, _ := s.placement(rec.Data)
	return where != placeOmitted
}

// decode reads a record from its hash's fields, as HGETALL lists them.
// Errors name the field, never its value.
func decode(id string, kv []string) (driver.Record, error) {
	if len(kv)%2 != 0 {
		return driver.Record{}, fmt.Errorf("redisstore: record has %d field names and values", len(kv))
	}
	rec := driver.Record{ID: id}
	var errs []error
	num := func(name, v string) int64 {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("redisstore: field %s is not an integer (%d bytes)", name, len(v)))
		}
		return n
	}
	var data, encoding, omitted *string
	for i := 0; i < len(kv); i += 2 {
		name, v := kv[i], kv[i+1]
		switch name {
		case driver.AttrStatus:
			rec.Status = driver.Status(v)
		case driver.AttrExpiration:
			rec.ExpiresAt = time.Unix(num(name, v), 0)
		case driver.AttrLeaseExpiry:
			rec.LeaseUntil = time.UnixMilli(num(name, v))
		case driver.AttrData:
			data = &kv[i+1]
		case driver.AttrDataEncoding:
			encoding = &kv[i+1]
		case driver.AttrDataOmitted:
			omitted = &kv[i+1]
		case driver.AttrValidation:
			rec.Validation = v
		case driver.AttrOwner:
			rec.Owner = v
		case driver.AttrQuarantined:
			rec.Quarantined = time.UnixMilli(num(name, v))
		case driver.AttrStrictLease:
			rec.StrictLease = time.UnixMilli(num(name, v))
		}
	}
	if rec.Status != driver.StatusInProgress && rec.Status != driver.StatusCompleted {
		errs = append(errs, fmt.Errorf("redisstore: record has no status INPROGRESS or COMPLETED (field %s, %d bytes)",
			driver.AttrStatus, len(rec.Status)))
	}
	d, err := decodeData(data, encoding, omitted)
	if err != nil {
		errs = append(errs, err)
	}
	rec.Data = d
	return rec, errors.Join(errs...)
}

// decodeData returns the stored result from the fields data,
// data_encoding and data_omitted (nil when absent).
func decodeData(data, encoding, omitted *string) ([]byte, error) {
	if omitted != nil {
		if *omitted != omittedTrue {
			return nil, fmt.Errorf("redisstore: field %s is not %q", driver.AttrDataOmitted, omittedTrue)
		}
		return nil, nil
	}
	if data == nil {
		if encoding != nil {
			return nil, fmt.Errorf("redisstore: field %s without field %s", driver.AttrDataEncoding, driver.AttrData)
		}
		return nil, nil
	}
	if encoding == nil {
		return []byte(*data), nil
	}
	if *encoding != encodingGzip {
		return nil, fmt.Errorf("redisstore: field %s names an unknown encoding (%d bytes)", driver.AttrDataEncoding, len(*encoding))
	}
	out, err := inflate.Gunzip([]byte(*data), maxInflated)
	if err != nil {
		return nil, fmt.Errorf("redisstore: field %s: gzip result: %w", driver.AttrData, err)
	}
	return out, nil
}
