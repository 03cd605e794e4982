package bench

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// tusChunk is the PATCH size of the tus scenario: a quarter of the
// payload, at least 64 KiB (so a 1 MiB upload is a creation with its first
// chunk and three PATCHes).
func tusChunk(size int64) int64 { return max(size/4, 64<<10) }

// tusUpload is the tus scenario: create a tus 1.0 upload carrying its
// first chunk (creation-with-upload), PATCH the rest in chunks, each with
// a sha256 Upload-Checksum, checking Upload-Offset after each; the
// finished object is audited like any other upload.
func (s *fileScenario) tusUpload(ctx context.Context, v *vu) error {
	auth, err := v.sess.bearer(ctx, v.call)
	if err != nil {
		return err
	}
	seq := v.next()
	p := s.t.payloads(s.t.opts.Size).make(s.t.runNum, v.id, seq)
	key := s.t.objectKey("tus", v.id, seq)
	bucket := v.sess.u.bucket
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	chunk := tusChunk(p.size())
	header := func(off, n int64) http.Header {
		h := http.Header{
			"Authorization":   {auth},
			"Tus-Resumable":   {"1.0.0"},
			"Content-Type":    {"application/offset+octet-stream"},
			"Upload-Checksum": {"sha256 " + sectionSHA(p, off, n)},
		}
		return h
	}
	first := min(chunk, p.size())
	h := header(0, first)
	h.Set("Upload-Length", strconv.FormatInt(p.size(), 10))
	h.Set("Upload-Metadata", "bucket "+b64(bucket)+",key "+b64(key))
	resp, err := v.call.do(ctx, &request{name: "tus-create", method: http.MethodPost, url: s.base() + "/api/v1/tus/",
		header: h, body: func() io.Reader { return p.section(0, first) }, bodyLen: first, expect: http.StatusCreated})
	if err != nil {
		return err
	}
	loc := resp.header.Get("Location")
	i := strings.Index(loc, "/api/v1/tus/")
	if err := v.call.verify(i >= 0 && resp.header.Get("Upload-Offset") == strconv.FormatInt(first, 10), "tus-create",
		"tus-create answers the upload's URL and offset", "Location %q, Upload-Offset %q", loc, resp.header.Get("Upload-Offset")); err != nil {
		return err
	}
	url := s.base() + loc[i:]
	id := loc[i+len("/api/v1/tus/"):]
	if first < p.size() {
		s.t.made.upload(id, v.sess, false) // aborted by the cleanup unless finished
	}
	for off := first; off < p.size(); {
		n := min(chunk, p.size()-off)
		h := header(off, n)
		h.Set("Upload-Offset", strconv.FormatInt(off, 10))
		resp, err := v.call.do(ctx, &request{name: "tus-patch", method: http.MethodPatch, url: url,
			header: h, body: func() io.Reader { return p.section(off, n) }, bodyLen: n, expect: http.StatusNoContent})
		if err != nil {
			return err
		}
		off += n
		if err := v.call.verify(resp.header.Get("Upload-Offset") == strconv.FormatInt(off, 10), "tus-patch",
			"tus-patch advances Upload-Offset", "%s: Upload-Offset %q, want %d", key, resp.header.Get("Upload-Offset"), off); err != nil {
			return err
		}
	}
	s.t.made.upload(id, v.sess, true)
	s.t.ledger.add(ledgerEntry{bucket: bucket, key: key, size: p.size(), sha256: p.sha256, owner: v.id})
	return nil
}

// sectionSHA is the base64 SHA-256 of n bytes of p at off.
func sectionSHA(p *payload, off, n int64) string {
	h := sha256.New()
	io.Copy(h, p.section(off, n))
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}
