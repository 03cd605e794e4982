package bench

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeS3 is just enough of a path-style S3 for the s3-* scenarios. With
// dropEvery > 0 it lies: every dropEvery-th object PUT is acknowledged
// but not stored.
type fakeS3 struct {
	mu        sync.Mutex
	buckets   map[string]bool
	objects   map[string][]byte // bucket/key → content
	puts      int
	dropEvery int
	slowGets  time.Duration // delay of every object GET
}

func newFakeS3() *fakeS3 { return &fakeS3{buckets: map[string]bool{}, objects: map[string][]byte{}} }

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AK/") {
		http.Error(w, "<Error><Code>AccessDenied</Code></Error>", http.StatusForbidden)
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/")
	f.mu.Lock()
	defer f.mu.Unlock()
	if !strings.Contains(path, "/") { // bucket
		switch {
		case r.Method == http.MethodPut:
			f.buckets[path] = true
		case r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "2":
			var b strings.Builder
			b.WriteString("<ListBucketResult>")
			for k := range f.objects {
				if key, ok := strings.CutPrefix(k, path+"/"); ok && strings.HasPrefix(key, r.URL.Query().Get("prefix")) {
					fmt.Fprintf(&b, "<Contents><Key>%s</Key></Contents>", key)
				}
			}
			b.WriteString("<IsTruncated>false</IsTruncated></ListBucketResult>")
			io.WriteString(w, b.String())
		case r.Method == http.MethodDelete:
			for k := range f.objects {
				if strings.HasPrefix(k, path+"/") {
					w.WriteHeader(http.StatusConflict)
					io.WriteString(w, "<Error><Code>BucketNotEmpty</Code></Error>")
					return
				}
			}
			delete(f.buckets, path)
			w.WriteHeader(http.StatusNoContent)
		default:
			http.Error(w, "", http.StatusNotImplemented)
		}
		return
	}
	switch r.Method {
	case http.MethodPut:
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		f.puts++
		if f.dropEvery == 0 || f.puts%f.dropEvery != 0 {
			f.objects[path] = b
		}
		sum := md5.Sum(b)
		w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:])+`"`)
	case http.MethodGet, http.MethodHead:
		if f.slowGets > 0 {
			f.mu.Unlock()
			select {
			case <-time.After(f.slowGets):
			case <-r.Context().Done():
			}
			f.mu.Lock()
		}
		b, ok := f.objects[path]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, "<Error><Code>NoSuchKey</Code></Error>")
			return
		}
		sum := md5.Sum(b)
		w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:])+`"`)
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		if r.Method == http.MethodGet {
			w.Write(b)
		}
	case http.MethodDelete:
		delete(f.objects, path)
		w.WriteHeader(http.StatusNoContent)
	}
}

func s3Options(scenario, url string) Options {
	return Options{
		Scenario: scenario, S3Target: url, AccessKey: "AK", SecretKey: "SK",
		VUs: 4, Duration: 700 * time.Millisecond, Size: 4096, Objects: 20,
	}
}

