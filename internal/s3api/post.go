package s3api

import (
	"encoding/xml"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/httpx"
	"github.com/coffer-storage/coffer/internal/object"
	"github.com/coffer-storage/coffer/internal/ratelimit"
	"github.com/coffer-storage/coffer/internal/s3api/postpolicy"
	"github.com/coffer-storage/coffer/internal/s3api/s3err"
	"github.com/coffer-storage/coffer/internal/s3api/sigv2"
	"github.com/coffer-storage/coffer/internal/s3api/sigv4"
)

// Bounds of a POST form's fields (everything before the file part).
const (
	// maxPostFields bounds the values of the fields before the file, in
	// all (S3's limit: MaxPostPreDataLengthExceededError beyond it).
	maxPostFields = 20 << 10
	// maxPostFieldCount bounds their number.
	maxPostFieldCount = 100
	// maxPostPreamble bounds the raw bytes before the file's content:
	// the fields with their part headers and boundaries.
	maxPostPreamble = 64 << 10
)

// postAuthFields are the fields of a SigV4-signed form, in the order a
// missing one is reported.
var postAuthFields = []string{"policy", "x-amz-signature", "x-amz-credential", "x-amz-date", "x-amz-algorithm"}

// postOnlyFields are the form fields that are not object headers: they
// address, authenticate or answer the upload (tagging and acl are object
// headers under other names, see postHeader).
var postOnlyFields = map[string]bool{
	"key": true, "bucket": true, "policy": true, "awsaccesskeyid": true, "signature": true,
	"x-amz-algorithm": true, "x-amz-credential": true, "x-amz-date": true, "x-amz-signature": true,
	"success_action_status": true, "success_action_redirect": true, "redirect": true,
}

// postForm is a PostObject form read up to its file part.
type postForm struct {
	fields []postpolicy.Field // in form order, names as sent
	file   *multipart.Part
	pre    *preambleReader
}

// get returns the value of the field named name (case-insensitively).
func (f *postForm) get(name string) (string, bool) {
	for _, fl := range f.fields {
		if strings.EqualFold(fl.Name, name) {
			return fl.Value, true
		}
	}
	return "", false
}

// preambleReader bounds the bytes read before the file part's content
// (left < 0: unbounded, once the file part is reached).
type preambleReader struct {
	r        io.Reader
	left     int64
	exceeded bool
}

func (p *preambleReader) Read(b []byte) (int, error) {
	if p.left < 0 {
		return p.r.Read(b)
	}
	if p.left == 0 {
		p.exceeded = true
		return 0, errPreamble
	}
	if int64(len(b)) > p.left {
		b = b[:p.left]
	}
	n, err := p.r.Read(b)
	p.left -= int64(n)
	return n, err
}

var errPreamble = errors.New("post form: fields too large")

func tooLargeFields() error { return s3err.New(s3err.MaxPostPreDataLengthExceeded, "") }

// readPostForm reads q's multipart/form-data body up to the file part,
// which must come last (anything after it is never read, as S3 ignores
// it). The fields are bounded in size and number; the file's content is
// not read.
func readPostForm(q *request) (*postForm, error) {
	mt, params, err := mime.ParseMediaType(q.Header.Get("Content-Type"))
	if err != nil || !strings.EqualFold(mt, "multipart/form-data") {
		e := errcode.As(s3err.New(s3err.PreconditionFailed, ""))
		return nil, s3err.With(e, "condition", "Bucket POST must be of the enclosure-type multipart/form-data")
	}
	if params["boundary"] == "" {
		return nil, s3err.New(s3err.MalformedPOSTRequest, "")
	}
	f := &postForm{pre: &preambleReader{r: q.Body, left: maxPostPreamble}}
	mr := multipart.NewReader(f.pre, params["boundary"])
	total := 0
	for {
		part, err := mr.NextPart()
		switch {
		case errors.Is(err, io.EOF):
			return nil, s3err.New(s3err.IncorrectNumberOfFiles, "")
		case f.pre.exceeded:
			return nil, tooLargeFields()
		case err != nil:
			return nil, s3err.New(s3err.MalformedPOSTRequest, "")
		}
		name := part.FormName()
		if name == "" {
			return nil, s3err.New(s3err.MalformedPOSTRequest, "")
		}
		if strings.EqualFold(name, "file") {
			f.file, f.pre.left = part, -1
			return f, nil
		}
		if len(f.fields) == maxPostFieldCount {
			return nil, tooLargeFields()
		}
		v, err := io.ReadAll(io.LimitReader(part, int64(maxPostFields-total+1)))
		switch {
		case f.pre.exceeded:
			return nil, tooLargeFields()
		case err != nil:
			return nil, s3err.New(s3err.MalformedPOSTRequest, "")
		}
		if total += len(v); total > maxPostFields {
			return nil, tooLargeFields()
		}
		if _, dup := f.get(name); dup {
			return nil, s3err.New(s3err.InvalidArgument, "The form field "+strconv.Quote(s3err.Clip(name))+" appears more than once.")
		}
		f.fields = append(f.fields, postpolicy.Field{Name: name, Value: string(v)})
	}
}

