package bench

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coffer-storage/coffer/internal/bench/report"
	"github.com/coffer-storage/coffer/internal/s3api/sigv4"
)

// made is what a run created on a target beyond its objects (which are
// all under the run's key prefix, bench-<run id>/), for the cleanup. The
// accounts are the target's users whose signup succeeded.
type made struct {
	mu      sync.Mutex
	bucket  bool                // the S3 bucket was created by this run
	keys    []madeKey           // S3 access keys created through the file API
	uploads map[string]*session // direct uploads created and not completed
}

type madeKey struct {
	id   string
	sess *session // the owner's
}

func (m *made) createdBucket() {
	m.mu.Lock()
	m.bucket = true
	m.mu.Unlock()
}

func (m *made) key(id string, sess *session) {
	m.mu.Lock()
	m.keys = append(m.keys, madeKey{id, sess})
	m.mu.Unlock()
}

// upload records a direct upload in progress (done false) or completed.
func (m *made) upload(id string, sess *session, done bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if done {
		delete(m.uploads, id)
		return
	}
	if m.uploads == nil {
		m.uploads = map[string]*session{}
	}
	m.uploads[id] = sess
}

// prefix is the key prefix of every object the run writes.
func (t *target) prefix() string { return "bench-" + t.runID + "/" }

// accountDeletion is the file API's self-service account deletion:
// DELETE /api/v1/me with the password; purge deletes the account's
// buckets and objects too.
const accountDeletion = "/api/v1/me"

// cleanup deletes what the run created on t, in dependency order: the
// objects under the run's prefix (and the S3 bucket the run created),
// unfinished direct uploads, the S3 keys, then the accounts (with purge:
// their default buckets). What cannot be deleted is reported as a
// warning, never as a failure of the run: the measurements stand.
func (t *target) cleanup(ctx context.Context) report.Cleanup {
	start := time.Now()
	res := report.Cleanup{Enabled: true}
	d := &retrier{c: &caller{client: t.setupClient, timeout: t.opts.Timeout}, attempts: 4}
	var users []*user
	for _, u := range t.users {
		if u.bucket != "" { // signed up
			if u.sess == nil {
				u.sess = &session{base: t.opts.Target, u: u}
			}
			users = append(users, u)
		}
	}
	if len(users) == 0 && t.s3 == nil {
		return report.Cleanup{} // ping: nothing was made
	}
	t.logf("cleanup%s: deleting what the run created (--keep leaves it)", t.suffix())
	warn := func(format string, args ...any) {
		res.Warnings = append(res.Warnings, fmt.Sprintf(format, args...))
	}

	// S3 objects, then the bucket if this run created it.
	if e := t.s3; e != nil && e.access != "" {
		n, err := t.deleteS3Objects(ctx, d)
		res.Objects += n
		if err != nil {
			warn("could not delete every object under %s in bucket %s: %v", t.prefix(), e.bucket, err)
		} else if t.made.bucket {
			if _, err := d.do(ctx, &request{name: "cleanup-delete-bucket", method: http.MethodDelete, url: e.bucketURL(),
				expect: http.StatusNoContent, sign: e.signer(sigv4.EmptySHA256)}); err != nil && !isStatus(err, http.StatusNotFound) {
				warn("could not delete bucket %s: %v", e.bucket, err)
			} else {
				res.Buckets++
			}
		}
	}

	// File API: unfinished direct uploads, then the objects of each account.
	t.made.mu.Lock()
	uploads := make(map[string]*session, len(t.made.uploads))
	for id, s := range t.made.uploads {
		uploads[id] = s
	}
	keys := append([]madeKey(nil), t.made.keys...)
	t.made.mu.Unlock()
	var aborted atomic.Int64
	var uerrs errList
	ids := make([]string, 0, len(uploads))
	for id := range uploads {
		ids = append(ids, id)
	}
	forEach(ctx, len(ids), t.opts.SetupConcurrency, func(ctx context.Context, i int) {
		if err := t.fileDelete(ctx, d, uploads[ids[i]], "/api/v1/uploads/"+url.PathEscape(ids[i])); err != nil {
			uerrs.add(err)
			return
		}
		aborted.Add(1)
	})
	res.Uploads = aborted.Load()
	if err := uerrs.err(); err != nil {
		warn("could not abort unfinished direct upload (%d of %d): %v", uerrs.n, len(ids), err)
	}
	if t.s3 == nil {
		n, err := t.deleteFiles(ctx, d, users)
		res.Objects += n
		if err != nil {
			warn("could not delete every object under %s: %v", t.prefix(), err)
		}
	}

	// Keys, then accounts (last: their sessions authorise the rest).
	for _, k := range keys {
		if err := t.fileDelete(ctx, d, k.sess, "/api/v1/keys/"+url.PathEscape(k.id)); err != nil {
			warn("could not delete access key %s: %v", k.id, err)
			continue
		}
		res.Keys++
	}
	var aerrs errList
	var deleted atomic.Int64
	forEach(ctx, len(users), t.opts.SetupConcurrency, func(ctx context.Context, i int) {
		if err := t.deleteAccount(ctx, d, users[i]); err != nil {
			aerrs.add(err)
			return
		}
		deleted.Add(1)
	})
	res.Accounts = deleted.Load()
	if err := aerrs.err(); err != nil {
		warn("could not delete account (%d of %d): %v", aerrs.n, len(users), err)
	}
	if ctx.Err() != nil {
		warn("cleanup cut short (%v); may be left: %s", context.Cause(ctx), t.madeNote())
	}
	res.DurationS = time.Since(start).Seconds()
	t.logf("cleanup%s done in %.1fs: %s", t.suffix(), res.DurationS, res.Summary())
	for _, w := range res.Warnings {
		t.logf("cleanup warning%s: %s", t.suffix(), w)
	}
	return res
}

