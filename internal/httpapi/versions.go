package httpapi

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
)

// Versions, restore and the deleted files (docs/api.md, "Versions").
//
// The routes are views of the object service's versions (meta/versions.go):
// a key's versions newest first (ListVersions with the key as prefix), a
// version's bytes (GetVersion, on the download route), a restore (a copy
// of the version onto its key, CopyFrom: S3's CopyObject from a
// versionId), the permanent removal of a version (DeleteVersion, on the
// delete route), and the keys whose latest version is a delete marker
// (List with DeleteMarkers) with their undelete (DeleteVersion of the
// markers). Ownership is the object service's, as for every file route.
// Gateway buckets have no versions in Coffer: NotImplemented.

// versionJSON is one version or delete marker of a key.
type versionJSON struct {
	VersionID    string    `json:"version_id"`
	Size         int64     `json:"size"`
	ETag         string    `json:"etag,omitempty"` // none for a delete marker
	LastModified time.Time `json:"last_modified"`
	IsLatest     bool      `json:"is_latest"`
	DeleteMarker bool      `json:"delete_marker"`
}

// deletedJSON is a deleted file: a key whose latest version is a delete
// marker.
type deletedJSON struct {
	Key       string    `json:"key"`
	VersionID string    `json:"version_id"` // the delete marker's
	DeletedAt time.Time `json:"deleted_at"`
}

// versionParam reads ?version_id= ("": none); a malformed one is refused
// here, before any lookup.
func versionParam(r *http.Request) (string, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return "", errcode.New(errcode.InvalidArgument, "query string is malformed")
	}
	if _, ok := q["version_id"]; !ok {
		return "", nil
	}
	id := q.Get("version_id")
	if !meta.ValidVersionID(id) {
		return "", errInvalidVersion()
	}
	return id, nil
}

func errInvalidVersion() error {
	return &errcode.Error{Code: errcode.InvalidArgument, Message: "version_id is no version ID (\"null\", or 32 hexadecimal digits)",
		Detail: map[string]any{"reason": "invalid_version_id"}}
}

// versionsRedirect is the answer to GET /buckets/{bucket}/files/{key}?versions
// (S3's ?versions, and the form the issue named): 308 to
// /buckets/{bucket}/versions/{key}, the query kept but for versions. The
// list is a route of its own since one route cannot be both a download
// and a JSON listing in the OpenAPI document.
func versionsRedirect(r *http.Request) (response, bool) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, false
	}
	if _, ok := q["versions"]; !ok {
		return nil, false
	}
	// The escaped path as sent: /api/v1/buckets/{bucket}/files/{key...}.
	parts := strings.SplitN(strings.TrimPrefix(r.URL.EscapedPath(), "/api/v1/buckets/"), "/", 3)
	if len(parts) != 3 || parts[1] != "files" {
		return nil, false
	}
	q.Del("versions")
	loc := "/api/v1/buckets/" + parts[0] + "/versions/" + parts[2]
	if len(q) > 0 {
		loc += "?" + q.Encode()
	}
	return redirect{location: loc}, true
}

// markerNotFound answers the download of a version that is a delete
// marker as the file API answers a deleted file: 404, with the marker
// named (the object service's 405 is S3's answer).
func markerNotFound(err error) error {
	if e := errcode.As(err); e != nil && e.Code == errcode.MethodNotAllowed && e.Detail["delete_marker"] == true {
		id, _ := e.Detail["version_id"].(string)
		return object.ErrDeleteMarker(id)
	}
	return err
}

// versioned checks that bucket may have versions: a gateway bucket's are
// its backend's, not Coffer's (NotImplemented).
func (h *fileHandlers) versioned(ctx context.Context, a object.Actor, bucket string) error {
	b, err := h.buckets.GetBucket(ctx, a, bucket)
	if err != nil {
		return err
	}
	if b.IsGateway() {
		return &errcode.Error{Code: errcode.NotImplemented, Message: "versions are not supported in gateway buckets (docs/gateway.md)",
			Detail: map[string]any{"reason": "gateway_unsupported"}}
	}
	return nil
}

