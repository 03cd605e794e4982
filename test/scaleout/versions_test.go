package scaleout

import (
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/test/testenv"
)

// TestVersioningStateReachesEveryNode: versioning enabled or suspended
// through node 1 rules the very next write on nodes 2 and 3, although
// both had just cached the bucket's record (a write and a read each),
// round after round.
func TestVersioningStateReachesEveryNode(t *testing.T) {
	nodes, _, k, name := bucketOnThreeNodes(t, "toggle", false)
	bucket := "/" + name
	// Nodes 2 and 3 cache the bucket as never versioned.
	for _, n := range nodes[1:] {
		r := testenv.MustS3(t, k, n.S3URL, "PUT", bucket+"/k", []byte("unversioned"), 200)
		if v := r.Header.Get("X-Amz-Version-Id"); v != "" {
			t.Fatalf("PUT into a bucket never versioned: version %q", v)
		}
		testenv.MustS3(t, k, n.S3URL, "GET", bucket+"/k", nil, 200)
	}
	stale := 0
	for i := range 30 {
		status := "Enabled"
		if i%2 == 1 {
			status = "Suspended"
		}
		testenv.MustS3(t, k, nodes[0].S3URL, "PUT", bucket+"?versioning", testenv.VersioningBody(status), 200)
		for j, n := range nodes[1:] {
			r := testenv.MustS3(t, k, n.S3URL, "PUT", bucket+"/k", []byte(fmt.Sprintf("round %d node %d", i, j+2)), 200)
			// A PutObject into a suspended bucket names no version (S3's);
			// the version it wrote is the null one, as HEAD says.
			v := r.Header.Get("X-Amz-Version-Id")
			if status == "Suspended" && v == "" {
				v = testenv.MustS3(t, k, n.S3URL, "HEAD", bucket+"/k", nil, 200).Header.Get("X-Amz-Version-Id")
			}
			if status == "Enabled" && !testenv.IsVersionID(v) || status == "Suspended" && v != "null" {
				stale++
				t.Errorf("round %d: PUT on node %d right after %s on node 1: version %q", i, j+2, status, v)
			}
			g := testenv.MustS3(t, k, n.S3URL, "GET", bucket+"?versioning", nil, 200)
			if !bytes.Contains(g.Body, []byte("<Status>"+status+"</Status>")) {
				stale++
				t.Errorf("round %d: GetBucketVersioning on node %d right after %s on node 1: %s", i, j+2, status, g.Body)
			}
		}
	}
	if stale > 0 {
		t.Errorf("%d stale answers", stale)
	}
}

// bucketOnThreeNodes starts three nodes on fresh backends, a user with an
// S3 key, and a bucket named prefix-RANDOM made through node 1 (versioning
// Enabled if enabled).
func bucketOnThreeNodes(t *testing.T, prefix string, enabled bool) ([]*testenv.Server, *testenv.Client, testenv.S3Key, string) {
	t.Helper()
	b := testenv.NewBackends(t)
	nodes := []*testenv.Server{testenv.StartNode(t, b), testenv.StartNode(t, b), testenv.StartNode(t, b)}
	u := nodes[0].NewUser(t)
	k := testenv.NewS3Key(t, u)
	name := prefix + "-" + hex.EncodeToString(randBytes(t, 4))
	testenv.MustS3(t, k, nodes[0].S3URL, "PUT", "/"+name, nil, 200)
	if enabled {
		testenv.MustS3(t, k, nodes[0].S3URL, "PUT", "/"+name+"?versioning", testenv.VersioningBody("Enabled"), 200)
	}
	return nodes, u, k, name
}

// vop is one operation of TestVersionsAcrossNodes, as its client saw it.
type vop struct {
	node       int
	kind       string // "put", "delete" (no versionId: a marker), "delete-version", "delete-objects" (DeleteObjects with a VersionId), "get" (no versionId)
	key        string
	start, end time.Time
	// version: of a put, the version it made; of a delete, its marker;
	// of a version delete, the version named; of a get, the version
	// answered ("" for a 404 without a marker).
	version   string
	marker    bool // a get answered 404 with x-amz-delete-marker
	size      int
	sha, etag string
	err       error
}

