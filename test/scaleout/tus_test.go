package scaleout

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/test/testenv"
)

func tusReq(t *testing.T, c *testenv.Client, ctx context.Context, method, path string, body io.Reader, size int64, hdr ...string) (*http.Response, error) {
	t.Helper()
	return c.DoErr(ctx, method, path, body, size, append([]string{"Tus-Resumable", "1.0.0", "Content-Type", "application/offset+octet-stream"}, hdr...)...)
}

func tusOffsetOn(t *testing.T, c *testenv.Client, path string) int {
	t.Helper()
	resp, err := tusReq(t, c, t.Context(), "HEAD", path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("HEAD %s on %s: %d", path, c.Base, resp.StatusCode)
	}
	n, _ := strconv.Atoi(resp.Header.Get("Upload-Offset"))
	return n
}

// TestTusAcrossNodes: a tus upload created and cut mid-PATCH on node A is
// resumed through node B; while A still streams a PATCH (holding the
// upload's lock in PostgreSQL), a PATCH of the same upload on B never
// interleaves with it; the object appears whole, once, on every node.
func TestTusAcrossNodes(t *testing.T) {
	b := testenv.NewBackends(t)
	nodeA := testenv.StartNode(t, b)
	nodeB := testenv.StartNode(t, b)
	cA := nodeA.NewUser(t)
	cB := on(cA, nodeB)
	data := randBytes(t, 3<<20+999)

	meta := "bucket " + base64.StdEncoding.EncodeToString([]byte(cA.Bucket)) + ",key " + base64.StdEncoding.EncodeToString([]byte("tus/cluster.bin"))
	resp, err := tusReq(t, cA, t.Context(), "POST", "/api/v1/tus/", nil, 0, "Upload-Length", strconv.Itoa(len(data)), "Upload-Metadata", meta)
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("create on A: %v %v", err, resp)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	path := loc[strings.Index(loc, "/api/v1/tus/"):]

	// A PATCH on A stalls after 1 MiB, holding the lock.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	body := testenv.NewStallingBody(ctx, data[:1<<20])
	doneA := make(chan struct{})
	go func() {
		defer close(doneA)
		if resp, err := tusReq(t, cA, ctx, "PATCH", path, body, int64(len(data)), "Upload-Offset", "0"); err == nil {
			resp.Body.Close()
		}
	}()
	<-body.Sent()
	time.Sleep(300 * time.Millisecond)

	// B's PATCH at offset 0 must not be accepted alongside A's: it waits
	// for the lock (asking A to let go), then finds the offset moved.
	resp, err = tusReq(t, cB, t.Context(), "PATCH", path, bytes.NewReader(data), int64(len(data)), "Upload-Offset", "0")
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode == 204 {
		t.Fatalf("B's PATCH at offset 0 was accepted while A held the upload")
	}
	t.Logf("B's concurrent PATCH: %d %s", resp.StatusCode, msg)
	cancel()
	<-doneA

	off := tusOffsetOn(t, cB, path)
	if off != 1<<20 {
		t.Fatalf("offset seen on B after A's cut PATCH: %d, want %d", off, 1<<20)
	}
	if st, _ := get(t, cB, "tus/cluster.bin"); st != 404 {
		t.Fatalf("half-written object visible on B: %d", st)
	}
	resp, err = tusReq(t, cB, t.Context(), "PATCH", path, bytes.NewReader(data[off:]), int64(len(data)-off), "Upload-Offset", strconv.Itoa(off))
	if err != nil || resp.StatusCode != 204 {
		t.Fatalf("resume on B: %v %v", err, resp)
	}
	resp.Body.Close()
	for _, c := range []*testenv.Client{cA, cB} {
		if st, got := get(t, c, "tus/cluster.bin"); st != 200 || !bytes.Equal(got, data) {
			t.Errorf("object on %s: %d, %d bytes", c.Base, st, len(got))
		}
	}
}