// deleteAccount deletes u's account with everything it holds.
func (t *target) deleteAccount(ctx context.Context, d doer, u *user) error {
	auth, err := u.sess.bearer(ctx, d)
	if err != nil {
		return fmt.Errorf("%s: logging in: %w", u.email, err)
	}
	body, n := jsonBody(map[string]any{"password": u.password, "purge": true})
	h := jsonHeader()
	h.Set("Authorization", auth)
	_, err = d.do(ctx, &request{name: "cleanup-delete-account", method: http.MethodDelete, url: t.opts.Target + accountDeletion,
		header: h, body: body, bodyLen: n, expect: http.StatusNoContent})
	var re *reqError
	if errors.As(err, &re) && (re.status == http.StatusNotFound || re.status == http.StatusMethodNotAllowed) {
		return fmt.Errorf("the server has no account deletion (DELETE %s answered %s)", accountDeletion, re.msg)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", u.email, err)
	}
	return nil
}

// fileDelete sends an authorised DELETE to the file API; a 404 (already
// gone) is success.
func (t *target) fileDelete(ctx context.Context, d doer, sess *session, path string) error {
	auth, err := sess.bearer(ctx, d)
	if err != nil {
		return err
	}
	_, err = d.do(ctx, &request{name: "cleanup-delete", method: http.MethodDelete, url: t.opts.Target + path,
		header: http.Header{"Authorization": {auth}}, expect: http.StatusNoContent})
	if isStatus(err, http.StatusNotFound) {
		return nil
	}
	return err
}

// deleteFiles deletes every object under the run's prefix in the users'
// buckets, all users at once (right after a heavy run the server may
// still shed requests for a second: each waits its Retry-After).
func (t *target) deleteFiles(ctx context.Context, d doer, users []*user) (int64, error) {
	fs := &fileScenario{t: t}
	type file struct {
		u   *user
		key string
	}
	var files []file
	var errs errList
	for _, u := range users {
		keys, err := t.listFiles(ctx, d, u)
		if err != nil {
			errs.add(fmt.Errorf("%s: %w", u.email, err))
		}
		for _, k := range keys {
			files = append(files, file{u, k})
		}
	}
	var n atomic.Int64
	forEach(ctx, len(files), t.opts.SetupConcurrency, func(ctx context.Context, i int) {
		f := files[i]
		auth, err := f.u.sess.bearer(ctx, d)
		if err == nil {
			_, err = d.do(ctx, &request{name: "cleanup-delete", method: http.MethodDelete, url: fs.fileURL(f.u.bucket, f.key),
				header: http.Header{"Authorization": {auth}}, expect: http.StatusNoContent})
		}
		if err != nil && !isStatus(err, http.StatusNotFound) {
			errs.add(err)
			return
		}
		n.Add(1)
	})
	return n.Load(), errs.err()
}

