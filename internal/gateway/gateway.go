// Package gateway opens the backends of gateway buckets (docs/gateway.md):
// an existing bucket of any S3-compatible store, fronted by Coffer as one
// of its buckets. It parses the --gateway specification and the URL kept
// in the bucket record, reads credentials from a file when one is named,
// and adapts s3blob's object-level API to object.GatewayStore. The object
// service decides everything else (authorisation, encryption, what is
// refused).
//
// # Specification
//
//	NAME=s3://BUCKET[/PREFIX]?endpoint=URL&region=R&mode=ro|rw&owner=EMAIL[&public=true][&credentials_file=PATH][&path_style=true|false]
//
// mode and owner are required. Credentials come from the standard AWS
// chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, instance
// roles) or, with credentials_file, from a file of "access_key=…" and
// "secret_key=…" lines; a secret is never accepted in the specification
// itself (it would show in ps and in shell histories).
//
// The bucket record keeps the URL part without owner and public (those
// are the record's owner and visibility): see Spec.URL.
//
// # Cache
//
// With Opener.Cache set, reads of backend objects go through the node's
// blob cache (cacheblob.Cache.Open), keyed by the identity (endpoint,
// backend bucket, backend key, backend ETag): the object service HEADs
// the backend on every read and asks for the version it saw, so the ETag
// it passes to Get names the content, and an object replaced behind
// Coffer's back has a new ETag, hence a new identity, and is never served
// from the old one's bytes. Misses fetch aligned chunks with If-Match on
// that ETag (a replacement between the HEAD and the fetch is
// PreconditionFailed, never cached, never mixed). An object the backend
// gives no ETag is read around the cache. The cache holds what the
// backend holds: ciphertext for objects Coffer encrypted.
package gateway

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/coffer-storage/coffer/internal/blob/cacheblob"
	"github.com/coffer-storage/coffer/internal/blob/s3blob"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
)

// Mode is what Coffer may do to a gateway's backend.
type Mode string

// The modes.
const (
	ReadOnly  Mode = "ro"
	ReadWrite Mode = "rw"
)

// Spec is a parsed --gateway specification (or, without Name, Owner and
// Public, a bucket record's gateway URL).
type Spec struct {
	Name            string // the Coffer bucket
	Bucket          string // the backend's bucket
	Prefix          string // "" or ending in "/"
	Endpoint        string // "" = AWS S3 of Region
	Region          string
	PathStyle       *bool // nil: on with an Endpoint
	Mode            Mode
	Owner           string // the owner's email
	Public          bool   // public-read
	CredentialsFile string
}

// ParseSpec parses NAME=s3://BUCKET[/PREFIX]?… (see the package doc).
func ParseSpec(raw string) (Spec, error) {
	name, rest, ok := strings.Cut(raw, "=")
	if !ok || name == "" {
		return Spec{}, errors.New("gateway: want NAME=s3://BUCKET[/PREFIX]?endpoint=…&mode=ro|rw&owner=EMAIL")
	}
	if err := object.ValidBucketName(name); err != nil {
		return Spec{}, fmt.Errorf("gateway %q: invalid bucket name", name)
	}
	sp, err := parseURL(rest, true)
	if err != nil {
		return Spec{}, fmt.Errorf("gateway %q: %w", name, err)
	}
	sp.Name = name
	return sp, nil
}

// ParseURL parses a bucket record's gateway URL (no owner or public).
func ParseURL(raw string) (Spec, error) {
	sp, err := parseURL(raw, false)
	if err != nil {
		return Spec{}, fmt.Errorf("gateway: %w", err)
	}
	return sp, nil
}

