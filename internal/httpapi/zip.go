package httpapi

import (
	"archive/zip"
	"context"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/httpx"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
)

// Zip downloads: a selection of objects streamed as one zip archive,
// never built in memory or on disk. The entries are planned first, from
// metadata only (names, sizes), so that the limits on entries and bytes
// refuse a request before a byte is sent; then each object is looked up
// again and streamed into its entry. archive/zip writes each entry's
// CRC-32 and sizes in a data descriptor after its bytes and switches to
// Zip64 (in the data descriptor, the central directory and the end
// record) when an entry or the archive passes 4 GiB or 65,535 entries.
//
// An object that is gone when its turn comes (deleted, or its bytes
// reclaimed) is skipped and named in a trailing "_errors.txt" entry. An
// object that fails after its first bytes were sent cannot be taken back:
// the response is then aborted (the connection is cut, the archive has no
// central directory), so a client never sees a complete-looking archive
// with a truncated entry.

// zipEntry is one file of a planned zip.
type zipEntry struct {
	Name    string // in the archive
	Key     string // the object
	Size    int64  // at planning time
	ModTime time.Time
	Type    string
}

// zipOpener opens the current version of key for a zip entry. NotFound
// means the object is gone: the entry is skipped.
type zipOpener func(ctx context.Context, key string) (io.ReadCloser, error)

// zipLimits bound one zip request.
type zipLimits struct {
	Entries int
	Bytes   int64
}

// zipper plans the zips of the file API and of folder links within
// their limits, and streams them.
type zipper struct {
	files       Files
	buckets     Buckets
	limits      zipLimits        // Config.MaxZipEntries, MaxZipBytes
	planTimeout time.Duration    // Config.ZipPlanTimeout
	before      func(key string) // Config.BeforeZipEntry: fault injection (tests)
	log         *slog.Logger
}

// planning returns the context a zip is planned in: the request's,
// with ZipPlanTimeout (the route streams, so the request timeout does not
// bound it). done turns an error of planning into the answer: a planning
// that ran out of time is a zip too large to plan.
func (z *zipper) planning(r *http.Request) (ctx context.Context, done func(error) error) {
	ctx, cancel := context.WithTimeout(r.Context(), z.planTimeout)
	return ctx, func(err error) error {
		cancel()
		if err != nil && ctx.Err() == context.DeadlineExceeded && r.Context().Err() == nil {
			return &errcode.Error{Code: errcode.TooLarge,
				Message: fmt.Sprintf("the zip could not be planned within %s: ask for fewer files or folders", z.planTimeout),
				Detail:  map[string]any{"reason": "zip_too_large", "plan_timeout_seconds": z.planTimeout.Seconds()}}
		}
		return err
	}
}

// planPrefix plans every object under prefix, named relative to it.
func (z *zipper) planPrefix(ctx context.Context, a object.Actor, bucket, prefix string, plan *zipPlan) error {
	opts := meta.ListOptions{Prefix: prefix, Limit: 1000}
	for {
		page, err := z.files.List(ctx, a, bucket, opts)
		if err != nil {
			return err
		}
		for _, o := range page.Objects {
			if err := plan.add(o, strings.TrimPrefix(o.Key, prefix)); err != nil {
				return err
			}
		}
		if !page.Truncated {
			return nil
		}
		opts.StartAfter = page.NextStartAfter
	}
}

// plan plans keys (each its own name), then every object under
// prefixes (named relative to its prefix).
func (z *zipper) plan(ctx context.Context, a object.Actor, bucket string, keys, prefixes []string) (*zipPlan, error) {
	if _, err := z.buckets.GetBucket(ctx, a, bucket); err != nil {
		return nil, err
	}
	plan := newZipPlan(z.limits)
	for _, k := range keys {
		rd, err := z.files.Get(ctx, a, bucket, k)
		if err != nil {
			return nil, err
		}
		if err := plan.add(rd.Object, k); err != nil {
			return nil, err
		}
	}
	for _, pfx := range prefixes {
		if err := z.planPrefix(ctx, a, bucket, pfx, plan); err != nil {
			return nil, err
		}
	}
	return plan, nil
}

// stream answers plan's entries, each read anew from bucket as a when
// its turn comes, as the zip filename.
func (z *zipper) stream(filename string, plan *zipPlan, a object.Actor, bucket string, compress bool) *zipResponse {
	return &zipResponse{log: z.log, filename: filename, entries: plan.entries, compress: compress,
		open: objectZipOpener(z.files, a, bucket), before: z.before}
}