// listFiles lists the keys under the run's prefix in u's bucket.
func (t *target) listFiles(ctx context.Context, d doer, u *user) ([]string, error) {
	var keys []string
	cursor := ""
	for {
		auth, err := u.sess.bearer(ctx, d)
		if err != nil {
			return keys, err
		}
		q := url.Values{"prefix": {t.prefix()}, "limit": {"1000"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		resp, err := d.do(ctx, &request{name: "cleanup-list", method: http.MethodGet,
			url:    t.opts.Target + "/api/v1/buckets/" + url.PathEscape(u.bucket) + "/files?" + q.Encode(),
			header: http.Header{"Authorization": {auth}}, expect: http.StatusOK, capture: 8 << 20})
		if err != nil {
			return keys, fmt.Errorf("listing: %w", err)
		}
		var page struct {
			Files []struct {
				Key string `json:"key"`
			} `json:"files"`
			NextCursor string `json:"next_cursor"`
		}
		if err := json.Unmarshal(resp.body, &page); err != nil {
			return keys, fmt.Errorf("listing: %w", err)
		}
		for _, f := range page.Files {
			keys = append(keys, f.Key)
		}
		if page.NextCursor == "" || page.NextCursor == cursor || len(page.Files) == 0 {
			return keys, nil
		}
		cursor = page.NextCursor
	}
}

// s3ListPage is the part of a ListObjectsV2 answer the cleanup reads.
type s3ListPage struct {
	Contents []struct {
		Key string `xml:"Key"`
	} `xml:"Contents"`
	IsTruncated           bool   `xml:"IsTruncated"`
	NextContinuationToken string `xml:"NextContinuationToken"`
}

// deleteS3Objects deletes every object under the run's prefix in the S3
// bucket, listing with ListObjectsV2 (also what the run wrote but never
// saw acknowledged).
func (t *target) deleteS3Objects(ctx context.Context, d doer) (int64, error) {
	e := t.s3
	var keys []string
	token := ""
	for {
		q := "list-type=2&max-keys=1000&prefix=" + sigv4.URIEncode(t.prefix(), true)
		if token != "" {
			q += "&continuation-token=" + sigv4.URIEncode(token, true)
		}
		resp, err := d.do(ctx, &request{name: "cleanup-list", method: http.MethodGet, url: e.bucketURL() + "?" + q,
			expect: http.StatusOK, sign: e.signer(sigv4.EmptySHA256), capture: 16 << 20})
		if err != nil {
			if isStatus(err, http.StatusNotFound) {
				return 0, nil // no bucket: nothing to delete
			}
			return 0, fmt.Errorf("listing: %w", err)
		}
		var page s3ListPage
		if err := xml.Unmarshal(resp.body, &page); err != nil {
			return 0, fmt.Errorf("listing: %w", err)
		}
		for _, c := range page.Contents {
			keys = append(keys, c.Key)
		}
		if !page.IsTruncated || page.NextContinuationToken == "" || page.NextContinuationToken == token {
			break
		}
		token = page.NextContinuationToken
	}
	var n atomic.Int64
	var errs errList
	forEach(ctx, len(keys), t.opts.SetupConcurrency, func(ctx context.Context, i int) {
		_, err := d.do(ctx, &request{name: "cleanup-delete", method: http.MethodDelete, url: e.objectURL(keys[i]),
			expect: http.StatusNoContent, sign: e.signer(sigv4.EmptySHA256)})
		if err != nil && !isStatus(err, http.StatusNotFound) {
			errs.add(err)
			return
		}
		n.Add(1)
	})
	return n.Load(), errs.err()
}

// isStatus reports whether err is a request answered with status.
func isStatus(err error, status int) bool {
	var re *reqError
	return errors.As(err, &re) && re.status == status
}

// errList counts errors and keeps the first (a cleanup's failures are
// mostly the same one many times).
type errList struct {
	mu    sync.Mutex
	n     int
	first error
}

func (l *errList) add(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == 0 {
		l.first = err
	}
	l.n++
}

func (l *errList) err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.first
}

// forEach runs f(ctx, i) for i in [0, n) with at most conc at once, all
// of them whatever each returns (unlike parallel), until ctx ends.
func forEach(ctx context.Context, n, conc int, f func(ctx context.Context, i int)) {
	sem := make(chan struct{}, max(conc, 1))
	var wg sync.WaitGroup
	for i := 0; i < n && ctx.Err() == nil; i++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			f(ctx, i)
		})
	}
	wg.Wait()
}

// keptNote says what a run with --keep left on the target.
func (t *target) keptNote() string {
	if m := t.madeNote(); m != "" {
		return "kept (--keep): " + m
	}
	return ""
}

// madeNote says what the run made on the target.
func (t *target) madeNote() string {
	var parts []string
	if n := len(t.ledger.snapshot()); n > 0 || t.s3 != nil {
		where := "in the accounts' buckets"
		if t.s3 != nil {
			where = "in bucket " + t.s3.bucket
		}
		parts = append(parts, fmt.Sprintf("objects under %s %s", t.prefix(), where))
	}
	signed := 0
	for _, u := range t.users {
		if u.bucket != "" {
			signed++
		}
	}
	if signed > 0 {
		parts = append(parts, fmt.Sprintf("%d accounts bench-%s-N@example.com (password %q)", signed, t.runID, t.password()))
	}
	t.made.mu.Lock()
	nkeys := len(t.made.keys)
	t.made.mu.Unlock()
	if nkeys > 0 {
		parts = append(parts, fmt.Sprintf("%d access keys", nkeys))
	}
	return strings.Join(parts, "; ")
}
