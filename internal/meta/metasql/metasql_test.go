package metasql

import (
	"math"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

func TestTimesAreStoredTimes(t *testing.T) {
	loc := time.FixedZone("x", 3600)
	for _, in := range []time.Time{
		{}, time.Unix(0, 0), time.Unix(0, 1), time.Date(2026, 1, 2, 3, 4, 5, 6, loc), time.Now(),
		time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		got, want := FromNanos(ToNanos(in)), meta.StoredTime(in)
		if got != want {
			t.Errorf("FromNanos(ToNanos(%v)) = %v, meta.StoredTime = %v", in, got, want)
		}
	}
	if ToNanos(time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)) != math.MaxInt64 || ToNanos(time.Time{}) != 0 {
		t.Error("ToNanos does not clamp, or encodes the zero time")
	}
}

func TestValues(t *testing.T) {
	for _, c := range []struct {
		ph       PH
		from, to int
		want     string
	}{{Question, 1, 3, "?1, ?2, ?3"}, {Dollar, 2, 2, "$2"}, {Dollar, 1, 0, ""}} {
		if got := values(c.ph, c.from, c.to); got != c.want {
			t.Errorf("values(%d, %d) = %q, want %q", c.from, c.to, got, c.want)
		}
	}
}

func TestPending(t *testing.T) {
	ms := []Migration{{Version: 1}, {Version: 2}, {Version: 5}}
	got, err := Pending("x", ms, []int64{2})
	if err != nil || len(got) != 2 || got[0].Version != 1 || got[1].Version != 5 {
		t.Errorf("Pending = %+v, %v", got, err)
	}
	if got, err := Pending("x", ms, []int64{1, 2, 5}); err != nil || len(got) != 0 {
		t.Errorf("Pending of an up-to-date database = %+v, %v", got, err)
	}
	if _, err := Pending("x", ms, []int64{1, 9}); !errcode.Is(err, errcode.Internal) {
		t.Errorf("Pending of a newer database = %v, want internal", err)
	}
}

func TestListUploadsQuery(t *testing.T) {
	key := func(k string) any { return k }
	created := int64(7)
	for _, c := range []struct {
		name   string
		opts   meta.ListUploadsOptions
		marker *int64
		query  string
		args   int
	}{
		{"all", meta.ListUploadsOptions{}, nil,
			"SELECT " + UploadCols + " FROM uploads WHERE bucket = $1 AND key >= $2 ORDER BY key, created_at, id LIMIT $3", 3},
		{"prefix", meta.ListUploadsOptions{Prefix: "a/"}, nil,
			"SELECT " + UploadCols + " FROM uploads WHERE bucket = $1 AND key >= $2 AND key < $3 ORDER BY key, created_at, id LIMIT $4", 4},
		{"key marker", meta.ListUploadsOptions{KeyMarker: "k"}, nil,
			"SELECT " + UploadCols + " FROM uploads WHERE bucket = $1 AND key >= $2 AND key > $3 ORDER BY key, created_at, id LIMIT $4", 4},
		{"vanished upload marker", meta.ListUploadsOptions{KeyMarker: "k", UploadIDMarker: "u"}, nil,
			"SELECT " + UploadCols + " FROM uploads WHERE bucket = $1 AND key >= $2 AND key >= $3 ORDER BY key, created_at, id LIMIT $4", 4},
		{"upload marker", meta.ListUploadsOptions{KeyMarker: "k", UploadIDMarker: "u"}, &created,
			"SELECT " + UploadCols + " FROM uploads WHERE bucket = $1 AND key >= $2 AND (key, created_at, id) > ($3, $4, $5) ORDER BY key, created_at, id LIMIT $6", 6},
		{"upload marker without key marker", meta.ListUploadsOptions{UploadIDMarker: "u"}, nil,
			"SELECT " + UploadCols + " FROM uploads WHERE bucket = $1 AND key >= $2 ORDER BY key, created_at, id LIMIT $3", 3},
	} {
		q, args := ListUploadsQuery("b", c.opts, c.marker, 10, Dollar, key)
		if q != c.query || len(args) != c.args || args[len(args)-1] != 11 {
			t.Errorf("%s: ListUploadsQuery = %q %v\nwant %q with %d args ending in 11", c.name, q, args, c.query, c.args)
		}
	}
}

func TestSplitClaims(t *testing.T) {
	free, stale := splitClaims([]claim{{meta.Garbage{ID: 1}, false}, {meta.Garbage{ID: 2}, true}, {meta.Garbage{ID: 3}, false}})
	if len(free) != 2 || free[0].ID != 1 || free[1].ID != 3 || len(stale) != 1 || stale[0] != 2 {
		t.Errorf("splitClaims = %+v, %v", free, stale)
	}
}

func TestListedParts(t *testing.T) {
	if parts, found := listedParts(nil); found || parts != nil {
		t.Errorf("no row: %v, %v", parts, found)
	}
	if parts, found := listedParts([]meta.Part{{}}); !found || len(parts) != 0 {
		t.Errorf("the row of an upload without parts: %v, %v", parts, found)
	}
	if parts, found := listedParts([]meta.Part{{Number: 1}, {Number: 3}}); !found || len(parts) != 2 {
		t.Errorf("two parts: %v, %v", parts, found)
	}
}