// missingField is S3's answer to a form without a field it needs.
func missingField(name string) error {
	e := errcode.As(s3err.New(s3err.InvalidArgument,
		"Bucket POST must contain a field named '"+name+"'.  If it is specified, please check the order of the fields."))
	s3err.With(e, "argument_name", name)
	return s3err.With(e, "argument_value", "")
}

// authenticatePost verifies the form's signature (SigV4 fields, or SigV2's
// AWSAccessKeyId and signature) over its policy and sets q's actor. A form
// without any of them is anonymous (the object service decides what it
// may do); it returns the parsed policy (nil for anonymous forms).
func (api *API) authenticatePost(q *request, f *postForm) (*postpolicy.Policy, error) {
	var lookupErr error
	var principal auth.Principal
	lookup := func(id string) (string, error) {
		secret, p, err := api.keys.LookupKey(q.Context(), id)
		principal, q.keyID, lookupErr = p, id, err
		return secret, err
	}
	policy, hasPolicy := f.get("policy")
	if id, ok := f.get("AWSAccessKeyId"); ok {
		sig, ok := f.get("signature")
		switch {
		case !ok:
			return nil, missingField("Signature")
		case !hasPolicy:
			return nil, missingField("Policy")
		}
		if _, err := sigv2.VerifyPolicy(id, sig, policy, lookup); err != nil {
			return nil, err
		}
	} else {
		present := 0
		var missing string
		for _, n := range postAuthFields {
			if _, ok := f.get(n); ok {
				present++
			} else if missing == "" {
				missing = n
			}
		}
		if present == 0 {
			return nil, nil // anonymous
		}
		if missing != "" {
			return nil, missingField(missing)
		}
		form := sigv4.PostForm{Policy: policy}
		form.Algorithm, _ = f.get("x-amz-algorithm")
		form.Credential, _ = f.get("x-amz-credential")
		form.Date, _ = f.get("x-amz-date")
		form.Signature, _ = f.get("x-amz-signature")
		if _, err := sigv4.VerifyPost(form, lookup, sigv4.Options{Region: api.cfg.Region, Now: api.cfg.Now, Keys: api.keyCache}); err != nil {
			return nil, err
		}
	}
	if lookupErr != nil {
		return nil, lookupErr
	}
	if tok, ok := f.get("x-amz-security-token"); ok && tok != "" {
		return nil, s3err.New(s3err.InvalidRequest, "Session tokens (x-amz-security-token) are not supported.")
	}
	p, err := postpolicy.Parse(policy)
	if err != nil {
		return nil, err
	}
	q.actor, q.authed = object.Actor{UserID: principal.UserID}, true
	principal.Verified(q.Context())
	httpx.SetUser(q.Context(), q.actor.UserID)
	// The per-access-key quota, charged once the signature holds (as
	// for signed requests, in Handler).
	if err := httpx.Limit(q.Context(), ratelimit.DimKey, q.keyID); err != nil {
		return nil, err
	}
	return p, nil
}

// postObject is S3's PostObject: an HTML form uploads a file to the
// bucket (docs/post-uploads.md). The fields before the file part
// are read (bounded), the signature and the policy checked, and only then
// does the file stream into storage through PutObject's path, with the
// policy's content-length-range enforced as it streams.
func (api *API) postObject(q *request) (response, error) {
	f, err := readPostForm(q)
	if err != nil {
		return nil, err
	}
	key, ok := f.get("key")
	if !ok {
		return nil, missingField("key")
	}
	key = strings.ReplaceAll(key, "${filename}", f.file.FileName())
	policy, err := api.authenticatePost(q, f)
	if err != nil {
		return nil, err
	}
	// The fields the policy is checked against: the form's, with the key
	// as it will be stored and the bucket the request addresses.
	fields := make([]postpolicy.Field, 0, len(f.fields)+1)
	for _, fl := range f.fields {
		switch strings.ToLower(fl.Name) {
		case "bucket":
			continue
		case "key":
			fl.Value = key
		}
		fields = append(fields, fl)
	}
	fields = append(fields, postpolicy.Field{Name: "bucket", Value: q.bucket})
	limit := postLimit{max: MaxPutSize}
	if policy != nil {
		if err := policy.Check(fields, api.cfg.Now()); err != nil {
			return nil, err
		}
		limit.min = policy.MinLength
		if policy.MaxLength >= 0 && policy.MaxLength < limit.max {
			limit.max = policy.MaxLength
		}
	}
	put, err := postRequest(q, f, key)
	if err != nil {
		return nil, err
	}
	// The object fields go through the refusal table as PutObject's
	// headers do: what Coffer would not honour is refused, not ignored.
	if err := api.checkRequest("PutObject", put); err != nil {
		return nil, err
	}
	limit.r = f.file
	o, h, err := api.storeObject(put, &limit, -1)
	if err != nil {
		return nil, err
	}
	loc := api.postLocation(q, key)
	h.Set("Location", loc)
	etag := `"` + o.ETag + `"`
	if to, ok := f.get("success_action_redirect"); ok {
		if u := redirectTarget(to, q.bucket, key, etag); u != "" {
			h.Set("Location", u)
			return empty{status: http.StatusSeeOther, header: h}, nil
		}
	} else if to, ok := f.get("redirect"); ok {
		if u := redirectTarget(to, q.bucket, key, etag); u != "" {
			h.Set("Location", u)
			return empty{status: http.StatusSeeOther, header: h}, nil
		}
	}
	status, _ := f.get("success_action_status")
	switch status {
	case "200":
		return empty{status: http.StatusOK, header: h}, nil
	case "201":
		return xmlResponse{status: http.StatusCreated, header: h,
			body: postResponse{Location: loc, Bucket: q.bucket, Key: key, ETag: etag}}, nil
	}
	return empty{status: http.StatusNoContent, header: h}, nil
}