// zipPlan collects the entries of a zip under its limits.
type zipPlan struct {
	limits  zipLimits
	entries []zipEntry
	bytes   int64
	names   map[string]bool
	keys    map[string]bool
}

func newZipPlan(l zipLimits) *zipPlan {
	return &zipPlan{limits: l, names: map[string]bool{}, keys: map[string]bool{}}
}

// add plans object o under name (sanitised; the full key, sanitised, when
// the name is taken). A key already planned is skipped. It returns
// TooLarge once a limit is passed.
func (p *zipPlan) add(o meta.Object, name string) error {
	if p.keys[o.Key] {
		return nil
	}
	name = zipName(name)
	if name == "" || p.names[name] || name == zipErrorsName {
		name = zipName(o.Key)
	}
	for i := 2; p.names[name] || name == zipErrorsName; i++ {
		name = fmt.Sprintf("%s (%d)", zipName(o.Key), i)
	}
	p.keys[o.Key], p.names[name] = true, true
	p.entries = append(p.entries, zipEntry{Name: name, Key: o.Key, Size: o.Size, ModTime: o.ModTime, Type: o.ContentType})
	p.bytes += o.Size
	switch {
	case len(p.entries) > p.limits.Entries:
		return &errcode.Error{Code: errcode.TooLarge, Message: fmt.Sprintf("the zip would hold more than %d files", p.limits.Entries),
			Detail: map[string]any{"reason": "zip_too_large", "max_entries": p.limits.Entries}}
	case p.bytes > p.limits.Bytes:
		return &errcode.Error{Code: errcode.TooLarge, Message: fmt.Sprintf("the zip would hold more than %d bytes", p.limits.Bytes),
			Detail: map[string]any{"reason": "zip_too_large", "max_bytes": p.limits.Bytes}}
	}
	return nil
}

// maxZipPrefixes bounds the prefixes of one zip request once covered
// ones are dropped: each costs at least one listing, even empty.
const maxZipPrefixes = 1000

