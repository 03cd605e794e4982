package scaleout

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/coffer-storage/coffer/test/testenv"
)

// slowReader yields data in chunks of step, one every pause.
type slowReader struct {
	data  []byte
	step  int
	pause time.Duration
	sent  atomic.Int64
}

func (r *slowReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	if r.sent.Load() > 0 {
		time.Sleep(r.pause)
	}
	n := copy(p, r.data[:min(r.step, len(r.data), len(p))])
	r.data = r.data[n:]
	r.sent.Add(int64(n))
	return n, nil
}

// TestStagedBlobSurvivesOtherNodesJanitor: node B collects orphans older
// than 2 s every 200 ms while node A receives uploads that stream for ~8 s.
// A form upload's first file is written to the store (visible to B's
// listing, older than B's grace) long before its commit, while the second
// file still streams; a single slow PUT streams throughout. Both complete,
// read back intact from B, and B deletes no blob: A's stagings (leases of
// 3 s, renewed every second) are in PostgreSQL, where B's janitor looks.
func TestStagedBlobSurvivesOtherNodesJanitor(t *testing.T) {
	b := testenv.NewBackends(t)
	nodeA := testenv.StartNode(t, b, "--staging-lease", "3s")
	nodeB := testenv.StartNode(t, b, "--orphan-grace", "2s", "--janitor-interval", "200ms", "--log-level", "info")
	c := nodeA.NewUser(t)
	cB := on(c, nodeB)

	// A true orphan (a blob no row points at), as positive control: B's
	// janitor must delete it, and it alone.
	putRawBlob(t, b, "o/zz/control-orphan", []byte("orphan"))

	first := randBytes(t, 300_000) // a blob, not inline
	second := randBytes(t, 400_000)
	single := randBytes(t, 400_000)

	// The form upload: first file at once, second one trickling.
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		err := func() error {
			w, err := mw.CreateFormFile("files", "first.bin")
			if err != nil {
				return err
			}
			if _, err := w.Write(first); err != nil {
				return err
			}
			w, err = mw.CreateFormFile("files", "second.bin")
			if err != nil {
				return err
			}
			if _, err := io.Copy(w, &slowReader{data: second, step: 25_000, pause: 500 * time.Millisecond}); err != nil {
				return err
			}
			return mw.Close()
		}()
		pw.CloseWithError(err)
	}()
	formDone := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", nodeA.URL+"/api/v1/buckets/"+c.Bucket+"/files", pr)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.Header.Set("Authorization", "Bearer "+c.Token)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 201 {
				err = fmt.Errorf("form upload via node A: %d %s", resp.StatusCode, body)
			}
		}
		formDone <- err
	}()

	// The single slow PUT, at the same time.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	resp, err := c.DoErr(ctx, "PUT", testenv.FileURL(c.Bucket, "single.bin"), &slowReader{data: single, step: 25_000, pause: 500 * time.Millisecond}, int64(len(single)))
	if err != nil {
		t.Fatalf("slow PUT via node A: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("slow PUT via node A: %d %s", resp.StatusCode, body)
	}
	if err := <-formDone; err != nil {
		t.Fatal(err)
	}

	// Node B's janitor keeps running: the committed blobs stay too.
	time.Sleep(time.Second)
	for key, want := range map[string][]byte{"first.bin": first, "second.bin": second, "single.bin": single} {
		if st, got := get(t, cB, key); st != 200 || !bytes.Equal(got, want) {
			t.Errorf("GET %s via node B: %d, intact %v", key, st, bytes.Equal(got, want))
		}
	}
	deleted := 0
	for _, line := range strings.Split(nodeB.Stderr(), "\n") {
		if !strings.Contains(line, "deleted orphan blob") {
			continue
		}
		deleted++
		if !strings.Contains(line, "o/zz/control-orphan") {
			t.Errorf("node B deleted a blob of node A's uploads as an orphan: %s", line)
		}
	}
	if deleted != 1 {
		t.Errorf("node B deleted %d orphans, want 1 (the control)\n%s", deleted, nodeB.Stderr())
	}
}

// putRawBlob writes a blob straight into the cluster's MinIO bucket,
// bypassing Coffer.
func putRawBlob(t *testing.T, b *testenv.Backends, key string, data []byte) {
	t.Helper()
	bucket := ""
	for _, e := range b.Env {
		if u, ok := strings.CutPrefix(e, "COFFER_BLOB=s3://"); ok {
			bucket, _, _ = strings.Cut(u, "?")
		}
	}
	c := s3.NewFromConfig(aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider(b.MinIO.AccessKey, b.MinIO.SecretKey, ""),
	}, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(b.MinIO.Endpoint())
		o.UsePathStyle = true
	})
	if _, err := c.PutObject(t.Context(), &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(data)}); err != nil {
		t.Fatalf("put %s into MinIO bucket %q: %v", key, bucket, err)
	}
}

// TestReservationsAcrossNodes: slow uploads spread over two nodes into one
// account: the reservations, in PostgreSQL under the owner's row lock,
// admit exactly what the quota holds, whichever node takes which upload;
// the others get 507 before their bodies are read.
func TestReservationsAcrossNodes(t *testing.T) {
	const quota, size, n = 3 << 20, 1 << 20, 10
	b := testenv.NewBackends(t)
	nodes := []*testenv.Server{
		testenv.StartNode(t, b, "--default-quota", fmt.Sprint(quota)),
		testenv.StartNode(t, b, "--default-quota", fmt.Sprint(quota)),
	}
	c := nodes[0].NewUser(t)
	codes := make([]int, n)
	sent := make([]*slowReader, n)
	done := make(chan int, n)
	for i := range n {
		sent[i] = &slowReader{data: make([]byte, size), step: 128 << 10, pause: 200 * time.Millisecond}
		go func() {
			cc := on(c, nodes[i%2])
			resp, err := cc.DoErr(t.Context(), "PUT", testenv.FileURL(c.Bucket, fmt.Sprintf("r/%02d", i)), sent[i], size, "Expect", "100-continue")
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				codes[i] = resp.StatusCode
			} else {
				t.Errorf("upload %d: %v", i, err)
			}
			done <- i
		}()
	}
	for range n {
		<-done
	}
	stored := 0
	for i, code := range codes {
		switch code {
		case 201:
			stored++
		case 507:
			if s := sent[i].sent.Load(); s != 0 {
				t.Errorf("refused upload %d sent %d bytes", i, s)
			}
		default:
			t.Errorf("upload %d: %d", i, code)
		}
	}
	if stored != quota/size {
		t.Errorf("%d uploads stored, want %d", stored, quota/size)
	}
	for i, node := range nodes {
		if u := usage(t, on(c, node)); u != int64(stored)*size {
			t.Errorf("usage via node %d = %d, want %d", i+1, u, int64(stored)*size)
		}
	}
}