// postRequest is the PutObject request a form makes: q addressing key,
// with the form's object fields (Content-Type, x-amz-meta-*, checksums,
// SSE, ...) as its headers; acl is x-amz-acl, and tagging (a Tagging XML
// document) becomes x-amz-tagging.
func postRequest(q *request, f *postForm, key string) (*request, error) {
	h := http.Header{}
	for _, fl := range f.fields {
		n := strings.ToLower(fl.Name)
		switch {
		case postOnlyFields[n] || strings.HasPrefix(n, "x-ignore-"):
		case n == "acl":
			h.Add("X-Amz-Acl", fl.Value)
		case n == "tagging":
			tags, err := parseTagging([]byte(fl.Value))
			if err != nil {
				return nil, err
			}
			v := url.Values{}
			for _, t := range tags {
				v.Add(t.Key, t.Value)
			}
			h.Set("X-Amz-Tagging", v.Encode())
		case n == "content-type" && fl.Value == "":
			// An empty Content-Type field is S3's default.
		default:
			h.Add(fl.Name, fl.Value)
		}
	}
	r := q.Request.WithContext(q.Context())
	r.Header = h
	put := *q
	put.Request, put.key = r, key
	put.pay = payload{decodedLength: -1}
	return &put, nil
}

// postLocation is the URL of the uploaded object, addressed as the
// request addressed its bucket (path or virtual-host style).
func (api *API) postLocation(q *request, key string) string {
	u := api.objectURL(q) // the bucket's URL
	return strings.TrimSuffix(u, "/") + "/" + sigv4.URIEncode(key, false)
}

// redirectTarget is success_action_redirect with the upload's bucket, key
// and ETag added to its query, as S3 answers; "" if it is no absolute
// http(s) URL (S3 then answers as without it).
func redirectTarget(to, bucket, key, etag string) string {
	u, err := url.Parse(to)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	add := "bucket=" + url.QueryEscape(bucket) + "&key=" + url.QueryEscape(key) + "&etag=" + url.QueryEscape(etag)
	if u.RawQuery != "" {
		u.RawQuery += "&" + add
	} else {
		u.RawQuery = add
	}
	return u.String()
}

// postResponse is the body of success_action_status 201.
type postResponse struct {
	XMLName  xml.Name `xml:"PostResponse"`
	Location string   `xml:"Location"`
	Bucket   string   `xml:"Bucket"`
	Key      string   `xml:"Key"`
	ETag     string   `xml:"ETag"`
}

// postLimit is the file part under the policy's content-length-range:
// more than max bytes fail at once with EntityTooLarge, fewer than min at
// EOF with EntityTooSmall, so that the object service aborts the upload
// and stores nothing.
type postLimit struct {
	r        io.Reader
	n        int64
	min, max int64
}

// postSizeLookahead is how far past max a too-large file is read to tell
// the client its size (S3's ProposedSize).
const postSizeLookahead = 64 << 10

func (l *postLimit) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.n += int64(n)
	if l.n > l.max {
		e := errcode.As(s3err.New(s3err.EntityTooLarge, ""))
		s3err.With(e, "max_size_allowed", l.max)
		if m, err := io.Copy(io.Discard, io.LimitReader(l.r, postSizeLookahead)); err == nil && m < postSizeLookahead {
			s3err.With(e, "proposed_size", l.n+m)
		}
		return 0, e
	}
	if errors.Is(err, io.EOF) && l.n < l.min {
		e := errcode.As(s3err.New(s3err.EntityTooSmall, ""))
		s3err.With(e, "proposed_size", l.n)
		return n, s3err.With(e, "min_size_allowed", l.min)
	}
	return n, err
}