// coverPrefixes returns prefixes sorted, without duplicates and without
// any prefix another one covers ("a/b/" goes when "a/" is there; "" covers
// everything): each object under them is then listed exactly once.
func coverPrefixes(prefixes []string) []string {
	sorted := slices.Clone(prefixes)
	slices.Sort(sorted)
	out := sorted[:0]
	for _, p := range sorted {
		// Sorted, the strings a prefix covers follow it in one run, so
		// only the last one kept can cover p.
		if len(out) > 0 && strings.HasPrefix(p, out[len(out)-1]) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// covered reports whether a prefix of sorted (coverPrefixes' result)
// covers key.
func covered(sorted []string, key string) bool {
	// The covering prefix, if any, is the greatest one <= key.
	i, found := slices.BinarySearch(sorted, key)
	if found {
		return true
	}
	return i > 0 && strings.HasPrefix(key, sorted[i-1])
}

// uncoveredKeys returns keys in their order, without duplicates and
// without those a prefix of sorted covers (listed with it already).
func uncoveredKeys(keys, sorted []string) []string {
	seen := make(map[string]bool, len(keys))
	var out []string
	for _, k := range keys {
		if seen[k] || covered(sorted, k) {
			continue
		}
		seen[k] = true
		out = append(out, k)
	}
	return out
}

// zipErrorsName is the trailing entry that lists the objects skipped.
const zipErrorsName = "_errors.txt"

// zipName sanitises an entry name: "/"-separated, relative, with no
// empty, "." or ".." segment and no backslash (which some extractors
// treat as a separator). "" if nothing is left.
func zipName(name string) string {
	segs := strings.Split(strings.ReplaceAll(name, "\\", "_"), "/")
	out := segs[:0]
	for _, s := range segs {
		if s == "" || s == "." || s == ".." {
			continue
		}
		out = append(out, s)
	}
	return strings.Join(out, "/")
}

// compressedExt are extensions of formats that are compressed already:
// stored, never deflated again.
var compressedExt = map[string]bool{
	".zip": true, ".gz": true, ".tgz": true, ".bz2": true, ".xz": true, ".zst": true, ".7z": true, ".rar": true,
	".jpg": true, ".jpeg": true, ".png": true, ".gif": true, ".webp": true, ".heic": true, ".avif": true,
	".mp3": true, ".mp4": true, ".m4a": true, ".m4v": true, ".mov": true, ".mkv": true, ".webm": true, ".ogg": true, ".opus": true, ".flac": true,
	".pdf": true, ".docx": true, ".xlsx": true, ".pptx": true, ".odt": true, ".jar": true, ".apk": true, ".woff2": true,
}

// alreadyCompressed reports whether an entry's bytes are compressed
// already, by extension or content type.
func alreadyCompressed(e zipEntry) bool {
	if compressedExt[strings.ToLower(path.Ext(e.Name))] {
		return true
	}
	mt, _, _ := mime.ParseMediaType(e.Type)
	switch {
	case strings.HasPrefix(mt, "image/") && mt != "image/svg+xml" && mt != "image/bmp",
		strings.HasPrefix(mt, "video/"), strings.HasPrefix(mt, "audio/"),
		mt == "application/zip", mt == "application/gzip", mt == "application/x-7z-compressed", mt == "application/zstd":
		return true
	}
	return false
}

// writeZip streams the entries into w as a zip archive: Store, or Deflate
// with compress for what is not compressed already. Objects gone before
// their first byte are listed in a trailing _errors.txt. It returns an
// error only when the archive could not be finished (w failed, or an
// object failed after its entry began): the caller must then make the
// transfer fail visibly.
func writeZip(ctx context.Context, w io.Writer, entries []zipEntry, open zipOpener, compress bool) error {
	zw := zip.NewWriter(w)
	var skipped []string
	buf := make([]byte, 256<<10)
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		rc, err := open(ctx, e.Key)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			skipped = append(skipped, fmt.Sprintf("%s: %s", e.Name, errcode.Message(err)))
			continue
		}
		fh := &zip.FileHeader{Name: e.Name, Method: zip.Store, Modified: e.ModTime.UTC()}
		if compress && !alreadyCompressed(e) {
			fh.Method = zip.Deflate
		}
		fw, err := zw.CreateHeader(fh)
		if err != nil {
			rc.Close()
			return err
		}
		_, err = io.CopyBuffer(fw, rc, buf)
		rc.Close()
		if err != nil {
			return fmt.Errorf("zip entry %q: %w", e.Name, err)
		}
	}
	if len(skipped) > 0 {
		fw, err := zw.CreateHeader(&zip.FileHeader{Name: zipErrorsName, Method: zip.Store, Modified: time.Now().UTC()})
		if err != nil {
			return err
		}
		if _, err := io.WriteString(fw, "These files could not be added to the archive:\n"+strings.Join(skipped, "\n")+"\n"); err != nil {
			return err
		}
	}
	return zw.Close()
}

// objectZipOpener opens keys of bucket as actor a, looking each up anew.
func objectZipOpener(objects Files, a object.Actor, bucket string) zipOpener {
	return func(ctx context.Context, key string) (io.ReadCloser, error) {
		rd, err := objects.Get(ctx, a, bucket, key)
		if err != nil {
			return nil, err
		}
		return rd.Open(ctx, 0, -1)
	}
}

// zipResponse streams a planned zip.
type zipResponse struct {
	log      *slog.Logger
	filename string
	entries  []zipEntry
	open     zipOpener
	compress bool
	before   func(key string) // fault injection (tests); nil in production
}

func (z *zipResponse) respond(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/zip")
	h.Set("Cache-Control", "no-store")
	disp := mime.FormatMediaType("attachment", map[string]string{"filename": z.filename})
	if disp == "" {
		disp = "attachment"
	}
	h.Set("Content-Disposition", disp)
	httpx.SetContentSafety(h)
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	open := z.open
	if z.before != nil {
		open = func(ctx context.Context, key string) (io.ReadCloser, error) {
			z.before(key)
			return z.open(ctx, key)
		}
	}
	if err := writeZip(r.Context(), w, z.entries, open, z.compress); err != nil {
		if r.Context().Err() == nil {
			z.log.WarnContext(r.Context(), "zip download aborted", "request_id", httpx.RequestID(r.Context()), "err", err)
		}
		// Cut the connection: an archive without its end is visibly
		// broken, a truncated entry in a finished archive would not be.
		panic(http.ErrAbortHandler)
	}
}
