// Package diskfull runs the real binary (embedded shape) with its data
// folder on a small file system the test mounts (ext4 on a loop device, or
// tmpfs where loop devices are missing; internal/testbackend.NewSmallFS)
// and fills it through the API: uploads are refused with 507
// storage_full, nothing half-written is left, reads keep working, deleting
// files makes room within seconds (the janitor's prompt reclaim under disk
// pressure), the metadata database survives a full disk, and everything
// acknowledged is there after a restart. It needs root (skipped without,
// unless COFFER_REQUIRE_BACKENDS=1).
package diskfull

import (
	"bytes"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/testbackend"
	"github.com/coffer-storage/coffer/test/testenv"

	_ "modernc.org/sqlite"
)

const mib = 1 << 20

// reserve is the free space kept for metadata on the small file systems
// (the default, 256 MiB, is more than they hold).
var reserve = []string{"--min-free-space", "4MiB"}

// store is the acknowledged content of a user's files, checked against
// the server.
type store struct {
	t    *testing.T
	c    *testenv.Client
	data map[string][]byte
}

func newStore(t *testing.T, c *testenv.Client) *store {
	return &store{t: t, c: c, data: map[string][]byte{}}
}

// put uploads size random bytes at key and returns the status and, for an
// error, the problem.
func (s *store) put(key string, size int) (int, testenv.Problem) {
	s.t.Helper()
	b := make([]byte, size)
	rand.Read(b)
	resp, err := s.c.DoErr(s.t.Context(), "PUT", testenv.FileURL(s.c.Bucket, key), bytes.NewReader(b), int64(size))
	if err != nil {
		s.t.Fatalf("PUT %s: %v", key, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var p testenv.Problem
	if resp.StatusCode == http.StatusCreated {
		s.data[key] = b
	} else {
		json.Unmarshal(body, &p)
	}
	return resp.StatusCode, p
}

// blobs returns how many acknowledged files are blob files (above the
// default --inline-max, 64 KiB; smaller ones are rows in meta.db).
func (s *store) blobs() int {
	n := 0
	for _, b := range s.data {
		if len(b) > 64<<10 {
			n++
		}
	}
	return n
}

// del deletes key through the API.
func (s *store) del(key string) {
	s.t.Helper()
	resp := s.c.Do(s.t, "DELETE", testenv.FileURL(s.c.Bucket, key), nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		s.t.Fatalf("DELETE %s: %d", key, resp.StatusCode)
	}
	delete(s.data, key)
}

// check reads back every acknowledged file, and finds each of gone
// missing (404).
func (s *store) check(what string, gone ...string) {
	s.t.Helper()
	for key, want := range s.data {
		resp := s.c.Do(s.t, "GET", testenv.FileURL(s.c.Bucket, key), nil)
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || err != nil || !bytes.Equal(got, want) {
			s.t.Fatalf("%s: GET %s: %d, %d bytes (want %d), %v", what, key, resp.StatusCode, len(got), len(want), err)
		}
	}
	for _, key := range gone {
		resp := s.c.Do(s.t, "GET", testenv.FileURL(s.c.Bucket, key), nil)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			s.t.Fatalf("%s: GET %s (never acknowledged, or deleted): %d, want 404", what, key, resp.StatusCode)
		}
	}
	var list struct {
		Files []struct {
			Key string `json:"key"`
		} `json:"files"`
	}
	if st := s.c.JSON(s.t, "GET", "/api/v1/buckets/"+s.c.Bucket+"/files?limit=1000", nil, &list); st != http.StatusOK {
		s.t.Fatalf("%s: list: %d", what, st)
	}
	if len(list.Files) != len(s.data) {
		s.t.Fatalf("%s: the listing has %d files, %d were acknowledged and not deleted", what, len(list.Files), len(s.data))
	}
	for _, f := range list.Files {
		if _, ok := s.data[f.Key]; !ok {
			s.t.Fatalf("%s: the listing has %s, which was never acknowledged", what, f.Key)
		}
	}
	// The owner's usage counts exactly the acknowledged bytes: a refused
	// upload left no reservation and no bytes behind.
	var me struct {
		Usage int64 `json:"usage_bytes"`
	}
	if st := s.c.JSON(s.t, "GET", "/api/v1/me", nil, &me); st != http.StatusOK {
		s.t.Fatalf("%s: GET /me: %d", what, st)
	}
	var sum int64
	for _, b := range s.data {
		sum += int64(len(b))
	}
	if me.Usage != sum {
		s.t.Fatalf("%s: usage_bytes %d, the acknowledged files hold %d", what, me.Usage, sum)
	}
}

// wantFull fails unless status and p are the documented full-disk refusal.
func wantFull(t *testing.T, what string, status int, p testenv.Problem) {
	t.Helper()
	if status != http.StatusInsufficientStorage || p.Code != "storage_full" || !strings.HasSuffix(p.Type, "#storage_full") {
		t.Fatalf("%s: %d %+v, want 507 storage_full", what, status, p)
	}
}

// noLeftovers fails if the blob store holds a temporary file, or a blob
// file more or less than blobs (files above the inline size).
func noLeftovers(t *testing.T, data string, blobs int) {
	t.Helper()
	tmp, err := os.ReadDir(filepath.Join(data, "blobs", "tmp"))
	if err != nil {
		t.Fatal(err)
	}
	if len(tmp) != 0 {
		t.Fatalf("%d temporary files left in blobs/tmp (first %s)", len(tmp), tmp[0].Name())
	}
	count := func() int {
		n := 0
		err := filepath.WalkDir(filepath.Join(data, "blobs", "blobs"), func(_ string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				n++
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// A deleted file's blob goes a grace period after its delete (the
	// janitor's), so right after deletes a blob or two may still be on
	// disk for a moment; fewer than one per acknowledged file, never.
	deadline := time.Now().Add(15 * time.Second)
	for {
		n := count()
		if n == blobs {
			return
		}
		if n < blobs || time.Now().After(deadline) {
			t.Fatalf("%d blob files on disk, want %d (one per acknowledged file)", n, blobs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// restartAndCheck stops srv, checks its meta.db, starts the binary again
// on the same data folder with flags, and checks that s's files are all
// there.
func restartAndCheck(t *testing.T, srv *testenv.Server, s *store, flags ...string) {
	t.Helper()
	if err := srv.Term(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	integrityCheck(t, srv.Data)
	s.c.Base = testenv.StartIn(t, srv.Data, flags...).URL
	s.check("after a restart")
}

// metrics returns srv's /metrics page.
func metrics(t *testing.T, srv *testenv.Server) string {
	t.Helper()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d %v", resp.StatusCode, err)
	}
	return string(b)
}

// integrityCheck runs PRAGMA integrity_check on the data folder's meta.db
// (the server stopped).
func integrityCheck(t *testing.T, data string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(data, "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var res string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&res); err != nil || res != "ok" {
		t.Fatalf("meta.db integrity_check: %q, %v", res, err)
	}
}

// TestFullDisk fills a 64 MiB file system with 1 MiB uploads through the
// file API until one is refused, then checks the refusal (507
// storage_full on the file API, 507 XMinioStorageFull on S3), that nothing
// half-written is left, that reads keep working, that deleting 10 MiB
// through the API lets an upload succeed within seconds, with no restart
// (the janitor reclaims deleted blobs at once under disk pressure; before,
// they waited out a one-minute grace), and that everything acknowledged is
// there, and meta.db intact, after a restart.
func TestFullDisk(t *testing.T) {
	sfs := testbackend.NewSmallFS(t, 64*mib)
	data := filepath.Join(sfs.Dir, "data")
	srv := testenv.StartIn(t, data, reserve...)
	c := srv.NewUser(t)
	s := newStore(t, c)

	fillThroughAPI(t, s)
	refused := []string{fmt.Sprintf("fill/%03d", len(s.data))}
	t.Logf("%d uploads of 1 MiB acknowledged, then refused; %d bytes free", len(s.data), sfs.Free(t))
	filled := len(s.data)
	if filled < 20 {
		t.Fatalf("only %d MiB stored before the disk was full", filled)
	}

	// Still full: refused again, on both APIs; a small (inline) file too,
	// whose bytes would go to meta.db and eat the room kept for deletes.
	st, p := s.put("again", mib)
	wantFull(t, "a second upload", st, p)
	refused = append(refused, "again")
	for i := 0; ; i++ {
		if i == 200 {
			t.Fatal("200 inline uploads of 60 KiB fit in the last 4.5 MiB")
		}
		key := fmt.Sprintf("small/%03d", i)
		if st, p := s.put(key, 60<<10); st != http.StatusCreated {
			wantFull(t, "a small upload", st, p)
			refused = append(refused, key)
			break
		}
	}
	if free := sfs.Free(t); free < 2*mib {
		t.Fatalf("inline uploads took the reserve kept for deletes: %d bytes free, the reserve is 4 MiB", free)
	}
	key := testenv.NewS3Key(t, c)
	body := bytes.Repeat([]byte("x"), mib)
	r, err := testenv.S3Do(key, srv.S3URL, "PUT", "/"+c.Bucket+"/s3-full", body)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != http.StatusInsufficientStorage || !bytes.Contains(r.Body, []byte("<Code>XMinioStorageFull</Code>")) {
		t.Fatalf("S3 PutObject on a full disk: %d %s, want 507 XMinioStorageFull", r.Status, r.Body)
	}
	refused = append(refused, "s3-full")

	if m := metrics(t, srv); !strings.Contains(m, "\ncoffer_data_disk_pressure 1\n") || !strings.Contains(m, "\ncoffer_data_disk_free_bytes ") {
		t.Fatalf("/metrics on a full disk lacks coffer_data_disk_pressure 1 or coffer_data_disk_free_bytes")
	}

	// Nothing half-written; reads and listings work on the full disk.
	noLeftovers(t, data, s.blobs())
	s.check("on the full disk", refused...)
	if r, err := testenv.S3Do(key, srv.S3URL, "GET", "/"+c.Bucket+"/fill/000", nil); err != nil || r.Status != http.StatusOK || !bytes.Equal(r.Body, s.data["fill/000"]) {
		t.Fatalf("S3 GetObject on the full disk: %v %d", err, r.Status)
	}

	// Deleting 10 MiB through the API makes room for an upload within
	// seconds, on the running server.
	for i := range 10 {
		s.del(fmt.Sprintf("fill/%03d", i))
	}
	deleted := time.Now()
	var tries int
	for {
		tries++
		st, p := s.put("after-delete", mib)
		if st == http.StatusCreated {
			break
		}
		wantFull(t, "an upload after the delete", st, p)
		if time.Since(deleted) > 20*time.Second {
			t.Fatalf("an upload still refused 20 s after deleting 10 MiB (%d tries; %d bytes free)", tries, sfs.Free(t))
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("an upload succeeded %v after deleting 10 MiB (%d tries)", time.Since(deleted).Round(10*time.Millisecond), tries)
	// The rest of the 10 MiB follows (each blob 2 s after its delete).
	for sfs.Free(t) < 10*mib {
		if time.Since(deleted) > 20*time.Second {
			t.Fatalf("20 s after deleting 10 MiB, only %d bytes free", sfs.Free(t))
		}
		time.Sleep(100 * time.Millisecond)
	}
	for i := range 5 {
		if st, p := s.put(fmt.Sprintf("more/%d", i), mib); st != http.StatusCreated {
			t.Fatalf("upload %d of 5 more MiB after deleting 10: %d %+v", i, st, p)
		}
	}
	s.check("after the delete")
	noLeftovers(t, data, s.blobs())

	restartAndCheck(t, srv, s, reserve...)
}

// fillThroughAPI uploads 1 MiB files until the server refuses one (507
// storage_full), and returns how many it acknowledged.
func fillThroughAPI(t *testing.T, s *store) int {
	t.Helper()
	n := 0
	for i := 0; ; i++ {
		if i == 200 {
			t.Fatalf("200 uploads of 1 MiB fit on a 64 MiB file system")
		}
		st, p := s.put(fmt.Sprintf("fill/%03d", i), mib)
		if st != http.StatusCreated {
			wantFull(t, "the upload that found the disk full", st, p)
			return n
		}
		n++
	}
}

// TestFullDiskMetadata: meta.db itself on a full disk (a file outside the
// data folder takes every free block; no reserve). Small uploads
// (inline: only a row) and large ones are refused with 507 storage_full,
// reads and listings are served, the server writes again by itself once
// room is made, and after a restart meta.db passes integrity_check and
// every acknowledged file is there.
func TestFullDiskMetadata(t *testing.T) {
	sfs := testbackend.NewSmallFS(t, 64*mib)
	data := filepath.Join(sfs.Dir, "data")
	// No reserve: the blob store meets ENOSPC itself (and must remove its
	// temporary file).
	noReserve := []string{"--min-free-space", "0"}
	srv := testenv.StartIn(t, data, noReserve...)
	s := newStore(t, srv.NewUser(t))
	for i := range 3 {
		if st, _ := s.put(fmt.Sprintf("big/%d", i), mib); st != http.StatusCreated {
			t.Fatalf("upload %d: %d", i, st)
		}
		if st, _ := s.put(fmt.Sprintf("small/%d", i), 1024); st != http.StatusCreated {
			t.Fatalf("small upload %d: %d", i, st)
		}
	}

	filler := sfs.Fill(t, "filler")
	t.Logf("filler of %d bytes; %d bytes free", filler, sfs.Free(t))
	var refused []string
	for i := 0; len(refused) == 0; i++ {
		// The WAL may have room in frames already written: the first
		// small writes can still fit.
		if i == 500 {
			t.Fatal("500 small uploads succeeded on a full disk")
		}
		key := fmt.Sprintf("small-full/%03d", i)
		if st, p := s.put(key, 1024); st != http.StatusCreated {
			wantFull(t, "a small upload on a full disk", st, p)
			refused = append(refused, key)
		}
	}
	st, p := s.put("big-full", mib)
	wantFull(t, "a 1 MiB upload on a full disk", st, p)
	refused = append(refused, "big-full")
	s.check("meta.db on a full disk", refused...)
	noLeftovers(t, data, 3)

	// Room for rows but not for a 1 MiB blob: the blob store itself meets
	// ENOSPC part way, and removes its temporary file.
	if err := os.Truncate(filepath.Join(sfs.Dir, "filler"), filler-768<<10); err != nil {
		t.Fatal(err)
	}
	st, p = s.put("big-enospc", mib)
	wantFull(t, "a 1 MiB upload with 768 KiB free", st, p)
	s.check("after ENOSPC in the blob store", append(refused, "big-enospc")...)
	noLeftovers(t, data, 3)

	if err := os.Remove(filepath.Join(sfs.Dir, "filler")); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if st, p := s.put(fmt.Sprintf("after/%d", i), 1024); st != http.StatusCreated {
			t.Fatalf("small upload %d once room was made: %d %+v", i, st, p)
		}
	}
	if st, p := s.put("after/big", mib); st != http.StatusCreated {
		t.Fatalf("1 MiB upload once room was made: %d %+v", st, p)
	}
	s.check("once room was made")

	restartAndCheck(t, srv, s, noReserve...)
}

// TestDeleteUnderReader: under disk pressure, a multipart object deleted
// while a GET streams it is not reclaimed under the reader: its parts
// (opened one after another as the stream reaches them) stay pinned until
// the response ends, and the download completes with the right bytes.
// Another deleted file is reclaimed meanwhile (the janitor did run), and
// the object's parts go once the reader is done.
func TestDeleteUnderReader(t *testing.T) {
	sfs := testbackend.NewSmallFS(t, 64*mib)
	srv := testenv.StartIn(t, filepath.Join(sfs.Dir, "data"), reserve...)
	c := srv.NewUser(t)
	s := newStore(t, c)
	key := testenv.NewS3Key(t, c)

	// A two-part object (5 MiB + 1 MiB), through S3's multipart upload.
	const part1, part2 = 5 * mib, mib
	body := make([]byte, part1+part2)
	rand.Read(body)
	obj := "/" + c.Bucket + "/multi"
	r := testenv.MustS3(t, key, srv.S3URL, "POST", obj+"?uploads", nil, http.StatusOK)
	var created struct {
		UploadID string `xml:"UploadId"`
	}
	if err := xml.Unmarshal(r.Body, &created); err != nil {
		t.Fatal(err)
	}
	var complete strings.Builder
	complete.WriteString("<CompleteMultipartUpload>")
	for i, b := range [][]byte{body[:part1], body[part1:]} {
		r := testenv.MustS3(t, key, srv.S3URL, "PUT", fmt.Sprintf("%s?partNumber=%d&uploadId=%s", obj, i+1, created.UploadID), b, http.StatusOK)
		fmt.Fprintf(&complete, "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>", i+1, r.Header.Get("ETag"))
	}
	complete.WriteString("</CompleteMultipartUpload>")
	testenv.MustS3(t, key, srv.S3URL, "POST", obj+"?uploadId="+created.UploadID, []byte(complete.String()), http.StatusOK)

	fillThroughAPI(t, s)
	// The download starts; the client reads only its first bytes (the
	// rest waits in socket buffers, the second part not yet opened).
	resp := c.Do(t, "GET", testenv.FileURL(c.Bucket, "multi"), nil)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET multi: %d", resp.StatusCode)
	}
	got := make([]byte, 4096)
	if _, err := io.ReadFull(resp.Body, got); err != nil {
		t.Fatal(err)
	}
	before := sfs.Free(t)
	r, err := testenv.S3Do(key, srv.S3URL, "DELETE", obj, nil)
	if err != nil || r.Status != http.StatusNoContent {
		t.Fatalf("DeleteObject multi: %v %d", err, r.Status)
	}
	for i := range 4 {
		s.del(fmt.Sprintf("fill/%03d", i))
	}
	// Wait until the janitor has reclaimed the 4 MiB of plain files: it
	// took the multipart object's parts from the queue in the same pass.
	deadline := time.Now().Add(20 * time.Second)
	for sfs.Free(t) < before+4*mib-mib/2 {
		if time.Now().After(deadline) {
			t.Fatalf("4 MiB of deleted files not reclaimed in 20 s (free %d, was %d)", sfs.Free(t), before)
		}
		time.Sleep(100 * time.Millisecond)
	}
	rest, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("the download of the deleted object broke after %d bytes: %v", 4096+len(rest), err)
	}
	if got = append(got, rest...); !bytes.Equal(got, body) {
		t.Fatalf("the download of the deleted object: %d bytes, want %d, equal %v", len(got), len(body), bytes.Equal(got, body))
	}
	resp.Body.Close()
	// Its parts go once the reader is done.
	reclaimed := sfs.Free(t)
	for sfs.Free(t) < reclaimed+part1+part2-mib/2 {
		if time.Now().After(deadline.Add(20 * time.Second)) {
			t.Fatalf("the deleted object's parts not reclaimed after its download ended (free %d, was %d)", sfs.Free(t), reclaimed)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
