package scaleout

import (
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/s3api/sigv4"
	"github.com/coffer-storage/coffer/test/testenv"
)

// s3Key is a user's S3 access key.
type s3Key struct{ id, secret string }

func newS3Key(t *testing.T, c *testenv.Client) s3Key {
	t.Helper()
	var k struct {
		ID     string `json:"access_key_id"`
		Secret string `json:"secret_access_key"`
	}
	if st := c.JSON(t, "POST", "/api/v1/keys", nil, &k); st != 201 {
		t.Fatalf("create key: %d", st)
	}
	return s3Key{k.ID, k.Secret}
}

type s3Reply struct {
	status int
	header http.Header
	body   []byte
}

// s3Client is an HTTP client for the S3 calls of many goroutines (its
// own connections, enough of them to stay open).
var s3Client = &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

// s3Do sends a SigV4-signed request to the S3 listener base; hdr is pairs
// of header names and values. Safe for many goroutines (no t).
func s3Do(k s3Key, base, method, path string, body []byte, hdr ...string) (s3Reply, error) {
	req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
	if err != nil {
		return s3Reply{}, err
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	sum := sha256.Sum256(body)
	if err := sigv4.SignRequest(req, k.id, k.secret, "us-east-1", hex.EncodeToString(sum[:]), time.Now()); err != nil {
		return s3Reply{}, err
	}
	resp, err := s3Client.Do(req)
	if err != nil {
		return s3Reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return s3Reply{resp.StatusCode, resp.Header, b}, err
}

func mustS3(t *testing.T, k s3Key, base, method, path string, body []byte, want int, hdr ...string) s3Reply {
	t.Helper()
	r, err := s3Do(k, base, method, path, body, hdr...)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if r.status != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, r.status, r.body, want)
	}
	return r
}

func versioningBody(status string) []byte {
	return []byte(`<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>` + status + `</Status></VersioningConfiguration>`)
}

// isVersionID reports whether id looks like a version ID Coffer makes
// (32 lower-case hex digits), not "null" nor empty.
func isVersionID(id string) bool {
	if len(id) != 32 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil && strings.ToLower(id) == id
}

// TestVersioningStateReachesEveryNode: versioning enabled or suspended
// through node 1 rules the very next write on nodes 2 and 3, although
// both had just cached the bucket's record (a write and a read each),
// round after round.
func TestVersioningStateReachesEveryNode(t *testing.T) {
	b := testenv.NewBackends(t)
	nodes := []*testenv.Server{testenv.StartNode(t, b), testenv.StartNode(t, b), testenv.StartNode(t, b)}
	k := newS3Key(t, nodes[0].NewUser(t))
	bucket := "/toggle-" + testenvHex(t)
	mustS3(t, k, nodes[0].S3URL, "PUT", bucket, nil, 200)
	// Nodes 2 and 3 cache the bucket as never versioned.
	for _, n := range nodes[1:] {
		r := mustS3(t, k, n.S3URL, "PUT", bucket+"/k", []byte("unversioned"), 200)
		if v := r.header.Get("X-Amz-Version-Id"); v != "" {
			t.Fatalf("PUT into a bucket never versioned: version %q", v)
		}
		mustS3(t, k, n.S3URL, "GET", bucket+"/k", nil, 200)
	}
	stale := 0
	for i := range 30 {
		status := "Enabled"
		if i%2 == 1 {
			status = "Suspended"
		}
		mustS3(t, k, nodes[0].S3URL, "PUT", bucket+"?versioning", versioningBody(status), 200)
		for j, n := range nodes[1:] {
			r := mustS3(t, k, n.S3URL, "PUT", bucket+"/k", []byte(fmt.Sprintf("round %d node %d", i, j+2)), 200)
			v := r.header.Get("X-Amz-Version-Id")
			if status == "Enabled" && !isVersionID(v) || status == "Suspended" && v != "null" {
				stale++
				t.Errorf("round %d: PUT on node %d right after %s on node 1: version %q", i, j+2, status, v)
			}
			g := mustS3(t, k, n.S3URL, "GET", bucket+"?versioning", nil, 200)
			if !bytes.Contains(g.body, []byte("<Status>"+status+"</Status>")) {
				stale++
				t.Errorf("round %d: GetBucketVersioning on node %d right after %s on node 1: %s", i, j+2, status, g.body)
			}
		}
	}
	if stale > 0 {
		t.Errorf("%d stale answers", stale)
	}
}