// keyVersions returns up to limit versions of bucket/key newest first,
// after version after ("": from the newest), and the version to continue
// after ("": no more).
func (h *fileHandlers) keyVersions(ctx context.Context, a object.Actor, bucket, key, after string, limit int) ([]meta.Object, string, error) {
	opts := meta.VersionListOptions{Prefix: key, Limit: limit}
	if after != "" {
		opts.KeyMarker, opts.VersionIDMarker = key, after
	}
	page, err := h.files.ListVersions(ctx, a, bucket, opts)
	if err != nil {
		return nil, "", err
	}
	// The prefix lists the key's versions first, then longer keys'.
	var out []meta.Object
	for _, v := range page.Versions {
		if v.Key != key {
			return out, "", nil
		}
		out = append(out, v)
	}
	if !page.Truncated || len(out) == 0 {
		return out, "", nil
	}
	return out, out[len(out)-1].VersionID, nil
}

// listVersions is GET /buckets/{bucket}/versions/{key...}: the key's
// versions and delete markers, newest first, paged.
func (h *fileHandlers) listVersions(r *http.Request, p auth.Principal) (response, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, errcode.New(errcode.InvalidArgument, "query string is malformed")
	}
	limit, err := limitParam(q, 100)
	if err != nil {
		return nil, err
	}
	after := ""
	if c := q.Get("cursor"); c != "" {
		b, err := base64.RawURLEncoding.DecodeString(c)
		if err != nil || !meta.ValidVersionID(string(b)) {
			return nil, errcode.New(errcode.InvalidArgument, "cursor is malformed")
		}
		after = string(b)
	}
	bucket, key := r.PathValue("bucket"), r.PathValue("key")
	if err := object.ValidKey(key); err != nil {
		return nil, err
	}
	if err := h.versioned(r.Context(), actor(r, p), bucket); err != nil {
		return nil, err
	}
	vs, next, err := h.keyVersions(r.Context(), actor(r, p), bucket, key, after, limit)
	if err != nil {
		return nil, err
	}
	out := make([]versionJSON, len(vs))
	for i, v := range vs {
		out[i] = versionJSON{VersionID: v.VersionID, Size: v.Size, ETag: v.ETag, LastModified: v.ModTime,
			IsLatest: v.IsLatest, DeleteMarker: v.DeleteMarker}
	}
	body := map[string]any{"bucket": bucket, "key": key, "versions": out}
	if next != "" {
		body["next_cursor"] = base64.RawURLEncoding.EncodeToString([]byte(next))
	}
	return ok(body), nil
}

// keyVersionBody is the body of restore and undelete.
type keyVersionBody struct {
	Key       string `json:"key"`
	VersionID string `json:"version_id"`
}

// restoreVersion is POST /buckets/{bucket}/restore: version_id of key
// becomes the latest, as a new version copied from it (in a bucket not
// Enabled, the null version, as any write there).
func (h *fileHandlers) restoreVersion(r *http.Request, p auth.Principal) (response, error) {
	var b keyVersionBody
	if err := h.decodeJSON(r, &b); err != nil {
		return nil, err
	}
	if b.Key == "" || b.VersionID == "" {
		return nil, errcode.New(errcode.InvalidArgument, "key and version_id are required")
	}
	if !meta.ValidVersionID(b.VersionID) {
		return nil, errInvalidVersion()
	}
	bucket, a := r.PathValue("bucket"), actor(r, p)
	if err := h.versioned(r.Context(), a, bucket); err != nil {
		return nil, err
	}
	src, err := h.files.GetVersion(r.Context(), a, bucket, b.Key, b.VersionID)
	if err != nil {
		if e := errcode.As(err); e != nil && e.Detail["delete_marker"] == true {
			return nil, &errcode.Error{Code: errcode.Conflict, Message: "a delete marker has no content to restore (undelete the file instead)",
				Detail: map[string]any{"reason": "delete_marker"}}
		}
		return nil, err
	}
	if src.Object.IsLatest {
		return nil, &errcode.Error{Code: errcode.Conflict, Message: "this version is the latest already",
			Detail: map[string]any{"reason": "already_latest"}}
	}
	o, err := h.files.CopyFrom(r.Context(), a, src, object.CopyInput{DstBucket: bucket, DstKey: b.Key})
	if err != nil {
		return nil, err
	}
	return created(toFileJSON(o)), nil
}

