package httpapi

import (
	"encoding/json"
	"net/http"
	"unicode/utf8"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
)

// Batch delete (POST /buckets/{bucket}/delete): by keys or by a prefix,
// one NDJSON line per key as it goes, then the totals.

// batchDeleteLine is a line of a batch delete's NDJSON answer about one
// key (or, without a key, a prefix listing that failed).
type batchDeleteLine struct {
	Key    string `json:"key,omitempty"`
	Status string `json:"status"` // deleted, not_found, error
	Error  string `json:"error,omitempty"`
	Code   string `json:"code,omitempty"`
}

// batchDeleteTotals is the last line of a batch delete's answer.
type batchDeleteTotals struct {
	Done     bool  `json:"done"`
	Deleted  int64 `json:"deleted"`
	NotFound int64 `json:"not_found"`
	Errors   int64 `json:"errors"`
}

// maxBatchDeleteKeys bounds the keys of one batch delete by keys.
const maxBatchDeleteKeys = 1000

func (h *fileHandlers) batchDelete(r *http.Request, p auth.Principal) (response, error) {
	var b struct {
		Keys   []string `json:"keys"`
		Prefix *string  `json:"prefix"`
	}
	if err := h.decodeJSON(r, &b); err != nil {
		return nil, err
	}
	switch {
	case (len(b.Keys) > 0) == (b.Prefix != nil):
		return nil, errcode.New(errcode.InvalidArgument, "give keys or prefix, exactly one")
	case len(b.Keys) > maxBatchDeleteKeys:
		return nil, errcode.New(errcode.TooLarge, "at most %d keys per request; delete by prefix for more", maxBatchDeleteKeys)
	case b.Prefix != nil && (len(*b.Prefix) > object.MaxKeyLen || !utf8.ValidString(*b.Prefix)):
		return nil, errcode.New(errcode.InvalidArgument, "prefix must be valid UTF-8 of at most 1024 bytes")
	}
	bucket := r.PathValue("bucket")
	// Authorised before the first line: a refusal is a problem, not a
	// stream of errors.
	if _, err := h.files.List(r.Context(), actor(r, p), bucket, meta.ListOptions{Limit: 1}); err != nil {
		return nil, err
	}
	return &batchDeleteResponse{files: h.files, a: actor(r, p), bucket: bucket, keys: b.Keys, prefix: b.Prefix}, nil
}

// batchDeleteResponse streams one NDJSON line per key, then the totals.
// A prefix is deleted page by page (1000 keys a page, listed again from
// the start each time, so keys added meanwhile may go too).
type batchDeleteResponse struct {
	files  Files
	a      object.Actor
	bucket string
	keys   []string
	prefix *string
}

func (d *batchDeleteResponse) respond(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	flusher, _ := w.(http.Flusher)
	var total batchDeleteTotals
	del := func(key string) {
		line := batchDeleteLine{Key: key, Status: "deleted"}
		err := deleteFile(r.Context(), d.files, d.a, d.bucket, key, meta.Cond{})
		switch {
		case err == nil:
			total.Deleted++
		case errcode.Is(err, errcode.NotFound):
			line.Status = "not_found"
			total.NotFound++
		default:
			line.Status, line.Error, line.Code = "error", errcode.Message(err), errcode.Of(err).String()
			total.Errors++
		}
		_ = enc.Encode(line)
	}
	if d.prefix == nil {
		for _, k := range d.keys {
			del(k)
		}
	} else {
		after := ""
		for r.Context().Err() == nil {
			page, err := d.files.List(r.Context(), d.a, d.bucket, meta.ListOptions{Prefix: *d.prefix, StartAfter: after, Limit: 1000})
			if err != nil {
				total.Errors++
				_ = enc.Encode(batchDeleteLine{Status: "error", Error: errcode.Message(err), Code: errcode.Of(err).String()})
				break
			}
			for _, o := range page.Objects {
				del(o.Key)
			}
			if flusher != nil {
				flusher.Flush()
			}
			if !page.Truncated || len(page.Objects) == 0 {
				break
			}
			after = page.Objects[len(page.Objects)-1].Key
		}
	}
	total.Done = true
	_ = enc.Encode(total)
}