func testenvHex(t *testing.T) string { return hex.EncodeToString(randBytes(t, 4)) }

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

// listedVersion is a <Version> or <DeleteMarker> of ListObjectVersions.
type listedVersion struct {
	Marker    bool
	Key       string `xml:"Key"`
	VersionID string `xml:"VersionId"`
	IsLatest  bool   `xml:"IsLatest"`
	ETag      string `xml:"ETag"`
	Size      int64  `xml:"Size"`
}

// listVersions pages through every version of bucket (pageSize at a
// time), each page from the next node, in the order the listing gives.
func listVersions(t *testing.T, k s3Key, nodes []*testenv.Server, bucket string, pageSize int) []listedVersion {
	t.Helper()
	var out []listedVersion
	km, vm := "", ""
	for page := 0; ; page++ {
		q := fmt.Sprintf("?versions&max-keys=%d", pageSize)
		if km != "" {
			q += "&key-marker=" + url.QueryEscape(km)
			if vm != "" {
				q += "&version-id-marker=" + url.QueryEscape(vm)
			}
		}
		r := mustS3(t, k, nodes[page%len(nodes)].S3URL, "GET", bucket+q, nil, 200)
		d := xml.NewDecoder(bytes.NewReader(r.body))
		truncated := false
		km, vm = "", ""
		for {
			tok, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("ListObjectVersions: %v in %s", err, r.body)
			}
			se, ok := tok.(xml.StartElement)
			if !ok {
				continue
			}
			switch se.Name.Local {
			case "Version", "DeleteMarker":
				var v listedVersion
				if err := d.DecodeElement(&v, &se); err != nil {
					t.Fatal(err)
				}
				v.Marker = se.Name.Local == "DeleteMarker"
				out = append(out, v)
			case "IsTruncated", "NextKeyMarker", "NextVersionIdMarker":
				var s string
				if err := d.DecodeElement(&s, &se); err != nil {
					t.Fatal(err)
				}
				switch se.Name.Local {
				case "IsTruncated":
					truncated = s == "true"
				case "NextKeyMarker":
					km = s
				default:
					vm = s
				}
			}
		}
		if !truncated {
			return out
		}
		if km == "" || page > 10000 {
			t.Fatalf("ListObjectVersions: truncated without a next marker (page %d)", page)
		}
	}
}