// listTrash is GET /buckets/{bucket}/trash: the deleted files, by key,
// paged as file listings are.
func (h *fileHandlers) listTrash(r *http.Request, p auth.Principal) (response, error) {
	_, opts, err := listQuery(r)
	if err != nil {
		return nil, err
	}
	opts.DeleteMarkers = true
	page, err := h.files.List(r.Context(), actor(r, p), r.PathValue("bucket"), opts)
	if err != nil {
		return nil, err
	}
	out := make([]deletedJSON, len(page.Objects))
	for i, o := range page.Objects {
		out[i] = deletedJSON{Key: o.Key, VersionID: o.VersionID, DeletedAt: o.ModTime}
	}
	return ok(withCursor(map[string]any{"files": out}, page)), nil
}

// maxUndeleteMarkers bounds the delete markers one undelete removes (a key
// deleted again and again through S3 has one marker per delete).
const maxUndeleteMarkers = 100

// undelete is POST /buckets/{bucket}/undelete: the delete markers on top
// of the key's versions are removed, so that the newest version under
// them is the latest again, and returned. A key that is not deleted is a
// Conflict; one with no version under its markers, NotFound (nothing is
// removed then).
func (h *fileHandlers) undelete(r *http.Request, p auth.Principal) (response, error) {
	var b keyVersionBody
	if err := h.decodeJSON(r, &b); err != nil {
		return nil, err
	}
	if b.Key == "" || b.VersionID != "" {
		return nil, errcode.New(errcode.InvalidArgument, "key is required (and nothing else)")
	}
	bucket, a := r.PathValue("bucket"), actor(r, p)
	if err := object.ValidKey(b.Key); err != nil {
		return nil, err
	}
	if err := h.versioned(r.Context(), a, bucket); err != nil {
		return nil, err
	}
	vs, _, err := h.keyVersions(r.Context(), a, bucket, b.Key, "", maxUndeleteMarkers+1)
	if err != nil {
		return nil, err
	}
	n := 0
	for n < len(vs) && vs[n].DeleteMarker {
		n++
	}
	switch {
	case len(vs) == 0:
		return nil, object.ErrNoObject(b.Key)
	case n == 0:
		return nil, &errcode.Error{Code: errcode.Conflict, Message: "the file is not deleted", Detail: map[string]any{"reason": "not_deleted"}}
	case n == len(vs) && n > maxUndeleteMarkers:
		return nil, errcode.New(errcode.TooLarge, "the file has more than %d delete markers on top: remove them by version_id", maxUndeleteMarkers)
	case n == len(vs):
		return nil, &errcode.Error{Code: errcode.NotFound, Message: "no version of the file is left to bring back", Detail: map[string]any{"resource": "version"}}
	}
	// Newest first: were it interrupted, the key stays deleted under the
	// markers left, and a retry removes them.
	for _, m := range vs[:n] {
		if _, err := h.files.DeleteVersion(r.Context(), a, bucket, b.Key, m.VersionID, meta.Cond{}); err != nil && !errcode.Is(err, errcode.NotFound) {
			return nil, err
		}
	}
	back := vs[n]
	back.IsLatest = true
	return ok(toFileJSON(back)), nil
}
