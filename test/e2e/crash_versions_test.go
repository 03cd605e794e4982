package e2e

import (
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/test/testenv"
)

// vattempt is one write of TestCrashVersions: a PUT (a version), a DELETE
// (a marker) or a DELETE ?versionId of an earlier acknowledged PUT.
type vattempt struct {
	kind      string // "put", "delete", "delete-version"
	key       string
	seed      uint64
	size      int
	sha, etag string
	target    *vattempt // of a delete-version
	acked     bool
	version   string // the version (or marker) the write was answered with
	// Of a put: a delete of its version was sent; acknowledged.
	deleteTried, deleteAcked bool
}

// TestCrashVersions is TestCrashDurability for a versioned bucket: rounds
// of concurrent S3 writes into an Enabled bucket — PUTs of a few keys
// (many versions each, inline and blob sizes), DELETEs (markers) and
// DELETEs of earlier versions by their ID — with the server SIGKILLed
// mid-way. After each restart: every acknowledged version is listed with
// its ID and reads back byte-exact by it, unless a delete of it was sent
// (an acknowledged one: it is gone); every listed version is a complete
// write (size, ETag, bytes); every acknowledged marker is listed; each key
// has one latest version, which GET answers; and the bucket's
// Objects/Bytes and the owner's usage are the sum over the versions.
func TestCrashVersions(t *testing.T) {
	rounds := 4
	if testing.Short() {
		rounds = 2
	}
	srv := testenv.Start(t)
	c := srv.NewUser(t)
	k := testenv.NewS3Key(t, c)
	name := "crash-" + strings.ToLower(hex.EncodeToString(randBytes(t, 4)))
	bucket := "/" + name
	testenv.MustS3(t, k, srv.S3URL, "PUT", bucket, nil, 200)
	testenv.MustS3(t, k, srv.S3URL, "PUT", bucket+"?versioning", testenv.VersioningBody("Enabled"), 200)

	var all []*vattempt
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	for round := range rounds {
		// Victims: acknowledged versions no delete was sent to yet.
		var pool []*vattempt
		for _, a := range all {
			if a.kind == "put" && a.acked && !a.deleteTried {
				pool = append(pool, a)
			}
		}
		rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
		attempts := make([]*vattempt, 150)
		for i := range attempts {
			a := &vattempt{kind: "put", key: fmt.Sprintf("k-%d", rng.IntN(6))}
			switch p := rng.IntN(10); {
			case p < 2 && len(pool) > 0:
				a.kind, a.target, a.key = "delete-version", pool[0], pool[0].key
				a.target.deleteTried = true
				pool = pool[1:]
			case p < 3:
				a.kind = "delete"
			default:
				a.seed = rng.Uint64()
				a.size = rng.IntN(32 << 10)
				switch rng.IntN(10) {
				case 0:
					a.size = 0
				case 1, 2:
					a.size = 256<<10 + rng.IntN(1<<20)
				}
				data := content(a.seed, a.size)
				s, m := sha256.Sum256(data), md5.Sum(data)
				a.sha, a.etag = hex.EncodeToString(s[:]), `"`+hex.EncodeToString(m[:])+`"`
			}
			attempts[i] = a
		}
		all = append(all, attempts...)
		killAfter := 20 + rng.IntN(80)
		killer := newMidwayKill(srv, killAfter)
		var wg sync.WaitGroup
		for _, a := range attempts {
			wg.Go(func() {
				path := bucket + "/" + a.key
				var r testenv.S3Reply
				var err error
				switch a.kind {
				case "put":
					r, err = testenv.S3Do(k, srv.S3URL, "PUT", path, content(a.seed, a.size))
					a.acked = err == nil && r.Status == 200 && r.Header.Get("ETag") == a.etag
				case "delete":
					r, err = testenv.S3Do(k, srv.S3URL, "DELETE", path, nil)
					a.acked = err == nil && r.Status == 204 && r.Header.Get("X-Amz-Delete-Marker") == "true"
				case "delete-version":
					r, err = testenv.S3Do(k, srv.S3URL, "DELETE", path+"?versionId="+a.target.version, nil)
					a.acked = err == nil && r.Status == 204
				}
				if !a.acked {
					return
				}
				a.version = r.Header.Get("X-Amz-Version-Id")
				if a.kind != "delete-version" && !testenv.IsVersionID(a.version) {
					t.Errorf("%s %s acknowledged with version %q", a.kind, a.key, a.version)
				}
				killer.ack()
			})
		}
		wg.Wait()
		killer.wait()
		n := 0
		for _, a := range attempts {
			if a.acked {
				n++
				if a.kind == "delete-version" {
					a.target.deleteAcked = true
				}
			}
		}
		t.Logf("round %d: killed after %d of %d writes acknowledged (target %d)", round, n, len(attempts), killAfter)
		srv.Restart()
		verifyVersions(t, srv, k, c, name, all)
	}
	srv.Kill()
	out, err := srv.Command("gc", "--data", srv.Data).CombinedOutput()
	if err != nil {
		t.Fatalf("coffer gc: %v\n%s", err, out)
	}
	t.Logf("coffer gc: %s", bytes.TrimSpace(out))
	srv.Restart()
	verifyVersions(t, srv, k, c, name, all)
}

