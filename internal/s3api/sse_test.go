package s3api

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"net/http/httptest"
	"testing"

	"github.com/coffer-storage/coffer/internal/crypt"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

// TestCustomerKeyHeaders: the SSE-C headers as S3 checks them.
func TestCustomerKeyHeaders(t *testing.T) {
	key := bytes.Repeat([]byte{1}, 32)
	sum := md5.Sum(key)
	k64, m64 := base64.StdEncoding.EncodeToString(key), base64.StdEncoding.EncodeToString(sum[:])
	short := base64.StdEncoding.EncodeToString(key[:16])
	for _, tc := range []struct {
		name   string
		remote string
		hdr    []string // algorithm, key, md5
		want   string   // S3 code, "" = accepted
		key    bool
	}{
		{name: "none", remote: "127.0.0.1:1"},
		{name: "good", remote: "127.0.0.1:1", hdr: []string{"AES256", k64, m64}, key: true},
		{name: "ipv6 loopback", remote: "[::1]:1", hdr: []string{"AES256", k64, m64}, key: true},
		{name: "plain HTTP from afar", remote: "192.0.2.1:1", hdr: []string{"AES256", k64, m64}, want: s3err.InvalidRequest},
		{name: "wrong algorithm", remote: "127.0.0.1:1", hdr: []string{"AES128", k64, m64}, want: s3err.InvalidArgument},
		{name: "short key", remote: "127.0.0.1:1", hdr: []string{"AES256", short, m64}, want: s3err.InvalidArgument},
		{name: "bad base64", remote: "127.0.0.1:1", hdr: []string{"AES256", "!!!", m64}, want: s3err.InvalidArgument},
		{name: "wrong MD5", remote: "127.0.0.1:1", hdr: []string{"AES256", k64, base64.StdEncoding.EncodeToString(make([]byte, 16))}, want: s3err.InvalidArgument},
		{name: "no MD5", remote: "127.0.0.1:1", hdr: []string{"AES256", k64, ""}, want: s3err.InvalidArgument},
		{name: "MD5 only", remote: "127.0.0.1:1", hdr: []string{"", "", m64}, want: s3err.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "http://127.0.0.1/b/k", nil)
			r.RemoteAddr = tc.remote
			if tc.hdr != nil {
				for i, n := range []string{"Algorithm", "Key", "Key-Md5"} {
					if tc.hdr[i] != "" {
						r.Header.Set(sseCPrefix+n, tc.hdr[i])
					}
				}
			}
			got, md, err := customerKey(&request{Request: r}, sseCPrefix)
			code := ""
			if err != nil {
				code = s3err.Translate(err).Code
			}
			if code != tc.want || (got != nil) != tc.key {
				t.Fatalf("customerKey: key %x, md5 %q, err %v; want code %q, key %v", got, md, err, tc.want, tc.key)
			}
			if tc.key && (!bytes.Equal(got, key) || md != m64) {
				t.Errorf("key %x, md5 %q; want %x, %q", got, md, key, m64)
			}
		})
	}
}

func FuzzCustomerKeyHeaders(f *testing.F) {
	key := bytes.Repeat([]byte{1}, 32)
	sum := md5.Sum(key)
	f.Add("AES256", base64.StdEncoding.EncodeToString(key), base64.StdEncoding.EncodeToString(sum[:]))
	f.Add("AES256", "", "")
	f.Add("", "=", "==")
	f.Fuzz(func(t *testing.T, alg, k, m string) {
		r := httptest.NewRequest("GET", "http://127.0.0.1/b/k", nil)
		r.RemoteAddr = "127.0.0.1:1"
		r.Header.Set(sseCPrefix+"Algorithm", alg)
		r.Header.Set(sseCPrefix+"Key", k)
		r.Header.Set(sseCPrefix+"Key-Md5", m)
		got, md, err := customerKey(&request{Request: r}, sseCPrefix)
		if err != nil {
			return
		}
		if got == nil {
			if alg != "" || k != "" || m != "" {
				t.Fatalf("headers %q %q %q ignored", alg, k, m)
			}
			return
		}
		s := md5.Sum(got)
		if len(got) != 32 || alg != "AES256" || md != m || base64.StdEncoding.EncodeToString(s[:]) != m {
			t.Fatalf("accepted %q %q %q: key %x md5 %q", alg, k, m, got, md)
		}
	})
}

// TestUploadCustomerKeyErrors: the object service's refusals of an SSE-C
// upload's parts reach the client as AWS's 400 InvalidRequest with its
// messages.
func TestUploadCustomerKeyErrors(t *testing.T) {
	key, other := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	env, dk, err := crypt.NewCustomerEnvelope(key)
	if err != nil {
		t.Fatal(err)
	}
	clear(dk)
	check, err := env.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	u := meta.Upload{ID: "u", EncryptionMode: int(crypt.ModeCustomer), CustomerKeyCheck: check}
	if err := object.CheckUploadCustomerKey(u, key); err != nil {
		t.Fatalf("the upload's key: %v", err)
	}
	for _, tc := range []struct {
		name string
		u    meta.Upload
		key  []byte
		msg  string
	}{
		{"another key", u, other, "The provided encryption parameters did not match the ones used originally."},
		{"a key for a plain upload", meta.Upload{ID: "p"}, key, ""},
	} {
		err := object.CheckUploadCustomerKey(tc.u, tc.key)
		got := s3err.Translate(err)
		if got.Code != s3err.InvalidRequest || got.Status != 400 || tc.msg != "" && got.Message != tc.msg {
			t.Errorf("%s: %s %d %q (%v), want InvalidRequest 400 %q", tc.name, got.Code, got.Status, got.Message, err, tc.msg)
		}
	}
}