// TestVersionsAcrossNodes: many clients on three nodes PUT and DELETE
// (with and without versionId, single and DeleteObjects) one hot key and a
// few others of an Enabled bucket at once. Afterwards ListObjectVersions
// holds exactly the acknowledged versions and markers not deleted by
// version ID, with unique IDs, one IsLatest per key, listed first, and in
// the order the writes happened (a write acknowledged before another
// began is older); GET and HEAD without versionId on every node answer
// the latest (404 with x-amz-delete-marker when it is a marker); every
// version reads back intact by its ID on every node; and the bucket's
// Objects/Bytes and the owner's usage equal the sum over the versions.
func TestVersionsAcrossNodes(t *testing.T) {
	b := testenv.NewBackends(t)
	nodes := []*testenv.Server{testenv.StartNode(t, b), testenv.StartNode(t, b), testenv.StartNode(t, b)}
	u := nodes[0].NewUser(t)
	k := newS3Key(t, u)
	name := "vers-" + testenvHex(t)
	bucket := "/" + name
	mustS3(t, k, nodes[0].S3URL, "PUT", bucket, nil, 200)
	mustS3(t, k, nodes[0].S3URL, "PUT", bucket+"?versioning", versioningBody("Enabled"), 200)

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
				var r s3Reply
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
					r, o.err = s3Do(k, base, "PUT", path, data)
					if o.err == nil && r.status != 200 {
						o.err = fmt.Errorf("PUT: %d %s", r.status, r.body)
					}
					o.version = r.header.Get("X-Amz-Version-Id")
					if o.err == nil && !isVersionID(o.version) {
						o.err = fmt.Errorf("PUT answered version %q", o.version)
					}
				case "delete":
					r, o.err = s3Do(k, base, "DELETE", path, nil)
					if o.err == nil && r.status != 204 {
						o.err = fmt.Errorf("DELETE: %d %s", r.status, r.body)
					}
					o.version = r.header.Get("X-Amz-Version-Id")
					if o.err == nil && (!isVersionID(o.version) || r.header.Get("X-Amz-Delete-Marker") != "true") {
						o.err = fmt.Errorf("DELETE answered version %q, marker %q", o.version, r.header.Get("X-Amz-Delete-Marker"))
					}
				case "get":
					r, o.err = s3Do(k, base, "GET", path, nil)
					o.version, o.marker = r.header.Get("X-Amz-Version-Id"), r.header.Get("X-Amz-Delete-Marker") == "true"
					sum := sha256.Sum256(r.body)
					o.sha = hex.EncodeToString(sum[:])
					if o.err == nil && !(r.status == 200 && isVersionID(o.version) && !o.marker || r.status == 404 && (o.marker == isVersionID(o.version))) {
						o.err = fmt.Errorf("GET: %d, version %q, marker %v", r.status, o.version, o.marker)
					}
				case "delete-version":
					r, o.err = s3Do(k, base, "DELETE", path+"?versionId="+o.version, nil)
					if o.err == nil && r.status != 204 {
						o.err = fmt.Errorf("DELETE ?versionId: %d %s", r.status, r.body)
					}
				case "delete-objects":
					body := []byte(`<Delete><Object><Key>` + o.key + `</Key><VersionId>` + o.version + `</VersionId></Object></Delete>`)
					sum := md5.Sum(body)
					r, o.err = s3Do(k, base, "POST", bucket+"?delete", body, "Content-MD5", base64.StdEncoding.EncodeToString(sum[:]))
					if o.err == nil && (r.status != 200 || !bytes.Contains(r.body, []byte("<Deleted>")) || bytes.Contains(r.body, []byte("<Error>"))) {
						o.err = fmt.Errorf("DeleteObjects: %d %s", r.status, r.body)
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

	listed := listVersions(t, k, nodes, bucket, 7)
	seen := map[string]bool{}
	byKey := map[string][]listedVersion{}
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
				r, err := s3Do(k, n.S3URL, method, bucket+"/"+testenv.EscapeKey(key), nil)
				if err != nil {
					t.Fatal(err)
				}
				vid, dm := r.header.Get("X-Amz-Version-Id"), r.header.Get("X-Amz-Delete-Marker")
				switch {
				case len(vs) == 0:
					if r.status != 404 || dm != "" {
						t.Errorf("%s %s on node %d (no versions): %d, marker %q", method, key, ni+1, r.status, dm)
					}
				case vs[0].Marker:
					if r.status != 404 || dm != "true" || vid != vs[0].VersionID {
						t.Errorf("%s %s on node %d (latest is the marker %s): %d, marker %q, version %q", method, key, ni+1, vs[0].VersionID, r.status, dm, vid)
					}
				default:
					sum := sha256.Sum256(r.body)
					if r.status != 200 || vid != vs[0].VersionID || method == "GET" && hex.EncodeToString(sum[:]) != made[vid].sha {
						t.Errorf("%s %s on node %d: %d, version %q, want the latest %s", method, key, ni+1, r.status, vid, vs[0].VersionID)
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
		r, err := s3Do(k, nodes[i%len(nodes)].S3URL, "GET", path, nil)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(r.body)
		switch {
		case v.Marker && r.status != 405:
			t.Errorf("GET of the marker %s@%s: %d, want 405", v.Key, v.VersionID, r.status)
		case !v.Marker && (r.status != 200 || hex.EncodeToString(sum[:]) != made[v.VersionID].sha):
			t.Errorf("GET %s@%s on node %d: %d, intact %v", v.Key, v.VersionID, i%len(nodes)+1, r.status, hex.EncodeToString(sum[:]) == made[v.VersionID].sha)
		}
	}
	for id := range deleted {
		i++
		key, vid, _ := strings.Cut(id, "@")
		r, err := s3Do(k, nodes[i%len(nodes)].S3URL, "GET", bucket+"/"+testenv.EscapeKey(key)+"?versionId="+vid, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.status != 404 || !bytes.Contains(r.body, []byte("NoSuchVersion")) {
			t.Errorf("GET of %s, deleted by its ID, on node %d: %d %s", id, i%len(nodes)+1, r.status, r.body)
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
	b := testenv.NewBackends(t)
	nodes := []*testenv.Server{testenv.StartNode(t, b), testenv.StartNode(t, b), testenv.StartNode(t, b)}
	k := newS3Key(t, nodes[0].NewUser(t))
	bucket := "/dels-" + testenvHex(t)
	mustS3(t, k, nodes[0].S3URL, "PUT", bucket, nil, 200)
	mustS3(t, k, nodes[0].S3URL, "PUT", bucket+"?versioning", versioningBody("Enabled"), 200)
	stale := 0
	for i := range 20 {
		w := nodes[i%3]
		readers := []*testenv.Server{nodes[(i+1)%3], nodes[(i+2)%3]}
		// expect GETs the key on both readers: version want (a marker
		// if marker, "" for no version at all).
		expect := func(step, want string, marker bool) {
			t.Helper()
			for _, n := range readers {
				r := mustS3(t, k, n.S3URL, "GET", bucket+"/k", nil, map[bool]int{true: 200, false: 404}[want != "" && !marker])
				if got := r.header.Get("X-Amz-Version-Id"); got != want || (r.header.Get("X-Amz-Delete-Marker") == "true") != marker {
					stale++
					t.Errorf("round %d, %s: GET answered version %q (marker %q), want %q (marker %v)", i, step, got, r.header.Get("X-Amz-Delete-Marker"), want, marker)
				}
			}
		}
		v1 := mustS3(t, k, w.S3URL, "PUT", bucket+"/k", []byte(fmt.Sprintf("round %d one", i)), 200).header.Get("X-Amz-Version-Id")
		v2 := mustS3(t, k, w.S3URL, "PUT", bucket+"/k", []byte(fmt.Sprintf("round %d two", i)), 200).header.Get("X-Amz-Version-Id")
		expect("after two PUTs", v2, false)
		mustS3(t, k, w.S3URL, "DELETE", bucket+"/k?versionId="+v2, nil, 204)
		expect("after deleting the latest by its ID", v1, false)
		m := mustS3(t, k, w.S3URL, "DELETE", bucket+"/k", nil, 204).header.Get("X-Amz-Version-Id")
		expect("after a DELETE (a marker)", m, true)
		mustS3(t, k, w.S3URL, "DELETE", bucket+"/k?versionId="+m, nil, 204)
		expect("after deleting the marker", v1, false)
		body := []byte(`<Delete><Object><Key>k</Key><VersionId>` + v1 + `</VersionId></Object></Delete>`)
		sum := md5.Sum(body)
		mustS3(t, k, w.S3URL, "POST", bucket+"?delete", body, 200, "Content-MD5", base64.StdEncoding.EncodeToString(sum[:]))
		expect("after DeleteObjects of the last version", "", false)
	}
	if stale > 0 {
		t.Errorf("%d stale answers", stale)
	}
}
