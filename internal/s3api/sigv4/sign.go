package sigv4

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// unsignedHeaders are never signed by SignRequest: the Authorization
// header itself, headers proxies and transports add or rewrite, and
// hop-by-hop headers.
var unsignedHeaders = map[string]bool{
	"authorization":       true,
	"user-agent":          true,
	"expect":              true,
	"x-amzn-trace-id":     true,
	"connection":          true,
	"keep-alive":          true,
	"proxy-authorization": true,
	"proxy-connection":    true,
	"te":                  true,
	"trailer":             true,
	"transfer-encoding":   true,
	"upgrade":             true,
}

// SignRequest signs req with the Authorization header, as an SDK would. It
// sets X-Amz-Date (from now) and X-Amz-Content-Sha256 (payloadHash: the hex
// SHA-256 of the body, UnsignedPayload or a Streaming* constant) and signs
// host plus every header in req.Header except Authorization, User-Agent,
// Expect, X-Amzn-Trace-Id and hop-by-hop headers. Set Content-Length in
// req.Header to have it signed. region defaults to us-east-1; the service is
// s3. The path is signed as req.URL.EscapedPath() and the query as
// req.URL.RawQuery, so build them with URIEncode when keys need escaping.
func SignRequest(req *http.Request, accessKeyID, secret, region, payloadHash string, now time.Time) error {
	if err := checkSigner(accessKeyID, secret); err != nil {
		return err
	}
	if payloadHash == "" {
		return errors.New("sigv4: SignRequest needs a payload hash (hex SHA-256, UNSIGNED-PAYLOAD or STREAMING-*)")
	}
	if region == "" {
		region = DefaultRegion
	}
	if req.Header == nil {
		req.Header = http.Header{}
	}
	amzDate := now.UTC().Format(amzDateLayout)
	req.Header.Del("Authorization")
	req.Header.Set("X-Amz-Date", amzDate)
	req.Header.Set("X-Amz-Content-Sha256", payloadHash)

	signed := []string{"host"}
	for k := range req.Header {
		if lk := strings.ToLower(k); !unsignedHeaders[lk] && !slices.Contains(signed, lk) {
			signed = append(signed, lk)
		}
	}
	slices.Sort(signed)
	a := Authorization{
		AccessKeyID:   accessKeyID,
		Date:          amzDate[:8],
		Region:        region,
		Service:       DefaultService,
		SignedHeaders: signed,
	}
	sig, err := sign(&canonicalInput{
		method:      req.Method,
		escapedPath: req.URL.EscapedPath(),
		params:      canonicalParams(req.URL.RawQuery, false),
		req:         req,
		signed:      signed,
		payloadHash: payloadHash,
	}, a, secret, amzDate)
	if err != nil {
		return err
	}
	a.Signature = sig
	req.Header.Set("Authorization", a.String())
	return nil
}

// Presign returns rawURL presigned for method, valid from now for expires
// (1s to 7 days, whole seconds), with UNSIGNED-PAYLOAD. headers, if any,
// are signed too and must be sent with the request. The returned URL keeps
// rawURL's scheme, host and escaped path; its query is rawURL's parameters
// plus the X-Amz-* ones, in canonical (SigV4-encoded, sorted) form, followed
// by X-Amz-Signature. region defaults to us-east-1; the service is s3.
func Presign(method, rawURL string, headers http.Header, accessKeyID, secret, region string, now time.Time, expires time.Duration) (string, error) {
	if err := checkSigner(accessKeyID, secret); err != nil {
		return "", err
	}
	if expires < time.Second || expires > MaxPresignExpiry || expires%time.Second != 0 {
		return "", errors.New("sigv4: presign expiry must be a whole number of seconds between 1s and 7 days")
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", err
	}
	if u.Host == "" {
		return "", errors.New("sigv4: presign needs an absolute URL")
	}
	if region == "" {
		region = DefaultRegion
	}
	for _, p := range []string{"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires", "X-Amz-SignedHeaders", "X-Amz-Signature", "X-Amz-Security-Token"} {
		if u.Query().Has(p) {
			return "", errors.New("sigv4: URL to presign already carries " + p)
		}
	}
	amzDate := now.UTC().Format(amzDateLayout)
	req := &http.Request{Method: method, URL: u, Host: u.Host, Header: http.Header{}}
	signed := []string{"host"}
	for k, vs := range headers {
		lk := strings.ToLower(k)
		if lk == "host" || unsignedHeaders[lk] {
			continue
		}
		req.Header[k] = vs
		if !slices.Contains(signed, lk) {
			signed = append(signed, lk)
		}
	}
	slices.Sort(signed)
	a := Authorization{
		AccessKeyID:   accessKeyID,
		Date:          amzDate[:8],
		Region:        region,
		Service:       DefaultService,
		SignedHeaders: signed,
	}
	q := u.RawQuery
	if q != "" {
		q += "&"
	}
	q += "X-Amz-Algorithm=" + Algorithm +
		"&X-Amz-Credential=" + URIEncode(accessKeyID+"/"+a.Scope(), true) +
		"&X-Amz-Date=" + amzDate +
		"&X-Amz-Expires=" + strconv.FormatInt(int64(expires/time.Second), 10) +
		"&X-Amz-SignedHeaders=" + URIEncode(strings.Join(signed, ";"), true)
	params := canonicalParams(q, false)
	sig, err := sign(&canonicalInput{
		method:      method,
		escapedPath: u.EscapedPath(),
		params:      params,
		req:         req,
		signed:      signed,
		payloadHash: UnsignedPayload,
	}, a, secret, amzDate)
	if err != nil {
		return "", err
	}
	out := *u
	out.RawQuery = string(appendParams(nil, params)) + "&X-Amz-Signature=" + sig
	out.Fragment, out.RawFragment = "", ""
	return out.String(), nil
}

func checkSigner(accessKeyID, secret string) error {
	switch {
	case accessKeyID == "" || strings.ContainsAny(accessKeyID, ", \t\r\n"):
		return errors.New("sigv4: invalid access key ID")
	case secret == "":
		return errors.New("sigv4: empty secret")
	}
	return nil
}

// sign returns the hex signature of the canonical request in.
func sign(in *canonicalInput, a Authorization, secret, amzDate string) (string, error) {
	buf, missing := appendCanonicalRequest(make([]byte, 0, 1024), in)
	if missing != "" {
		return "", errors.New("sigv4: cannot sign: header " + missing + " has no value")
	}
	n := len(buf)
	buf = appendStringToSign(buf, amzDate, a.Scope(), buf[:n])
	key := deriveKey(secret, a.Date, a.Region, a.Service)
	sig := signature(key[:], buf[n:])
	return string(sig[:]), nil
}
