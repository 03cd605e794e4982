package cli

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestReadyURL(t *testing.T) {
	for _, c := range []struct {
		listen string
		tls    bool
		want   string
	}{
		{"", false, "http://127.0.0.1:8080/readyz"},
		{"0.0.0.0:8080", false, "http://127.0.0.1:8080/readyz"},
		{"[::]:9443", true, "https://127.0.0.1:9443/readyz"},
		{"10.0.0.7:7000", false, "http://127.0.0.1:7000/readyz"},
		{"garbage", false, "http://127.0.0.1:8080/readyz"},
	} {
		if got := readyURL(c.listen, c.tls); got != c.want {
			t.Errorf("readyURL(%q, %v) = %q, want %q", c.listen, c.tls, got, c.want)
		}
	}
}

// TestHealthcheck: exit 0 on a 200, non-zero (with the status) otherwise,
// and non-zero when nothing listens.
func TestHealthcheck(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
		w.Write([]byte("state\n"))
	}))
	defer srv.Close()
	run := func(url string) (int, string) {
		var out, errb bytes.Buffer
		code := Run(context.Background(), []string{"healthcheck", "--url", url, "--timeout", "2s"}, Env{Stdout: &out, Stderr: &errb})
		return code, out.String() + errb.String()
	}
	if code, out := run(srv.URL + "/readyz"); code != 0 || !strings.Contains(out, "ready") {
		t.Errorf("ready node: exit %d, %q", code, out)
	}
	status = http.StatusServiceUnavailable
	if code, out := run(srv.URL + "/readyz"); code == 0 || !strings.Contains(out, "503") {
		t.Errorf("unready node: exit %d, %q", code, out)
	}
	addr := srv.Listener.Addr().String()
	srv.Close()
	if code, _ := run("http://" + addr + "/readyz"); code == 0 {
		t.Errorf("no node: exit 0")
	}
}