func TestS3ScenariosAgainstFake(t *testing.T) {
	for _, sc := range []string{"s3-put", "s3-get", "s3-mixed"} {
		t.Run(sc, func(t *testing.T) {
			f := newFakeS3()
			srv := httptest.NewServer(f)
			defer srv.Close()
			res, err := Run(context.Background(), context.Background(), s3Options(sc, srv.URL), io.Discard, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Requests.Total == 0 || res.Requests.Failed != 0 {
				t.Fatalf("requests: %+v, errors %v %v", res.Requests, res.Errors, res.ErrorSamples)
			}
			a := res.Audit
			if !a.Enabled || !a.OK() || a.Verified == 0 || a.Verified+a.Deleted != a.Acknowledged {
				t.Errorf("audit = %+v", a)
			}
			for _, c := range res.Checks {
				if c.Fails > 0 {
					t.Errorf("check %q failed %d times", c.Name, c.Fails)
				}
			}
			if sc == "s3-mixed" && len(res.Endpoints) != 4 {
				t.Errorf("s3-mixed ran %d request kinds, want get, put, delete and stat", len(res.Endpoints))
			}
		})
	}
}

func TestS3AuditCatchesDroppedPuts(t *testing.T) {
	f := newFakeS3()
	f.dropEvery = 10
	srv := httptest.NewServer(f)
	defer srv.Close()
	res, err := Run(context.Background(), context.Background(), s3Options("s3-put", srv.URL), io.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := res.Audit
	if want := a.Acknowledged / 10; a.Missing != want || a.Missing == 0 {
		t.Errorf("audit found %d missing of %d acknowledged, want %d", a.Missing, a.Acknowledged, want)
	}
	if a.OK() {
		t.Error("audit OK although uploads were dropped")
	}
}

func TestCompareAlternatesRounds(t *testing.T) {
	a := httptest.NewServer(newFakeS3())
	defer a.Close()
	b := httptest.NewServer(newFakeS3())
	defer b.Close()
	o := s3Options("s3-put", a.URL)
	o.Duration = 300 * time.Millisecond
	o.Compare, o.CompareAccessKey, o.CompareSecretKey = b.URL, "AK", "SK"
	o.Rounds = 2
	res, err := Run(context.Background(), context.Background(), o, io.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Compare == nil || res.Compare.Result == nil {
		t.Fatal("no comparison")
	}
	if res.Requests.Total == 0 || res.Compare.Result.Requests.Total == 0 {
		t.Errorf("requests A %d, B %d", res.Requests.Total, res.Compare.Result.Requests.Total)
	}
	// Each endpoint ran two rounds: about 0.6 s under load.
	for _, r := range []float64{res.DurationS, res.Compare.Result.DurationS} {
		if r < 0.55 || r > 2 {
			t.Errorf("time under load %.2fs, want about 0.6s", r)
		}
	}
	if len(res.Compare.Ratios) == 0 || res.Compare.Ratios[0].Metric != "requests/s" {
		t.Errorf("ratios = %+v", res.Compare.Ratios)
	}
	if !res.Audit.OK() || !res.Compare.Result.Audit.OK() {
		t.Errorf("audits: %+v / %+v", res.Audit, res.Compare.Result.Audit)
	}
}

// TestProxyScenariosAgainstFake: the read-proxy scenarios read what their
// setup put, by class, and record the time to first byte of the big reads.
func TestProxyScenariosAgainstFake(t *testing.T) {
	for _, tt := range []struct {
		scenario  string
		endpoints []string
		trend     string
	}{
		{"proxy-get", []string{"get"}, ""},
		{"proxy-stream", []string{"get"}, "get ttfb"},
		{"proxy-soak", []string{"get large", "get medium", "get small", "head"}, "get large ttfb"},
	} {
		t.Run(tt.scenario, func(t *testing.T) {
			f := newFakeS3()
			srv := httptest.NewServer(f)
			defer srv.Close()
			o := s3Options(tt.scenario, srv.URL)
			o.Size = 0 // the scenario's default
			o.Objects = 0
			if tt.scenario == "proxy-stream" {
				o.Objects, o.Size = 2, 256<<10
			}
			if tt.scenario == "proxy-soak" {
				o.Duration = 2 * time.Second
			}
			res, err := Run(context.Background(), context.Background(), o, io.Discard, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Requests.Total == 0 || res.Requests.Failed != 0 {
				t.Fatalf("requests: %+v, errors %v %v", res.Requests, res.Errors, res.ErrorSamples)
			}
			var names []string
			for _, e := range res.Endpoints {
				names = append(names, e.Name)
			}
			slices.Sort(names)
			// Every kind shows once enough iterations ran (a HEAD is 10 %
			// of them: 0.9^100 of a run without one).
			if !slices.Equal(names, tt.endpoints) && (res.Iterations.Total >= 100 || len(names) == 0 ||
				slices.ContainsFunc(names, func(n string) bool { return !slices.Contains(tt.endpoints, n) })) {
				t.Errorf("request kinds %q, want %q", names, tt.endpoints)
			}
			if tt.trend != "" && (len(res.Trends) == 0 || res.Trends[0].Name != tt.trend) {
				t.Errorf("trends %+v, want %q", res.Trends, tt.trend)
			}
			for _, c := range res.Checks {
				if c.Fails > 0 {
					t.Errorf("check %q failed %d times", c.Name, c.Fails)
				}
			}
			if a := res.Audit; !a.OK() || a.Verified == 0 {
				t.Errorf("audit = %+v", a)
			}
		})
	}
}
