package sigv2

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// SignRequest signs req with the Authorization header, as boto's
// HmacV1Auth does: it sets Date to now (HTTP format) unless req carries
// Date or X-Amz-Date (with X-Amz-Date the Date line is empty, as
// documented), and signs
// Content-MD5, Content-Type, every x-amz-* header, the path as it will be
// sent (req.URL.EscapedPath()) and the sub-resources of req.URL.RawQuery.
// vhostBucket is the bucket of a virtual-host-style request ("" for path
// style).
func SignRequest(req *http.Request, vhostBucket, accessKeyID, secret string, now time.Time) error {
	if err := checkSigner(accessKeyID, secret); err != nil {
		return err
	}
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Del("Authorization")
	s := stringToSign{Method: req.Method}
	s.ContentMD5, _ = headerValue(req.Header, "Content-Md5")
	s.ContentType, _ = headerValue(req.Header, "Content-Type")
	_, hasAmzDate := headerValue(req.Header, "X-Amz-Date")
	if _, ok := headerValue(req.Header, "Date"); !ok && !hasAmzDate {
		req.Header.Set("Date", now.UTC().Format(http.TimeFormat))
	}
	if !hasAmzDate {
		s.Date, _ = headerValue(req.Header, "Date")
	}
	s.Amz = amzHeaders(req.Header, "")
	s.Resource, _ = canonicalResource(requestPath(req), vhostBucket, req.URL.RawQuery, false)
	req.Header.Set("Authorization", Authorization{AccessKeyID: accessKeyID, Signature: Sign(secret, s.append(nil))}.String())
	return nil
}

// Presign returns rawURL presigned for method until expires, as boto's
// HmacV1QueryAuth does: rawURL's query followed by AWSAccessKeyId,
// Signature and Expires. headers (Content-Type, Content-MD5, x-amz-*), if
// any, are signed too and must be sent as headers with the request.
// vhostBucket is the bucket of a virtual-host-style URL ("" for path
// style).
func Presign(method, rawURL, vhostBucket string, headers http.Header, accessKeyID, secret string, expires time.Time) (string, error) {
	if err := checkSigner(accessKeyID, secret); err != nil {
		return "", err
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", err
	}
	if u.Host == "" {
		return "", errors.New("sigv2: presign needs an absolute URL")
	}
	q := u.Query()
	for _, p := range []string{"AWSAccessKeyId", "Signature", "Expires"} {
		if q.Has(p) {
			return "", errors.New("sigv2: URL to presign already carries " + p)
		}
	}
	if expires.Unix() < 0 || expires.Unix() > maxUnix {
		return "", errors.New("sigv2: expiry out of range")
	}
	exp := strconv.FormatInt(expires.Unix(), 10)
	s := stringToSign{Method: method, Date: exp}
	s.ContentMD5, _ = headerValue(headers, "Content-Md5")
	s.ContentType, _ = headerValue(headers, "Content-Type")
	s.Amz = amzHeaders(headers, "x-amz-date")
	s.Resource, _ = canonicalResource(requestPath(&http.Request{URL: u}), vhostBucket, u.RawQuery, false)
	raw := u.RawQuery
	if raw != "" {
		raw += "&"
	}
	raw += "AWSAccessKeyId=" + url.QueryEscape(accessKeyID) +
		"&Signature=" + url.QueryEscape(Sign(secret, s.append(nil))) +
		"&Expires=" + exp
	out := *u
	out.RawQuery = raw
	out.Fragment, out.RawFragment = "", ""
	return out.String(), nil
}

func checkSigner(accessKeyID, secret string) error {
	switch {
	case !validToken(accessKeyID) || strings.Contains(accessKeyID, ":"):
		return errors.New("sigv2: invalid access key ID")
	case secret == "":
		return errors.New("sigv2: empty secret")
	}
	return nil
}
