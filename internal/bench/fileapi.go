package bench

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// Default sizes of the file API scenarios.
const (
	batchFiles   = 5
	batchSize    = 50 << 10
	readPageSize = 10
	listPageSize = 20
	streamSize   = 10 << 20
	defaultSize  = 1 << 20
	// The soak's mix, in percent of iterations: ping, list, download, and
	// the rest writes (an upload of --size, then a delete of the VU's
	// oldest upload once it holds more than soakKeep).
	soakPing     = 30
	soakList     = 25
	soakDownload = 25
	soakKeep     = 8
)

// fileScenario is one of the file API scenarios.
type fileScenario struct {
	t    *target
	kind string

	// sessions[i] is VU i's session.
	sessions []*session
	// prepared[u] is the objects prepared for user u (read, stream, soak,
	// share).
	prepared [][]ledgerEntry
	// links[u] is the path (/s/{token}) of the share link of user u's
	// prepared object (share).
	links []string
	// soakOwn[v] is what VU v uploaded in the soak and has not deleted
	// yet, oldest first (only VU v touches it).
	soakOwn [][]ledgerEntry
}

// fileJSON is a file as the API describes it.
type fileJSON struct {
	Key    string `json:"key"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	ETag   string `json:"etag"`
}

func (s *fileScenario) base() string { return s.t.opts.Target }

func (s *fileScenario) fileURL(bucket, key string) string {
	segs := strings.Split(key, "/")
	for i, seg := range segs {
		segs[i] = url.PathEscape(seg)
	}
	return s.base() + "/api/v1/buckets/" + url.PathEscape(bucket) + "/files/" + strings.Join(segs, "/")
}

func (s *fileScenario) setup(ctx context.Context) error {
	if s.kind == "ping" {
		return nil
	}
	t := s.t
	d := t.setupDoer()
	o := t.opts
	t.users = make([]*user, o.Users)
	for i := range t.users {
		t.users[i] = &user{email: t.email(i), password: t.password()}
	}
	how := "signing up"
	if o.AdminToken != "" {
		how = "creating (admin API)"
	}
	t.logf("setup: %s %d users", how, len(t.users))
	if err := parallel(ctx, len(t.users), o.SetupConcurrency, func(ctx context.Context, i int) error {
		return createAccount(ctx, d, s.base(), o.AdminToken, t.users[i])
	}); err != nil {
		return fmt.Errorf("%s %d users: %w", how, len(t.users), err)
	}
	t.setupStats.Users = len(t.users)
	s.sessions = make([]*session, len(t.vus))
	for i, v := range t.vus {
		s.sessions[i] = &session{base: s.base(), u: t.users[i%len(t.users)]}
		v.sess = s.sessions[i]
	}
	for i, u := range t.users {
		u.sess = s.sessions[i] // session i belongs to user i (len(users) <= len(vus))
	}
	t.logf("setup: logging in %d sessions (one per VU)", len(s.sessions))
	if err := parallel(ctx, len(s.sessions), o.SetupConcurrency, func(ctx context.Context, i int) error {
		return s.sessions[i].login(ctx, d)
	}); err != nil {
		return fmt.Errorf("logging in %d sessions: %w", len(s.sessions), err)
	}
	t.setupStats.Sessions = len(s.sessions)
	s.soakOwn = make([][]ledgerEntry, len(s.sessions))

	// Data the reads need, per user, uploaded through the user's first
	// session (session u belongs to user u).
	var perUser int
	switch s.kind {
	case "read":
		perUser = readPageSize
	case "stream", "soak", "share":
		perUser = 1
	default:
		return nil
	}
	t.logf("setup: uploading %d objects of %d bytes for the reads", len(t.users)*perUser, o.Size)
	s.prepared = make([][]ledgerEntry, len(t.users))
	var mu sync.Mutex
	src := t.payloads(o.Size)
	err := parallel(ctx, len(t.users)*perUser, o.SetupConcurrency, func(ctx context.Context, i int) error {
		u, n := i/perUser, i%perUser
		p := src.make(t.runNum, -1-u, uint64(n))
		key := fmt.Sprintf("bench-%s/%s/%02d", t.runID, s.kind, n)
		e, err := s.upload(ctx, d, nil, "seed-upload", u, key, p)
		if err != nil {
			return fmt.Errorf("preparing %s for user %d: %w", key, u, err)
		}
		mu.Lock()
		s.prepared[u] = append(s.prepared[u], e)
		mu.Unlock()
		t.setupObjects.Add(1)
		return nil
	})
	if err != nil || s.kind != "share" {
		return err
	}
	t.logf("setup: creating %d share links", len(t.users))
	s.links = make([]string, len(t.users))
	return parallel(ctx, len(t.users), o.SetupConcurrency, func(ctx context.Context, u int) error {
		link, err := s.createShare(ctx, d, u, s.prepared[u][0])
		s.links[u] = link
		return err
	})
}

// createShare makes a share link of e through user u's session and
// returns its path, /s/{token}. Links go with the account at cleanup.
func (s *fileScenario) createShare(ctx context.Context, d doer, u int, e ledgerEntry) (string, error) {
	auth, err := s.sessions[u].bearer(ctx, d)
	if err != nil {
		return "", err
	}
	body, n := jsonBody(map[string]any{"bucket": e.bucket, "key": e.key, "expires_in": 24 * 3600})
	h := jsonHeader()
	h.Set("Authorization", auth)
	resp, err := d.do(ctx, &request{name: "create-share", method: http.MethodPost, url: s.base() + "/api/v1/shares",
		header: h, body: body, bodyLen: n, expect: http.StatusCreated, capture: 64 << 10})
	if err != nil {
		return "", err
	}
	var sh struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal(resp.body, &sh); err != nil || !strings.HasPrefix(sh.URL, "/s/") {
		return "", fmt.Errorf("creating a share link of %s: answered %.200q", e.key, resp.body)
	}
	return sh.URL, nil
}

// shareRead downloads the VU's user's prepared object anonymously through
// its share link and checks it.
func (s *fileScenario) shareRead(ctx context.Context, v *vu) error {
	u := v.id % len(s.links)
	e := s.prepared[u][0]
	resp, err := v.call.do(ctx, &request{name: "share-get", method: http.MethodGet, url: s.base() + s.links[u],
		expect: http.StatusOK, hash: s.t.opts.VerifyReads})
	if err != nil {
		return err
	}
	want := fmt.Sprintf("%x", e.sha256)
	got := resp.header.Get("X-Checksum-Sha256")
	if err := v.call.verify(resp.n == e.size && got == want, "share-get", "share link download size and checksum match",
		"%s: %d bytes sha256 %s, want %d bytes %s", e.key, resp.n, got, e.size, want); err != nil {
		return err
	}
	if s.t.opts.VerifyReads {
		return v.call.verify(resp.sum == e.sha256, "share-get", "share link download content matches", "%s: content differs", e.key)
	}
	return nil
}

// upload PUTs p as key through session sess (index si) and records it in
// the ledger. c checks the answer (nil in setup).
func (s *fileScenario) upload(ctx context.Context, d doer, c *caller, name string, si int, key string, p *payload) (ledgerEntry, error) {
	sess := s.sessions[si]
	auth, err := sess.bearer(ctx, d)
	if err != nil {
		return ledgerEntry{}, err
	}
	resp, err := d.do(ctx, &request{
		name: name, method: http.MethodPut, url: s.fileURL(sess.u.bucket, key),
		header: http.Header{
			"Authorization":     {auth},
			"X-Checksum-Sha256": {p.shaHex()},
			"Content-Type":      {"application/octet-stream"},
		},
		body: p.reader, bodyLen: p.size(), expect: http.StatusCreated, capture: 64 << 10,
	})
	if err != nil {
		return ledgerEntry{}, err
	}
	var f fileJSON
	if c == nil {
		c = &caller{} // setup: check without recording
	}
	jerr := json.Unmarshal(resp.body, &f)
	if err := c.verify(jerr == nil && f.SHA256 == p.shaHex() && f.Size == p.size(), name, name+" sha256 and size match",
		"%s: answered %.200q, want sha256 %s size %d", key, resp.body, p.shaHex(), p.size()); err != nil {
		return ledgerEntry{}, err
	}
	e := ledgerEntry{bucket: sess.u.bucket, key: key, size: p.size(), sha256: p.sha256, owner: si}
	e.index = s.t.ledger.add(e)
	return e, nil
}

func (s *fileScenario) iterate(ctx context.Context, v *vu) error {
	switch s.kind {
	case "ping":
		return s.ping(ctx, v)
	case "upload-proxy":
		return s.uploadProxy(ctx, v)
	case "upload-direct":
		return s.uploadDirect(ctx, v)
	case "read":
		return s.read(ctx, v)
	case "batch":
		return s.batch(ctx, v)
	case "tus":
		return s.tusUpload(ctx, v)
	case "stream":
		return s.stream(ctx, v)
	case "share":
		return s.shareRead(ctx, v)
	case "soak":
		switch n := v.rng.IntN(100); {
		case n < soakPing:
			return s.ping(ctx, v)
		case n < soakPing+soakList:
			_, err := s.list(ctx, v, "", listPageSize)
			return err
		case n < soakPing+soakList+soakDownload:
			objs := s.prepared[v.id%len(s.prepared)]
			return s.download(ctx, v, v.sess.u.bucket, objs[v.rng.IntN(len(objs))], "")
		default:
			return s.soakWrite(ctx, v)
		}
	}
	return fmt.Errorf("unknown scenario %q", s.kind)
}

// soakWrite uploads a new object of --size as the VU's user and, once the
// VU holds more than soakKeep of its uploads, deletes the oldest: the soak
// writes and deletes for as long as it runs while the stored data stays
// bounded (50 VUs x soakKeep objects).
func (s *fileScenario) soakWrite(ctx context.Context, v *vu) error {
	seq := v.next()
	p := s.t.payloads(s.t.opts.Size).make(s.t.runNum, v.id, seq)
	e, err := s.upload(ctx, v.call, v.call, "upload", v.id, s.t.objectKey("soak", v.id, seq), p)
	if err != nil {
		return err
	}
	s.soakOwn[v.id] = append(s.soakOwn[v.id], e)
	// Up to two deletes a write: the VU catches up after shed ones.
	for range 2 {
		own := s.soakOwn[v.id]
		if len(own) <= soakKeep {
			return nil
		}
		old := own[0]
		auth, err := v.sess.bearer(ctx, v.call)
		if err == nil {
			_, err = v.call.do(ctx, &request{name: "delete", method: http.MethodDelete, url: s.fileURL(old.bucket, old.key),
				header: http.Header{"Authorization": {auth}}, expect: http.StatusNoContent})
		}
		if err != nil && !isStatus(err, http.StatusNotFound) {
			// Still there (a shed delete, 503) or unknown: the VU's next
			// write deletes it again. Dropping it would leave it stored:
			// a 1-hour soak at load left 38,609 objects behind and filled
			// the disk.
			return err
		}
		s.soakOwn[v.id] = append(own[:0], own[1:]...)
		s.t.ledger.markDeleted(old.index)
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *fileScenario) ping(ctx context.Context, v *vu) error {
	_, err := v.call.do(ctx, &request{name: "ping", method: http.MethodGet, url: s.base() + "/healthz", expect: http.StatusOK})
	return err
}

// list reads the first page of the VU's user's files.
func (s *fileScenario) list(ctx context.Context, v *vu, prefix string, limit int) ([]fileJSON, error) {
	auth, err := v.sess.bearer(ctx, v.call)
	if err != nil {
		return nil, err
	}
	q := url.Values{"limit": {fmt.Sprint(limit)}}
	if prefix != "" {
		q.Set("prefix", prefix)
	}
	resp, err := v.call.do(ctx, &request{name: "list", method: http.MethodGet,
		url:    s.base() + "/api/v1/buckets/" + url.PathEscape(v.sess.u.bucket) + "/files?" + q.Encode(),
		header: http.Header{"Authorization": {auth}}, expect: http.StatusOK, capture: 4 << 20})
	if err != nil {
		return nil, err
	}
	var page struct {
		Files []fileJSON `json:"files"`
	}
	jerr := json.Unmarshal(resp.body, &page)
	if err := v.call.verify(jerr == nil && page.Files != nil, "list", "list answers a page of files", "answered %.200q", resp.body); err != nil {
		return nil, err
	}
	return page.Files, nil
}

// download reads e and checks its length and checksum header (and its
// content with --verify-reads or when hash is set).
func (s *fileScenario) downloadAs(ctx context.Context, v *vu, bucket string, e ledgerEntry, ttfb string, hash bool) error {
	auth, err := v.sess.bearer(ctx, v.call)
	if err != nil {
		return err
	}
	resp, err := v.call.do(ctx, &request{name: "download", method: http.MethodGet, url: s.fileURL(bucket, e.key),
		header: http.Header{"Authorization": {auth}}, expect: http.StatusOK, hash: hash, ttfb: ttfb})
	if err != nil {
		return err
	}
	want := fmt.Sprintf("%x", e.sha256)
	got := resp.header.Get("X-Checksum-Sha256")
	if err := v.call.verify(resp.n == e.size && (got == "" || got == want), "download", "download size and checksum match",
		"%s: %d bytes sha256 %s, want %d bytes %s", e.key, resp.n, got, e.size, want); err != nil {
		return err
	}
	if hash {
		return v.call.verify(resp.sum == e.sha256, "download", "download content matches", "%s: content differs", e.key)
	}
	return nil
}

func (s *fileScenario) download(ctx context.Context, v *vu, bucket string, e ledgerEntry, ttfb string) error {
	return s.downloadAs(ctx, v, bucket, e, ttfb, s.t.opts.VerifyReads)
}

// uploadProxy is GoVault's proxied upload: refresh the session, list the
// first page, upload through the API with a client checksum.
func (s *fileScenario) uploadProxy(ctx context.Context, v *vu) error {
	if err := v.sess.rotate(ctx, v.call); err != nil {
		return err
	}
	if _, err := s.list(ctx, v, "", listPageSize); err != nil {
		return err
	}
	seq := v.next()
	p := s.t.payloads(s.t.opts.Size).make(s.t.runNum, v.id, seq)
	_, err := s.upload(ctx, v.call, v.call, "upload", v.id, s.t.objectKey("proxy", v.id, seq), p)
	return err
}

// uploadDirect is GoVault's direct upload: refresh, list, create a
// multipart session, PUT the parts to their presigned URLs, complete.
func (s *fileScenario) uploadDirect(ctx context.Context, v *vu) error {
	if err := v.sess.rotate(ctx, v.call); err != nil {
		return err
	}
	if _, err := s.list(ctx, v, "", listPageSize); err != nil {
		return err
	}
	auth, err := v.sess.bearer(ctx, v.call)
	if err != nil {
		return err
	}
	seq := v.next()
	p := s.t.payloads(s.t.opts.Size).make(s.t.runNum, v.id, seq)
	key := s.t.objectKey("direct", v.id, seq)
	bucket := v.sess.u.bucket
	body, n := jsonBody(map[string]any{"bucket": bucket, "key": key, "size": p.size()})
	h := jsonHeader()
	h.Set("Authorization", auth)
	resp, err := v.call.do(ctx, &request{name: "create-upload", method: http.MethodPost, url: s.base() + "/api/v1/uploads",
		header: h, body: body, bodyLen: n, expect: http.StatusCreated, capture: 1 << 20})
	if err != nil {
		return err
	}
	var up struct {
		UploadID string `json:"upload_id"`
		PartSize int64  `json:"part_size"`
		Parts    []struct {
			PartNumber int    `json:"part_number"`
			URL        string `json:"url"`
		} `json:"parts"`
	}
	jerr := json.Unmarshal(resp.body, &up)
	wantParts := int((p.size() + max(up.PartSize, 1) - 1) / max(up.PartSize, 1))
	if up.UploadID != "" {
		s.t.made.upload(up.UploadID, v.sess, false) // aborted by the cleanup unless completed
	}
	if err := v.call.verify(jerr == nil && up.UploadID != "" && up.PartSize > 0 && len(up.Parts) == max(wantParts, 1),
		"create-upload", "create-upload plans the parts", "answered %.300q", resp.body); err != nil {
		return err
	}
	type done struct {
		PartNumber int    `json:"part_number"`
		ETag       string `json:"etag"`
	}
	var parts []done
	for _, pt := range up.Parts {
		off := int64(pt.PartNumber-1) * up.PartSize
		size := min(up.PartSize, p.size()-off)
		resp, err := v.call.do(ctx, &request{name: "put-part", method: http.MethodPut, url: pt.URL,
			body: func() io.Reader { return p.section(off, size) }, bodyLen: size, expect: http.StatusOK})
		if err != nil {
			return err
		}
		etag := resp.header.Get("ETag")
		if err := v.call.verify(etag != "", "put-part", "put-part answers an ETag", "part %d: no ETag", pt.PartNumber); err != nil {
			return err
		}
		parts = append(parts, done{PartNumber: pt.PartNumber, ETag: etag})
	}
	body, n = jsonBody(map[string]any{"parts": parts})
	resp, err = v.call.do(ctx, &request{name: "complete", method: http.MethodPost,
		url:    s.base() + "/api/v1/uploads/" + url.PathEscape(up.UploadID) + "/complete",
		header: h, body: body, bodyLen: n, expect: http.StatusOK, capture: 64 << 10})
	if err != nil {
		return err
	}
	var f fileJSON
	jerr = json.Unmarshal(resp.body, &f)
	if err := v.call.verify(jerr == nil && f.Size == p.size() && (f.SHA256 == "" || f.SHA256 == p.shaHex()),
		"complete", "complete answers the file", "%s: answered %.200q, want size %d sha256 %s", key, resp.body, p.size(), p.shaHex()); err != nil {
		return err
	}
	s.t.made.upload(up.UploadID, v.sess, true)
	s.t.ledger.add(ledgerEntry{bucket: bucket, key: key, size: p.size(), sha256: p.sha256, owner: v.id})
	return nil
}

// read lists a page of the prepared files and downloads each.
func (s *fileScenario) read(ctx context.Context, v *vu) error {
	files, err := s.list(ctx, v, fmt.Sprintf("bench-%s/read/", s.t.runID), readPageSize)
	if err != nil {
		return err
	}
	if err := v.call.verify(len(files) == readPageSize, "list", "list returns the prepared page",
		"%d files, want %d", len(files), readPageSize); err != nil {
		return err
	}
	for _, f := range files {
		e := ledgerEntry{key: f.Key, size: f.Size}
		if sum, err := hex.DecodeString(f.SHA256); err != nil || len(sum) != len(e.sha256) {
			return v.call.fail("list", "list returns the prepared page", "%s: sha256 %q", f.Key, f.SHA256)
		} else {
			copy(e.sha256[:], sum)
		}
		if err := s.download(ctx, v, v.sess.u.bucket, e, ""); err != nil {
			return err
		}
	}
	return nil
}

// batch is the batch endpoints: one multipart/form-data upload of five
// small files (all or none), then one zip download of the same files,
// whose entries are checked one by one against the uploaded SHA-256s.
func (s *fileScenario) batch(ctx context.Context, v *vu) error {
	auth, err := v.sess.bearer(ctx, v.call)
	if err != nil {
		return err
	}
	src := s.t.payloads(s.t.opts.Size)
	seq := v.next()
	prefix := s.t.objectKey("batch", v.id, seq) + "/"
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	if err := mw.WriteField("prefix", prefix); err != nil {
		return err
	}
	want := map[string]*payload{}
	var keys []string
	for i := range batchFiles {
		p := src.make(s.t.runNum, v.id, seq*batchFiles+uint64(i))
		name := fmt.Sprintf("f%d.bin", i)
		w, err := mw.CreateFormFile("file", name)
		if err != nil {
			return err
		}
		if _, err := io.Copy(w, p.reader()); err != nil {
			return err
		}
		want[prefix+name] = p
		keys = append(keys, prefix+name)
	}
	if err := mw.Close(); err != nil {
		return err
	}
	body := form.Bytes()
	bucket := v.sess.u.bucket
	resp, err := v.call.do(ctx, &request{name: "batch-upload", method: http.MethodPost,
		url:    s.base() + "/api/v1/buckets/" + url.PathEscape(bucket) + "/files",
		header: http.Header{"Authorization": {auth}, "Content-Type": {mw.FormDataContentType()}},
		body:   func() io.Reader { return bytes.NewReader(body) }, bodyLen: int64(len(body)),
		expect: http.StatusCreated, capture: 1 << 20})
	if err != nil {
		return err
	}
	var up struct {
		Files []fileJSON `json:"files"`
	}
	jerr := json.Unmarshal(resp.body, &up)
	okFiles := jerr == nil && len(up.Files) == batchFiles
	for _, f := range up.Files {
		p := want[f.Key]
		okFiles = okFiles && p != nil && f.SHA256 == p.shaHex() && f.Size == p.size()
	}
	if err := v.call.verify(okFiles, "batch-upload", "batch upload answers every file with its sha256",
		"answered %.300q", resp.body); err != nil {
		return err
	}
	for _, k := range keys {
		p := want[k]
		s.t.ledger.add(ledgerEntry{bucket: bucket, key: k, size: p.size(), sha256: p.sha256, owner: v.id})
	}

	zb, n := jsonBody(map[string]any{"keys": keys})
	h := jsonHeader()
	h.Set("Authorization", auth)
	resp, err = v.call.do(ctx, &request{name: "batch-zip", method: http.MethodPost,
		url:    s.base() + "/api/v1/buckets/" + url.PathEscape(bucket) + "/zip",
		header: h, body: zb, bodyLen: n, expect: http.StatusOK, capture: int64(batchFiles)*s.t.opts.Size + 1<<20})
	if err != nil {
		return err
	}
	zerr := zipMatches(resp.body, want)
	return v.call.verify(zerr == nil, "batch-zip", "the zip holds every file, byte for byte", "%v", zerr)
}

// zipMatches checks that the archive z holds exactly the payloads of
// want (by entry name = key), by SHA-256.
func zipMatches(z []byte, want map[string]*payload) error {
	zr, err := zip.NewReader(bytes.NewReader(z), int64(len(z)))
	if err != nil {
		return fmt.Errorf("not a zip (%d bytes): %w", len(z), err)
	}
	if len(zr.File) != len(want) {
		return fmt.Errorf("%d entries, want %d", len(zr.File), len(want))
	}
	for _, f := range zr.File {
		p := want[f.Name]
		if p == nil {
			return fmt.Errorf("unexpected entry %q", f.Name)
		}
		rc, err := f.Open()
		if err != nil {
			return fmt.Errorf("entry %q: %w", f.Name, err)
		}
		h := sha256.New()
		_, err = io.Copy(h, rc)
		rc.Close()
		if err != nil {
			return fmt.Errorf("entry %q: %w", f.Name, err)
		}
		if !bytes.Equal(h.Sum(nil), p.sha256[:]) {
			return fmt.Errorf("entry %q: content differs", f.Name)
		}
	}
	return nil
}

// stream downloads the user's big object, timing the first byte apart.
func (s *fileScenario) stream(ctx context.Context, v *vu) error {
	objs := s.prepared[v.id%len(s.prepared)]
	return s.download(ctx, v, v.sess.u.bucket, objs[0], "download ttfb")
}

// fetch reads an acknowledged upload back through its uploader's session.
func (s *fileScenario) fetch(ctx context.Context, e *ledgerEntry) (*request, error) {
	auth, err := s.sessions[e.owner].bearer(ctx, s.t.setupDoer())
	if err != nil {
		return nil, err
	}
	return &request{name: "audit-get", method: http.MethodGet, url: s.fileURL(e.bucket, e.key),
		header: http.Header{"Authorization": {auth}}, expect: http.StatusOK, hash: true}, nil
}