func parseURL(raw string, spec bool) (Spec, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Spec{}, fmt.Errorf("bad URL: %v", err)
	}
	if u.Scheme != "s3" || u.Host == "" || u.Opaque != "" {
		return Spec{}, errors.New("want s3://BUCKET[/PREFIX]?…")
	}
	if u.User != nil {
		return Spec{}, errors.New("credentials do not belong in the URL: use credentials_file= or the AWS credential chain")
	}
	if u.Fragment != "" || u.RawFragment != "" {
		return Spec{}, errors.New("a fragment (#…) is not allowed")
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return Spec{}, fmt.Errorf("bad query: %v", err)
	}
	sp := Spec{Bucket: u.Host, Prefix: strings.TrimPrefix(u.Path, "/")}
	if strings.ContainsAny(sp.Bucket, ":/") || sp.Bucket != strings.ToLower(sp.Bucket) {
		return Spec{}, fmt.Errorf("bad backend bucket name %q", sp.Bucket)
	}
	if sp.Prefix != "" && !strings.HasSuffix(sp.Prefix, "/") {
		sp.Prefix += "/"
	}
	if strings.Contains(sp.Prefix, "//") || strings.HasPrefix(sp.Prefix, "/") {
		return Spec{}, errors.New("the prefix has an empty segment")
	}
	for k, vs := range q {
		if len(vs) != 1 {
			return Spec{}, fmt.Errorf("parameter %q given %d times", k, len(vs))
		}
		v := vs[0]
		switch k {
		case "endpoint":
			e, err := url.Parse(v)
			if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" || e.User != nil {
				return Spec{}, fmt.Errorf("endpoint %q: want http(s)://HOST[:PORT]", v)
			}
			sp.Endpoint = v
		case "region":
			sp.Region = v
		case "path_style":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return Spec{}, fmt.Errorf("path_style: %v", err)
			}
			sp.PathStyle = &b
		case "mode":
			sp.Mode = Mode(v)
			if sp.Mode != ReadOnly && sp.Mode != ReadWrite {
				return Spec{}, fmt.Errorf("mode %q: want ro or rw", v)
			}
		case "credentials_file":
			if v == "" {
				return Spec{}, errors.New("credentials_file is empty")
			}
			sp.CredentialsFile = v
		case "owner", "public":
			if !spec {
				return Spec{}, fmt.Errorf("parameter %q belongs to the bucket record, not its URL", k)
			}
			if k == "owner" {
				if v == "" || !strings.Contains(v, "@") {
					return Spec{}, fmt.Errorf("owner %q: want an email", v)
				}
				sp.Owner = v
				break
			}
			b, err := strconv.ParseBool(v)
			if err != nil {
				return Spec{}, fmt.Errorf("public: %v", err)
			}
			sp.Public = b
		case "access_key", "secret_key", "session_token":
			return Spec{}, fmt.Errorf("parameter %q: never put credentials on the command line; name a file with credentials_file= or use the AWS credential chain", k)
		default:
			return Spec{}, fmt.Errorf("unknown parameter %q", k)
		}
	}
	if sp.Mode == "" {
		return Spec{}, errors.New("mode=ro or mode=rw is required")
	}
	if spec && sp.Owner == "" {
		return Spec{}, errors.New("owner=EMAIL is required")
	}
	return sp, nil
}

// URL is the canonical gateway URL kept in the bucket record: everything
// but the name, owner and public, in a fixed order.
func (sp Spec) URL() string {
	q := url.Values{}
	if sp.Endpoint != "" {
		q.Set("endpoint", sp.Endpoint)
	}
	if sp.Region != "" {
		q.Set("region", sp.Region)
	}
	if sp.PathStyle != nil {
		q.Set("path_style", strconv.FormatBool(*sp.PathStyle))
	}
	q.Set("mode", string(sp.Mode))
	if sp.CredentialsFile != "" {
		q.Set("credentials_file", sp.CredentialsFile)
	}
	u := url.URL{Scheme: "s3", Host: sp.Bucket, Path: "/" + sp.Prefix, RawQuery: q.Encode()}
	if sp.Prefix == "" {
		u.Path = ""
	}
	return u.String()
}

// Visibility is the visibility the specification asks for.
func (sp Spec) Visibility() meta.Visibility {
	if sp.Public {
		return meta.PublicRead
	}
	return meta.Private
}

// readCredentials reads access_key= and secret_key= lines ('#' starts a
// comment).
func readCredentials(path string) (access, secret string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", "", fmt.Errorf("credentials file: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, 64<<10))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch {
		case !ok:
			return "", "", fmt.Errorf("credentials file %s: want key=value lines", path)
		case k == "access_key":
			access = v
		case k == "secret_key":
			secret = v
		default:
			return "", "", fmt.Errorf("credentials file %s: unknown key %q (want access_key, secret_key)", path, k)
		}
	}
	if err := sc.Err(); err != nil {
		return "", "", fmt.Errorf("credentials file %s: %w", path, err)
	}
	if access == "" || secret == "" {
		return "", "", fmt.Errorf("credentials file %s: needs both access_key and secret_key", path)
	}
	return access, secret, nil
}

// Open opens the backend of a bucket record's gateway URL and checks its
// bucket is reachable, without a cache. It is an object.OpenGateway.
func Open(ctx context.Context, raw string) (object.GatewayStore, error) {
	return Opener{}.Open(ctx, raw)
}

// Opener opens gateway backends.
type Opener struct {
	// Cache, if set, is the cache the backends' reads go through (see
	// the package doc); nil: every read is a backend GET.
	Cache *cacheblob.Cache
}

// Open is Open with the opener's cache. It is an object.OpenGateway.
func (op Opener) Open(ctx context.Context, raw string) (object.GatewayStore, error) {
	sp, err := ParseURL(raw)
	if err != nil {
		return nil, err
	}
	opts := s3blob.Options{Bucket: sp.Bucket, Prefix: sp.Prefix, Endpoint: sp.Endpoint, Region: sp.Region, PathStyle: sp.Endpoint != ""}
	if sp.PathStyle != nil {
		opts.PathStyle = *sp.PathStyle
	}
	if sp.CredentialsFile != "" {
		if opts.AccessKey, opts.SecretKey, err = readCredentials(sp.CredentialsFile); err != nil {
			return nil, err
		}
	}
	st, err := s3blob.Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	origin := sp.Endpoint
	if origin == "" {
		origin = "aws:" + sp.Region
	}
	return &Store{s3: st, writable: sp.Mode == ReadWrite, cache: op.Cache, origin: origin + "\x00" + sp.Bucket}, nil
}