// verifyVersions checks TestCrashVersions' invariants on the bucket name
// after a restart.
func verifyVersions(t *testing.T, srv *testenv.Server, k testenv.S3Key, c *testenv.Client, name string, all []*vattempt) {
	t.Helper()
	bucket := "/" + name
	puts := map[string][]*vattempt{} // ETag → the puts of that content (only empty ones share one)
	markers := map[string]*vattempt{}
	deletes := map[string]int{} // key → deletes sent
	for _, a := range all {
		switch {
		case a.kind == "put":
			puts[a.etag] = append(puts[a.etag], a)
		case a.kind == "delete" && a.acked:
			markers[a.version] = a
		}
		if a.kind == "delete" {
			deletes[a.key]++
		}
	}
	listed := testenv.ListVersions(t, k, []string{srv.S3URL}, bucket, 1000)
	byKey := map[string][]testenv.ListedVersion{}
	found := map[*vattempt]bool{}
	var objects, size int64
	for _, v := range listed {
		byKey[v.Key] = append(byKey[v.Key], v)
		if v.Marker {
			if m := markers[v.VersionID]; m != nil {
				found[m] = true
			}
			continue
		}
		objects++
		size += v.Size
		var a *vattempt
		for _, p := range puts[v.ETag] {
			if p.key == v.Key && !found[p] && (p.version == v.VersionID || !p.acked && a == nil) {
				a = p
			}
		}
		switch {
		case a == nil:
			t.Errorf("%s@%s (ETag %s, %d bytes) is listed but matches no write", v.Key, v.VersionID, v.ETag, v.Size)
			continue
		case int64(a.size) != v.Size:
			t.Errorf("%s@%s listed with %d bytes; the write was %s@%s, %d bytes", v.Key, v.VersionID, v.Size, a.key, a.version, a.size)
		case a.deleteAcked:
			t.Errorf("%s@%s is listed, but its delete by version ID was acknowledged", v.Key, v.VersionID)
		}
		found[a] = true
		r, err := testenv.S3Do(k, srv.S3URL, "GET", bucket+"/"+v.Key+"?versionId="+v.VersionID, nil)
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(r.Body); r.Status != 200 || hex.EncodeToString(sum[:]) != a.sha {
			t.Errorf("%s@%s reads back %d: %d bytes, intact %v (%d written)", v.Key, v.VersionID, r.Status, len(r.Body), hex.EncodeToString(sum[:]) == a.sha, a.size)
		}
	}
	for _, a := range all {
		switch {
		case a.kind == "put" && a.acked && !a.deleteTried && !found[a]:
			t.Errorf("acknowledged version %s@%s is lost", a.key, a.version)
		case a.kind == "delete" && a.acked && !found[a]:
			t.Errorf("acknowledged delete marker %s@%s is lost", a.key, a.version)
		}
	}
	for key, vs := range byKey {
		m := 0
		for _, v := range vs {
			if v.Marker {
				m++
			}
		}
		if m > deletes[key] {
			t.Errorf("%s: %d delete markers listed, %d deletes sent", key, m, deletes[key])
		}
		if !vs[0].IsLatest {
			t.Errorf("%s: the first version listed, %s, is not the latest", key, vs[0].VersionID)
		}
		for _, v := range vs[1:] {
			if v.IsLatest {
				t.Errorf("%s: a second latest version, %s", key, v.VersionID)
			}
		}
		r, err := testenv.S3Do(k, srv.S3URL, "GET", bucket+"/"+key, nil)
		if err != nil {
			t.Fatal(err)
		}
		switch got := r.Header.Get("X-Amz-Version-Id"); {
		case vs[0].Marker && (r.Status != 404 || r.Header.Get("X-Amz-Delete-Marker") != "true" || got != vs[0].VersionID):
			t.Errorf("GET %s (latest: the marker %s): %d, version %q", key, vs[0].VersionID, r.Status, got)
		case !vs[0].Marker && (r.Status != 200 || got != vs[0].VersionID):
			t.Errorf("GET %s (latest: %s): %d, version %q", key, vs[0].VersionID, r.Status, got)
		}
	}
	var l struct {
		Buckets []struct {
			Name           string
			Objects, Bytes int64
		} `json:"buckets"`
	}
	if st := c.JSON(t, "GET", "/api/v1/buckets", nil, &l); st != 200 {
		t.Fatalf("list buckets: %d", st)
	}
	for _, b := range l.Buckets {
		if b.Name == name && (b.Objects != objects || b.Bytes != size) {
			t.Errorf("the bucket counts %d objects, %d bytes; its versions are %d, %d bytes", b.Objects, b.Bytes, objects, size)
		}
	}
	var me struct {
		UsageBytes int64 `json:"usage_bytes"`
	}
	if st := c.JSON(t, "GET", "/api/v1/me", nil, &me); st != 200 || me.UsageBytes != size {
		t.Errorf("usage %d (%d), want %d, the versions' sum", me.UsageBytes, st, size)
	}
	t.Logf("%d versions (%d bytes) and %d markers listed", objects, size, len(listed)-int(objects))
}