// TestVersionsAcrossNodes: many clients on three nodes PUT, GET and DELETE
// (with and without versionId, single and DeleteObjects) one hot key and a
// few others of an Enabled bucket at once. No GET during the run answers
// a version deleted, or older than one acknowledged, before it began.
// Afterwards ListObjectVersions
// holds exactly the acknowledged versions and markers not deleted by
// version ID, with unique IDs, one IsLatest per key, listed first, and in
// the order the writes happened (a write acknowledged before another
// began is older); GET and HEAD without versionId on every node answer
// the latest (404 with x-amz-delete-marker when it is a marker); every
// version reads back intact by its ID on every node; and the bucket's
// Objects/Bytes and the owner's usage equal the sum over the versions.
func TestVersionsAcrossNodes(t *testing.T) {
	nodes, u, k, name := bucketOnThreeNodes(t, "vers", true)
	bucket := "/" + name

	keys := []string{"hot", "hot", "hot", "k/1", "k/2", "k/3 with space"}
	const workers, opsEach = 12, 50
	var (
		mu    sync.Mutex
		known = map[string][]string{} // key → acknowledged version IDs (versions and markers)
		ops   []*vop
	)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(w)))
			ni := w % len(nodes)
			base := nodes[ni].S3URL
			for range opsEach {
				o := &vop{node: ni, key: keys[rng.IntN(len(keys))]}
				path := bucket + "/" + testenv.EscapeKey(o.key)
				mu.Lock()
				pool := known[o.key]
				victim := ""
				if len(pool) > 0 {
					victim = pool[rng.IntN(len(pool))]
				}
				mu.Unlock()
				p := rng.IntN(100)
				switch {
				case p < 15:
					o.kind = "delete"
				case p < 30:
					o.kind = "get"
				case p < 45 && victim != "":
					o.kind, o.version = "delete-version", victim
				case p < 52 && victim != "":
					o.kind, o.version = "delete-objects", victim
				default:
					o.kind = "put"
				}
				o.start = time.Now()
				var r testenv.S3Reply
				switch o.kind {
				case "put":
					size := rng.IntN(20_000)
					if rng.IntN(4) == 0 {
						size = 100_000 + rng.IntN(100_000) // a blob, not inline
					}
					data := make([]byte, size)
					var seed [32]byte
					binary.LittleEndian.PutUint64(seed[:], rng.Uint64())
					rand.NewChaCha8(seed).Read(data)
					s, m := sha256.Sum256(data), md5.Sum(data)
					o.size, o.sha, o.etag = size, hex.EncodeToString(s[:]), `"`+hex.EncodeToString(m[:])+`"`
					r, o.err = testenv.S3Do(k, base, "PUT", path, data)
					if o.err == nil && r.Status != 200 {
						o.err = fmt.Errorf("PUT: %d %s", r.Status, r.Body)
					}
					o.version = r.Header.Get("X-Amz-Version-Id")
					if o.err == nil && !testenv.IsVersionID(o.version) {
						o.err = fmt.Errorf("PUT answered version %q", o.version)
					}
				case "delete":
					r, o.err = testenv.S3Do(k, base, "DELETE", path, nil)
					if o.err == nil && r.Status != 204 {
						o.err = fmt.Errorf("DELETE: %d %s", r.Status, r.Body)
					}
					o.version = r.Header.Get("X-Amz-Version-Id")
					if o.err == nil && (!testenv.IsVersionID(o.version) || r.Header.Get("X-Amz-Delete-Marker") != "true") {
						o.err = fmt.Errorf("DELETE answered version %q, marker %q", o.version, r.Header.Get("X-Amz-Delete-Marker"))
					}
				case "get":
					r, o.err = testenv.S3Do(k, base, "GET", path, nil)
					o.version, o.marker = r.Header.Get("X-Amz-Version-Id"), r.Header.Get("X-Amz-Delete-Marker") == "true"
					sum := sha256.Sum256(r.Body)
					o.sha = hex.EncodeToString(sum[:])
					if o.err == nil && !(r.Status == 200 && testenv.IsVersionID(o.version) && !o.marker || r.Status == 404 && (o.marker == testenv.IsVersionID(o.version))) {
						o.err = fmt.Errorf("GET: %d, version %q, marker %v", r.Status, o.version, o.marker)
					}
				case "delete-version":
					r, o.err = testenv.S3Do(k, base, "DELETE", path+"?versionId="+o.version, nil)
					if o.err == nil && r.Status != 204 {
						o.err = fmt.Errorf("DELETE ?versionId: %d %s", r.Status, r.Body)
					}
				case "delete-objects":
					body := []byte(`<Delete><Object><Key>` + o.key + `</Key><VersionId>` + o.version + `</VersionId></Object></Delete>`)
					sum := md5.Sum(body)
					r, o.err = testenv.S3Do(k, base, "POST", bucket+"?delete", body, "Content-MD5", base64.StdEncoding.EncodeToString(sum[:]))
					if o.err == nil && (r.Status != 200 || !bytes.Contains(r.Body, []byte("<Deleted>")) || bytes.Contains(r.Body, []byte("<Error>"))) {
						o.err = fmt.Errorf("DeleteObjects: %d %s", r.Status, r.Body)
					}
				}
				o.end = time.Now()
				mu.Lock()
				ops = append(ops, o)
				if o.err == nil && (o.kind == "put" || o.kind == "delete") {
					known[o.key] = append(known[o.key], o.version)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()

	// What the clients were told.
	made := map[string]*vop{} // version ID → the put or delete that made it
	// key + "@" + version ID → when the first acknowledged delete of it
	// began, and when the first ended.
	deleted := map[string][2]time.Time{}
	var gets []*vop
	counts := map[string]int{}
	for _, o := range ops {
		if o.err != nil {
			t.Errorf("node %d, %s %s: %v", o.node+1, o.kind, o.key, o.err)
			continue
		}
		counts[o.kind]++
		switch o.kind {
		case "put", "delete":
			if made[o.version] != nil {
				t.Errorf("version ID %s answered twice (%s %s and %s %s)", o.version, made[o.version].kind, made[o.version].key, o.kind, o.key)
			}
			made[o.version] = o
		case "get":
			gets = append(gets, o)
		default:
			id := o.key + "@" + o.version
			at, ok := deleted[id]
			if !ok || o.start.Before(at[0]) {
				at[0] = o.start
			}
			if !ok || o.end.Before(at[1]) {
				at[1] = o.end
			}
			deleted[id] = at
		}
	}
	// The GETs during the writes (each filling its node's cache): each
	// answered a version (or marker) some write made, never one deleted
	// by its ID before the GET began, and never one older than a write
	// acknowledged before the GET began — unless a delete of that write's
	// version had begun by the GET's end. (Version IDs of an Enabled
	// bucket sort newest first.)
	staleGets := 0
	for _, g := range gets {
		if g.version != "" {
			v := made[g.version]
			switch {
			case v == nil:
				t.Errorf("GET %s on node %d answered version %s, which no write made", g.key, g.node+1, g.version)
				continue
			case v.key != g.key || g.marker != (v.kind == "delete") || !g.marker && g.sha != v.sha:
				t.Errorf("GET %s on node %d answered %s (marker %v), made by a %s of %s, bytes intact %v", g.key, g.node+1, g.version, g.marker, v.kind, v.key, g.sha == v.sha)
				continue
			}
			if at, ok := deleted[g.key+"@"+g.version]; ok && at[1].Before(g.start) {
				staleGets++
				t.Errorf("GET %s on node %d answered %s, deleted by its ID before the GET began", g.key, g.node+1, g.version)
			}
		}
		for id, w := range made {
			if w.key != g.key || !w.end.Before(g.start) || g.version != "" && id >= g.version {
				continue
			}
			if at, ok := deleted[g.key+"@"+id]; ok && at[0].Before(g.end) {
				continue
			}
			staleGets++
			t.Errorf("GET %s on node %d answered %q (marker %v), but %s (a %s on node %d) was acknowledged before it began", g.key, g.node+1, g.version, g.marker, id, w.kind, w.node+1)
		}
	}
	t.Logf("%d operations on %d nodes: %v; %d stale GETs", len(ops), len(nodes), counts, staleGets)
	if t.Failed() {
		t.FailNow()
	}

	var bases []string
	for _, n := range nodes {
		bases = append(bases, n.S3URL)
	}
	listed := testenv.ListVersions(t, k, bases, bucket, 7)
	seen := map[string]bool{}
	byKey := map[string][]testenv.ListedVersion{}
	var objects, bytesSum int64
	prevKey := ""
	for _, v := range listed {
		if seen[v.VersionID] {
			t.Errorf("version %s listed twice", v.VersionID)
		}
		seen[v.VersionID] = true
		if v.Key < prevKey {
			t.Errorf("listing out of key order: %q after %q", v.Key, prevKey)
		}
		prevKey = v.Key
		byKey[v.Key] = append(byKey[v.Key], v)
		o := made[v.VersionID]
		switch {
		case o == nil:
			t.Errorf("%s@%s is listed but no client was told of it", v.Key, v.VersionID)
			continue
		case o.key != v.Key || v.Marker != (o.kind == "delete"):
			t.Errorf("%s@%s (marker %v) is listed, but it was made by a %s of %s", v.Key, v.VersionID, v.Marker, o.kind, o.key)
		case !v.Marker && (v.Size != int64(o.size) || v.ETag != o.etag):
			t.Errorf("%s@%s listed with size %d ETag %s, want %d %s", v.Key, v.VersionID, v.Size, v.ETag, o.size, o.etag)
		}
		if _, ok := deleted[v.Key+"@"+v.VersionID]; ok {
			t.Errorf("%s@%s is listed, but a delete of it was acknowledged", v.Key, v.VersionID)
		}
		if !v.Marker {
			objects++
			bytesSum += v.Size
		}
	}
	for id, o := range made {
		if _, ok := deleted[o.key+"@"+id]; !ok && !seen[id] {
			t.Errorf("%s@%s (a %s on node %d) was acknowledged and never deleted by its ID, but it is not listed", o.key, id, o.kind, o.node+1)
		}
	}
	// One latest per key, listed first; newer writes listed before older.
	for key, vs := range byKey {
		latest := 0
		for i, v := range vs {
			if v.IsLatest {
				latest++
				if i != 0 {
					t.Errorf("%s: the latest version %s is listed at place %d", key, v.VersionID, i)
				}
			}
			for _, older := range vs[i+1:] {
				a, b := made[v.VersionID], made[older.VersionID]
				if a != nil && b != nil && a.end.Before(b.start) {
					t.Errorf("%s: %s (acknowledged at %s) is listed as newer than %s (begun at %s, after)", key, v.VersionID,
						a.end.Format("15:04:05.000000"), older.VersionID, b.start.Format("15:04:05.000000"))
				}
			}
		}
		if latest != 1 {
			t.Errorf("%s: %d versions listed as the latest, want 1", key, latest)
		}
	}

	// GET and HEAD without versionId on every node: the latest.
	for _, key := range []string{"hot", "k/1", "k/2", "k/3 with space"} {
		vs := byKey[key]
		for ni, n := range nodes {
			for _, method := range []string{"GET", "HEAD"} {
				r, err := testenv.S3Do(k, n.S3URL, method, bucket+"/"+testenv.EscapeKey(key), nil)
				if err != nil {
					t.Fatal(err)
				}
				vid, dm := r.Header.Get("X-Amz-Version-Id"), r.Header.Get("X-Amz-Delete-Marker")
				switch {
				case len(vs) == 0:
					if r.Status != 404 || dm != "" {
						t.Errorf("%s %s on node %d (no versions): %d, marker %q", method, key, ni+1, r.Status, dm)
					}
				case vs[0].Marker:
					if r.Status != 404 || dm != "true" || vid != vs[0].VersionID {
						t.Errorf("%s %s on node %d (latest is the marker %s): %d, marker %q, version %q", method, key, ni+1, vs[0].VersionID, r.Status, dm, vid)
					}
				default:
					sum := sha256.Sum256(r.Body)
					if r.Status != 200 || vid != vs[0].VersionID || method == "GET" && hex.EncodeToString(sum[:]) != made[vid].sha {
						t.Errorf("%s %s on node %d: %d, version %q, want the latest %s", method, key, ni+1, r.Status, vid, vs[0].VersionID)
					}
				}
			}
		}
	}
	// Every version by its ID, each from the next node: intact; every
	// version deleted by its ID: gone.
	i := 0
	for _, v := range listed {
		i++
		path := bucket + "/" + testenv.EscapeKey(v.Key) + "?versionId=" + v.VersionID
		r, err := testenv.S3Do(k, nodes[i%len(nodes)].S3URL, "GET", path, nil)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(r.Body)
		switch {
		case v.Marker && r.Status != 405:
			t.Errorf("GET of the marker %s@%s: %d, want 405", v.Key, v.VersionID, r.Status)
		case !v.Marker && (r.Status != 200 || hex.EncodeToString(sum[:]) != made[v.VersionID].sha):
			t.Errorf("GET %s@%s on node %d: %d, intact %v", v.Key, v.VersionID, i%len(nodes)+1, r.Status, hex.EncodeToString(sum[:]) == made[v.VersionID].sha)
		}
	}
	for id := range deleted {
		i++
		key, vid, _ := strings.Cut(id, "@")
		r, err := testenv.S3Do(k, nodes[i%len(nodes)].S3URL, "GET", bucket+"/"+testenv.EscapeKey(key)+"?versionId="+vid, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != 404 || !bytes.Contains(r.Body, []byte("NoSuchVersion")) {
			t.Errorf("GET of %s, deleted by its ID, on node %d: %d %s", id, i%len(nodes)+1, r.Status, r.Body)
		}
	}

	// Quota accounting: the bucket's Objects/Bytes and the owner's usage
	// are the sum over the versions, on every node.
	for ni, n := range nodes {
		c := on(u, n)
		var l struct {
			Buckets []struct {
				Name    string `json:"name"`
				Objects int64  `json:"objects"`
				Bytes   int64  `json:"bytes"`
			} `json:"buckets"`
		}
		if st := c.JSON(t, "GET", "/api/v1/buckets", nil, &l); st != 200 {
			t.Fatalf("list buckets: %d", st)
		}
		found := false
		for _, bk := range l.Buckets {
			if bk.Name == name {
				found = true
				if bk.Objects != objects || bk.Bytes != bytesSum {
					t.Errorf("node %d: the bucket holds %d objects, %d bytes; its versions are %d, %d bytes", ni+1, bk.Objects, bk.Bytes, objects, bytesSum)
				}
			}
		}
		if !found {
			t.Errorf("node %d: bucket %s not listed", ni+1, name)
		}
		if got := usage(t, c); got != bytesSum {
			t.Errorf("node %d: usage %d, want %d (the versions' sum)", ni+1, got, bytesSum)
		}
	}
	t.Logf("%d versions and markers listed (%d versions, %d bytes), %d deleted by ID", len(listed), objects, bytesSum, len(deleted))
	if len(listed) == 0 {
		t.Errorf("nothing listed: the test proves nothing")
	}
}

// TestVersionDeletesReachEveryNode: a version deleted by its ID, a delete
// marker added and a marker deleted, each through one node, are seen by
// the other two on the very next GET, although both had just read (and
// cached) the key's latest version, round after round.
func TestVersionDeletesReachEveryNode(t *testing.T) {
	nodes, _, k, name := bucketOnThreeNodes(t, "dels", true)
	bucket := "/" + name
	stale := 0
	for i := range 20 {
		w := nodes[i%3]
		readers := []*testenv.Server{nodes[(i+1)%3], nodes[(i+2)%3]}
		// expect GETs the key on both readers: version want (a marker
		// if marker, "" for no version at all).
		expect := func(step, want string, marker bool) {
			t.Helper()
			for _, n := range readers {
				r := testenv.MustS3(t, k, n.S3URL, "GET", bucket+"/k", nil, map[bool]int{true: 200, false: 404}[want != "" && !marker])
				if got := r.Header.Get("X-Amz-Version-Id"); got != want || (r.Header.Get("X-Amz-Delete-Marker") == "true") != marker {
					stale++
					t.Errorf("round %d, %s: GET answered version %q (marker %q), want %q (marker %v)", i, step, got, r.Header.Get("X-Amz-Delete-Marker"), want, marker)
				}
			}
		}
		v1 := testenv.MustS3(t, k, w.S3URL, "PUT", bucket+"/k", []byte(fmt.Sprintf("round %d one", i)), 200).Header.Get("X-Amz-Version-Id")
		v2 := testenv.MustS3(t, k, w.S3URL, "PUT", bucket+"/k", []byte(fmt.Sprintf("round %d two", i)), 200).Header.Get("X-Amz-Version-Id")
		expect("after two PUTs", v2, false)
		testenv.MustS3(t, k, w.S3URL, "DELETE", bucket+"/k?versionId="+v2, nil, 204)
		expect("after deleting the latest by its ID", v1, false)
		m := testenv.MustS3(t, k, w.S3URL, "DELETE", bucket+"/k", nil, 204).Header.Get("X-Amz-Version-Id")
		expect("after a DELETE (a marker)", m, true)
		testenv.MustS3(t, k, w.S3URL, "DELETE", bucket+"/k?versionId="+m, nil, 204)
		expect("after deleting the marker", v1, false)
		body := []byte(`<Delete><Object><Key>k</Key><VersionId>` + v1 + `</VersionId></Object></Delete>`)
		sum := md5.Sum(body)
		testenv.MustS3(t, k, w.S3URL, "POST", bucket+"?delete", body, 200, "Content-MD5", base64.StdEncoding.EncodeToString(sum[:]))
		expect("after DeleteObjects of the last version", "", false)
	}
	if stale > 0 {
		t.Errorf("%d stale answers", stale)
	}
}