// Store is a gateway bucket's backend.
type Store struct {
	s3       *s3blob.Store
	writable bool
	cache    *cacheblob.Cache // nil: no cache
	origin   string           // endpoint and bucket, for cache identities
}

var _ object.GatewayStore = (*Store)(nil)

func toObject(o s3blob.ObjectInfo) meta.Object {
	return meta.Object{Key: o.Key, Size: o.Size, ETag: o.ETag, ContentType: o.ContentType, Metadata: o.Metadata, ModTime: o.LastModified}
}

// Head implements object.GatewayStore.
func (g *Store) Head(ctx context.Context, key string) (meta.Object, error) {
	o, err := g.s3.HeadObject(ctx, key)
	return toObject(o), err
}

// Get implements object.GatewayStore, through the cache if there is one
// and the version has an ETag.
func (g *Store) Get(ctx context.Context, key, etag string, offset, length int64) (io.ReadCloser, error) {
	if g.cache == nil || etag == "" {
		return g.s3.GetObject(ctx, key, etag, offset, length)
	}
	fetch := func(ctx context.Context, off, n int64) (io.ReadCloser, error) {
		if n == 0 {
			return io.NopCloser(strings.NewReader("")), nil
		}
		return g.s3.GetObject(ctx, key, etag, off, n)
	}
	return g.cache.Open(ctx, g.cacheIdentity(key, etag), fetch, offset, length)
}

// cacheIdentity names the content of one backend object version in the
// cache: "gateway", endpoint, bucket, backend key (prefix and key) and
// ETag, NUL-separated. Only the key might hold a NUL, and it sits between
// parts that cannot, so two versions never share an identity; Coffer's
// own blob keys (the identities of native blobs) hold no NUL.
func (g *Store) cacheIdentity(key, etag string) string {
	return "gateway\x00" + g.origin + "\x00" + g.BackendKey(key) + "\x00" + etag
}

// maxRune sorts after every key under a prefix (keys are UTF-8).
const maxRune = "\U0010FFFF"

// List implements object.GatewayStore: one ListObjectsV2. A StartAfter
// that is a common prefix (it holds the delimiter after the prefix)
// skips everything under it.
func (g *Store) List(ctx context.Context, opts meta.ListOptions) (meta.ListPage, error) {
	limit := opts.Limit
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	after := opts.StartAfter
	rolled := opts.Delimiter != "" && strings.HasPrefix(after, opts.Prefix) &&
		strings.Contains(after[len(opts.Prefix):], opts.Delimiter) && strings.HasSuffix(after, opts.Delimiter)
	if rolled {
		after += maxRune
	}
	res, err := g.s3.ListObjects(ctx, opts.Prefix, opts.Delimiter, after, limit)
	if err != nil {
		return meta.ListPage{}, err
	}
	var p meta.ListPage
	for _, o := range res.Objects {
		if rolled && strings.HasPrefix(o.Key, opts.StartAfter) {
			continue
		}
		p.Objects = append(p.Objects, toObject(o))
	}
	for _, cp := range res.CommonPrefixes {
		if cp != opts.StartAfter {
			p.CommonPrefixes = append(p.CommonPrefixes, cp)
		}
	}
	p.Truncated = res.Truncated
	if p.Truncated {
		last := ""
		if n := len(res.Objects); n > 0 {
			last = res.Objects[n-1].Key
		}
		if n := len(res.CommonPrefixes); n > 0 && res.CommonPrefixes[n-1] > last {
			last = res.CommonPrefixes[n-1]
		}
		p.NextStartAfter = last
		if last == "" {
			p.Truncated = false
		}
	}
	slices.SortFunc(p.Objects, func(a, b meta.Object) int { return strings.Compare(a.Key, b.Key) })
	return p, nil
}

// Put implements object.GatewayStore.
func (g *Store) Put(ctx context.Context, key string, r io.Reader, size int64, contentType string, md map[string]string) (meta.Object, error) {
	o, err := g.s3.PutObject(ctx, key, r, size, s3blob.PutOptions{ContentType: contentType, Metadata: md})
	return toObject(o), err
}

// Delete implements object.GatewayStore.
func (g *Store) Delete(ctx context.Context, key string) error { return g.s3.DeleteObject(ctx, key) }

// BackendKey implements object.GatewayStore.
func (g *Store) BackendKey(key string) string { return g.s3.Prefix() + key }

// Writable implements object.GatewayStore.
func (g *Store) Writable() bool { return g.writable }
