// Command measure runs the resource measurements of docs/PERFORMANCE.md
// against a real coffer binary: peak RSS while streaming a 1 GiB file up
// and down, memory per in-flight upload with 200 concurrent clients, and
// login throughput with the bounded argon2id pool while uploads run.
//
//	go build -o /tmp/coffer ./cmd/coffer
//	go run ./test/measure -bin /tmp/coffer -data /work/tmp/measure all
//
// It samples the server's VmRSS and VmHWM from /proc every 20 ms.
package main

import (
	"archive/zip"
	"bufio"
	"bytes"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

var (
	bin  = flag.String("bin", "./coffer", "coffer binary")
	data = flag.String("data", "", "data folder (default: a new temp folder)")
	big  = flag.Int64("big", 1<<30, "size of the big file")
	// zip: a folder of zipFiles × zipFileSize, and one file of zipBig.
	zipFiles    = flag.Int("zip-files", 1000, "files in the zipped folder")
	zipFileSize = flag.Int64("zip-file-size", 1<<20, "size of each file of the zipped folder")
	zipBig      = flag.Int64("zip-big", 5<<30, "size of the single big file zipped")
	tusChunk    = flag.Int64("tus-chunk", 8<<20, "PATCH size of the tus measurement")
	tusChecksum = flag.String("tus-checksum", "sha256", "Upload-Checksum algorithm of each tus PATCH (sha256, md5; empty: none)")
	rounds      = flag.Int("rounds", 1, "rounds of the tus measurement (PUT and tus alternating)")
	serverFlags = flag.String("server-flags", "", "extra flags for coffer serve, space-separated (e.g. \"--encryption on\")")
)

func main() {
	flag.Parse()
	run := map[string]func(){"big": measureBig, "concurrent": measureConcurrent, "slow": measureSlowConcurrent, "logins": measureLogins, "zip": measureZip, "tus": measureTus}
	whats := flag.Args()
	if len(whats) == 0 || whats[0] == "all" {
		whats = []string{"big", "concurrent", "slow", "logins"}
	}
	for _, w := range whats {
		f, ok := run[w]
		if !ok {
			fmt.Fprintln(os.Stderr, "usage: measure [big|concurrent|slow|logins|zip|tus|all]...")
			os.Exit(2)
		}
		f()
	}
}

type server struct {
	cmd  *exec.Cmd
	url  string
	pid  int
	stop chan struct{}
	mu   sync.Mutex
	peak int64 // KiB, sampled VmRSS
}

func start(extra ...string) *server {
	dir := *data
	if dir == "" {
		d, err := os.MkdirTemp("", "coffer-measure-")
		must(err)
		dir = d
	} else {
		os.RemoveAll(dir)
	}
	args := append([]string{"serve", "--data", dir, "--listen", "127.0.0.1:0", "--log-level", "error"}, strings.Fields(*serverFlags)...)
	args = append(args, extra...)
	cmd := exec.Command(*bin, args...)
	out, err := cmd.StdoutPipe()
	must(err)
	cmd.Stderr = os.Stderr
	must(cmd.Start())
	sc := bufio.NewScanner(out)
	re := regexp.MustCompile(`http://(\S+)`)
	var url string
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			url = "http://" + m[1]
			break
		}
	}
	go io.Copy(io.Discard, out)
	s := &server{cmd: cmd, url: url, pid: cmd.Process.Pid, stop: make(chan struct{})}
	go s.sample()
	return s
}

func (s *server) sample() {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			rss, _ := s.status()
			s.mu.Lock()
			s.peak = max(s.peak, rss)
			s.mu.Unlock()
		}
	}
}

// status returns VmRSS and VmHWM in KiB.
func (s *server) status() (rss, hwm int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = n
		case "VmHWM:":
			hwm = n
		}
	}
	return
}

func (s *server) resetPeak() {
	rss, _ := s.status()
	s.mu.Lock()
	s.peak = rss
	s.mu.Unlock()
}

func (s *server) peakKiB() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

func (s *server) close() {
	close(s.stop)
	s.cmd.Process.Kill()
	s.cmd.Wait()
}

func (s *server) metric(name string) float64 {
	resp, err := http.Get(s.url + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, name+" ") || strings.HasPrefix(line, name+"{") {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			return v
		}
	}
	return -1
}

type user struct {
	token, bucket string
}

func signup(url, email string) user {
	body := fmt.Sprintf(`{"email":%q,"password":"measure password"}`, email)
	var su struct {
		Bucket struct{ Name string } `json:"bucket"`
	}
	post(url+"/api/v1/auth/signup", body, &su)
	var lg struct {
		AccessToken string `json:"access_token"`
	}
	post(url+"/api/v1/auth/login", body, &lg)
	return user{token: lg.AccessToken, bucket: su.Bucket.Name}
}

func post(url, body string, out any) int {
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	must(err)
	defer resp.Body.Close()
	if out != nil {
		json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode
}

// genReader yields n pseudo-random bytes without holding them.
type genReader struct {
	n   int64
	buf []byte
}

func newGen(n int64) *genReader {
	b := make([]byte, 64<<10)
	rand.Read(b)
	return &genReader{n: n, buf: b}
}

func (g *genReader) Read(p []byte) (int, error) {
	if g.n <= 0 {
		return 0, io.EOF
	}
	k := copy(p, g.buf[:min(int64(len(g.buf)), g.n)])
	g.n -= int64(k)
	return k, nil
}

func measureBig() {
	s := start()
	defer s.close()
	u := signup(s.url, "big@example.com")
	// The signup and login hash passwords (argon2id, 19 MiB each); the
	// server returns that memory once its hashing pool has been idle for
	// 100 ms. Measure the transfers from then on, and say what the login
	// held.
	afterLogin, _ := s.status()
	time.Sleep(500 * time.Millisecond)
	base, _ := s.status()
	s.resetPeak()
	h := sha256.New()
	t0 := time.Now()
	req, _ := http.NewRequest("PUT", s.url+"/api/v1/buckets/"+u.bucket+"/files/big.bin", io.TeeReader(newGen(*big), h))
	req.ContentLength = *big
	req.Header.Set("Authorization", "Bearer "+u.token)
	resp, err := http.DefaultClient.Do(req)
	must(err)
	var f struct{ SHA256 string }
	json.NewDecoder(resp.Body).Decode(&f)
	resp.Body.Close()
	upDur := time.Since(t0)
	upPeak := s.peakKiB()
	want := hex.EncodeToString(h.Sum(nil))
	if resp.StatusCode != 201 || f.SHA256 != want {
		fmt.Println("upload failed", resp.StatusCode)
		return
	}
	s.resetPeak()
	t0 = time.Now()
	req, _ = http.NewRequest("GET", s.url+"/api/v1/buckets/"+u.bucket+"/files/big.bin", nil)
	req.Header.Set("Authorization", "Bearer "+u.token)
	resp, err = http.DefaultClient.Do(req)
	must(err)
	h.Reset()
	n, _ := io.Copy(h, resp.Body)
	resp.Body.Close()
	downDur := time.Since(t0)
	downPeak := s.peakKiB()
	_, hwm := s.status()
	fmt.Printf("## big file (%d MiB)\n", *big>>20)
	fmt.Printf("RSS right after the login %.1f MiB, 0.5 s later (baseline) %.1f MiB\n", float64(afterLogin)/1024, float64(base)/1024)
	fmt.Printf("upload:   %.1f s, %.0f MiB/s, peak RSS %.1f MiB\n", upDur.Seconds(), float64(*big)/(1<<20)/upDur.Seconds(), float64(upPeak)/1024)
	fmt.Printf("download: %.1f s, %.0f MiB/s, peak RSS %.1f MiB, sha256 ok %v, bytes %d\n", downDur.Seconds(), float64(n)/(1<<20)/downDur.Seconds(), float64(downPeak)/1024, hex.EncodeToString(h.Sum(nil)) == want, n)
	fmt.Printf("VmHWM (process lifetime peak) %.1f MiB\n\n", float64(hwm)/1024)
}

// measureTus uploads the same -big bytes on one server as a plain PUT and
// with tus 1.0 in -tus-chunk PATCHes (each with an Upload-Checksum of
// -tus-checksum, none if empty), alternating for -rounds rounds, and
// reports each one's time, throughput, server CPU per MiB (utime+stime of
// /proc/PID/stat) and peak RSS, the tus/PUT ratio of each round and the
// load average; every object's SHA-256 must match what was sent.
func measureTus() {
	s := start()
	defer s.close()
	u := signup(s.url, "tus@example.com")
	fmt.Printf("## tus vs PUT (%d MiB, PATCHes of %d MiB, Upload-Checksum %q, %d rounds)\n", *big>>20, *tusChunk>>20, *tusChecksum, *rounds)
	var ratios []float64
	for r := 0; r < *rounds; r++ {
		la, _ := os.ReadFile("/proc/loadavg")
		put := tusRound(s, u, "put", r)
		tus := tusRound(s, u, "tus", r)
		ratios = append(ratios, put.Seconds()/tus.Seconds())
		fmt.Printf("round %d: tus/PUT throughput %.2f (load average at start %s)\n", r+1, put.Seconds()/tus.Seconds(), strings.Join(strings.Fields(string(la))[:3], " "))
	}
	sort.Float64s(ratios)
	n := len(ratios)
	fmt.Printf("tus/PUT median %.2f (min %.2f, max %.2f)\n\n", (ratios[(n-1)/2]+ratios[n/2])/2, ratios[0], ratios[n-1])
}

// tusRound uploads -big bytes as key what-R.bin (what: "put" or "tus"),
// reports it, deletes it and returns its time.
func tusRound(s *server, u user, what string, r int) time.Duration {
	sent := sha256.New()
	key := fmt.Sprintf("%s-%d.bin", what, r)
	do := func(method, url string, body io.Reader, n int64, hdr ...string) *http.Response {
		req, _ := http.NewRequest(method, url, body)
		req.ContentLength = n
		req.Header.Set("Authorization", "Bearer "+u.token)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		must(err)
		return resp
	}
	file := s.url + "/api/v1/buckets/" + u.bucket + "/files/" + key
	s.resetPeak()
	cpu0, sys0, rchar0 := s.cpu(), s.sysCPU(), s.rchar()
	t0 := time.Now()
	var sha string
	if what == "put" {
		resp := do("PUT", file, io.TeeReader(newGen(*big), sent), *big)
		var f struct{ SHA256 string }
		json.NewDecoder(resp.Body).Decode(&f)
		resp.Body.Close()
		sha = f.SHA256
	} else {
		b64 := func(v string) string { return base64.StdEncoding.EncodeToString([]byte(v)) }
		resp := do("POST", s.url+"/api/v1/tus/", nil, 0, "Tus-Resumable", "1.0.0", "Upload-Length", strconv.FormatInt(*big, 10),
			"Upload-Metadata", "bucket "+b64(u.bucket)+",key "+b64(key))
		resp.Body.Close()
		loc := resp.Header.Get("Location")
		if resp.StatusCode != 201 || loc == "" {
			fmt.Println("tus create failed", resp.StatusCode)
			os.Exit(1)
		}
		if !strings.HasPrefix(loc, "http") {
			loc = s.url + loc
		}
		src := io.TeeReader(newGen(*big), sent)
		// Without a checksum a PATCH streams from the generator, as the
		// PUT does (a 1 GiB PATCH is not buffered first); with one, the
		// chunk is read first to compute it.
		var buf []byte
		if *tusChecksum != "" {
			buf = make([]byte, min(*tusChunk, *big))
		}
		for off := int64(0); off < *big; {
			n := int(min(*tusChunk, *big-off))
			var body io.Reader = io.LimitReader(src, int64(n))
			if buf != nil {
				n, _ = io.ReadFull(src, buf[:n])
				body = bytes.NewReader(buf[:n])
			}
			hdr := []string{"Tus-Resumable", "1.0.0", "Content-Type", "application/offset+octet-stream", "Upload-Offset", strconv.FormatInt(off, 10)}
			if *tusChecksum != "" {
				var sum []byte
				switch *tusChecksum {
				case "sha256":
					s := sha256.Sum256(buf[:n])
					sum = s[:]
				case "md5":
					s := md5.Sum(buf[:n])
					sum = s[:]
				default:
					fmt.Println("-tus-checksum: sha256, md5 or empty")
					os.Exit(2)
				}
				hdr = append(hdr, "Upload-Checksum", *tusChecksum+" "+base64.StdEncoding.EncodeToString(sum))
			}
			resp = do("PATCH", loc, body, int64(n), hdr...)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 204 {
				fmt.Println("tus PATCH failed", resp.StatusCode, "at", off)
				os.Exit(1)
			}
			off += int64(n)
		}
		resp = do("HEAD", file, nil, 0)
		resp.Body.Close()
		sha = resp.Header.Get("X-Checksum-Sha256")
	}
	d, peak, cpu, sys, rchar := time.Since(t0), s.peakKiB(), s.cpu()-cpu0, s.sysCPU()-sys0, s.rchar()-rchar0
	mib := float64(*big) / (1 << 20)
	fmt.Printf("  %-4s %5.1f s, %4.0f MiB/s, server CPU %.2f ms/MiB (system %.2f), read %.2f× the body, peak RSS %.1f MiB, sha256 ok %v\n",
		what, d.Seconds(), mib/d.Seconds(), cpu.Seconds()*1000/mib, sys.Seconds()*1000/mib, float64(rchar)/float64(*big), float64(peak)/1024, sha == hex.EncodeToString(sent.Sum(nil)))
	do("DELETE", file, nil, 0).Body.Close()
	return d
}

// rchar is what the server has read so far (sockets and files:
// /proc/PID/io rchar); a tus upload whose parts are read back to hash
// them reads about twice its size.
func (s *server) rchar() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", s.pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "rchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// cpu is the server's utime+stime so far.
func (s *server) cpu() time.Duration {
	ut, st := s.times()
	return ut + st
}

// sysCPU is the server's stime (kernel CPU) so far.
func (s *server) sysCPU() time.Duration {
	_, st := s.times()
	return st
}

// times are the server's utime and stime so far.
func (s *server) times() (user, sys time.Duration) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.pid))
	if err != nil {
		return 0, 0
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut) * 10 * time.Millisecond, time.Duration(st) * 10 * time.Millisecond // USER_HZ 100
}

// measureZip measures zip downloads (POST /buckets/{bucket}/zip): a
// folder of many files, then one big file; throughput and peak RSS while
// the zip streams. The archive is parsed from its end (central directory)
// to check it lists every entry with its size.
func measureZip() {
	s := start()
	defer s.close()
	u := signup(s.url, "zip@example.com")
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	var wg sync.WaitGroup
	keys := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range keys {
				if st := putSized(c, s, u, fmt.Sprintf("folder/%04d.bin", i), *zipFileSize); st != 201 {
					fmt.Println("upload failed", st)
				}
			}
		})
	}
	for i := range *zipFiles {
		keys <- i
	}
	close(keys)
	wg.Wait()
	if st := putSized(c, s, u, "big/one.bin", *zipBig); st != 201 {
		fmt.Println("big upload failed", st)
		return
	}
	fmt.Println("## zip downloads")
	base, _ := s.status()
	fmt.Printf("baseline RSS %.1f MiB\n", float64(base)/1024)
	for _, tc := range []struct {
		title, prefix string
		entries       int
		bytes         int64
	}{
		{fmt.Sprintf("%d × %d KiB", *zipFiles, *zipFileSize>>10), "folder/", *zipFiles, int64(*zipFiles) * *zipFileSize},
		{fmt.Sprintf("1 × %d MiB", *zipBig>>20), "big/", 1, *zipBig},
	} {
		s.resetPeak()
		t0 := time.Now()
		req, _ := http.NewRequest("POST", s.url+"/api/v1/buckets/"+u.bucket+"/zip", strings.NewReader(`{"prefixes":["`+tc.prefix+`"]}`))
		req.Header.Set("Authorization", "Bearer "+u.token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		must(err)
		tail := &tailWriter{keep: 4 << 20}
		n, err := io.Copy(tail, resp.Body)
		resp.Body.Close()
		d := time.Since(t0)
		entries, sum := zipDirectory(tail.buf, n)
		fmt.Printf("%s: status %d, %d bytes in %.1f s (%.0f MiB/s), peak RSS %.1f MiB; central directory: %d entries, %d bytes (want %d, %d) %v\n",
			tc.title, resp.StatusCode, n, d.Seconds(), float64(n)/(1<<20)/d.Seconds(), float64(s.peakKiB())/1024, entries, sum, tc.entries, tc.bytes, err)
	}
	fmt.Println()
}

// putSized uploads size generated bytes as key.
func putSized(c *http.Client, s *server, u user, key string, size int64) int {
	req, _ := http.NewRequest("PUT", s.url+"/api/v1/buckets/"+u.bucket+"/files/"+key, newGen(size))
	req.ContentLength = size
	req.Header.Set("Authorization", "Bearer "+u.token)
	resp, err := c.Do(req)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// tailWriter keeps the last keep bytes written.
type tailWriter struct {
	buf  []byte
	keep int
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.keep {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.keep:]...)
	}
	return len(p), nil
}

// zipDirectory reads the central directory of an archive of total bytes
// from its tail: the number of entries and the sum of their sizes.
func zipDirectory(tail []byte, total int64) (int, int64) {
	r, err := zip.NewReader(&tailReaderAt{tail: tail, total: total}, total)
	if err != nil {
		return -1, -1
	}
	var sum int64
	for _, f := range r.File {
		sum += int64(f.UncompressedSize64)
	}
	return len(r.File), sum
}

type tailReaderAt struct {
	tail  []byte
	total int64
}

func (t *tailReaderAt) ReadAt(p []byte, off int64) (int, error) {
	start := t.total - int64(len(t.tail))
	if off < start {
		return 0, fmt.Errorf("offset %d before the kept tail", off)
	}
	n := copy(p, t.tail[off-start:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func measureConcurrent() {
	concurrentUploads("200 clients × 1 MiB, full speed", 0)
}

func measureSlowConcurrent() {
	// Each client sends its 1 MiB over ~3 s, so all 200 are in flight at once.
	concurrentUploads("200 clients × 1 MiB, each sent over ~3 s (all in flight together)", 3*time.Second)
}

type pacedReader struct {
	r     io.Reader
	chunk int
	pause time.Duration
}

func (p *pacedReader) Read(b []byte) (int, error) {
	time.Sleep(p.pause)
	return p.r.Read(b[:min(len(b), p.chunk)])
}

func concurrentUploads(title string, spread time.Duration) {
	s := start("--max-in-flight", "10000")
	defer s.close()
	u := signup(s.url, "conc@example.com")
	payload := make([]byte, 1<<20)
	rand.Read(payload)
	// warm up: a few uploads so pools and the heap reach a steady state
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}}
	for i := range 20 {
		doPut(client, s, u, fmt.Sprintf("warm/%d", i), bytes.NewReader(payload))
	}
	time.Sleep(500 * time.Millisecond)
	base, _ := s.status()
	s.resetPeak()
	var maxInflight atomic.Int64
	stopPoll := make(chan struct{})
	go func() {
		for {
			select {
			case <-stopPoll:
				return
			default:
			}
			v := int64(s.metric(`coffer_http_in_flight_requests`))
			for {
				cur := maxInflight.Load()
				if v <= cur || maxInflight.CompareAndSwap(cur, v) {
					break
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	var wg sync.WaitGroup
	var ok atomic.Int64
	lat := make([]time.Duration, 200)
	t0 := time.Now()
	for i := range 200 {
		wg.Go(func() {
			var body io.Reader = bytes.NewReader(payload)
			if spread > 0 {
				chunks := 32
				body = &pacedReader{r: body, chunk: len(payload) / chunks, pause: spread / time.Duration(chunks)}
			}
			st := time.Now()
			if doPut(client, s, u, fmt.Sprintf("c/%d", i), body) == 201 {
				ok.Add(1)
			}
			lat[i] = time.Since(st)
		})
	}
	wg.Wait()
	dur := time.Since(t0)
	close(stopPoll)
	peak := s.peakKiB()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	inflight := maxInflight.Load()
	fmt.Printf("## %s\n", title)
	fmt.Printf("%d/200 ok in %.2f s (%.0f uploads/s), latency p50 %v p95 %v\n", ok.Load(), dur.Seconds(), 200/dur.Seconds(), lat[100].Round(time.Millisecond), lat[190].Round(time.Millisecond))
	fmt.Printf("RSS before %.1f MiB, peak %.1f MiB, growth %.1f MiB; max in-flight seen %d → %.0f KiB per in-flight upload\n\n",
		float64(base)/1024, float64(peak)/1024, float64(peak-base)/1024, inflight, float64(peak-base)/float64(max(inflight, 1)))
}

func doPut(c *http.Client, s *server, u user, key string, body io.Reader) int {
	req, _ := http.NewRequest("PUT", s.url+"/api/v1/buckets/"+u.bucket+"/files/"+key, body)
	req.ContentLength = 1 << 20
	req.Header.Set("Authorization", "Bearer "+u.token)
	resp, err := c.Do(req)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func measureLogins() {
	s := start()
	defer s.close()
	u := signup(s.url, "login@example.com")
	body := `{"email":"login@example.com","password":"measure password"}`
	fmt.Printf("## logins (argon2id m=19456 KiB, t=2, p=1; pool = max(1, cores/2) slots)\n")
	// 1) sequential logins: the cost of one argon2id verification.
	n := 20
	t0 := time.Now()
	for range n {
		post(s.url+"/api/v1/auth/login", body, nil)
	}
	seq := time.Since(t0) / time.Duration(n)
	// 2) uploads alone for 10 s (the baseline), then 200 concurrent login
	// loops for 10 s while the same 4 upload loops run.
	payload := make([]byte, 64<<10)
	rand.Read(payload)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512}}
	pct := func(x []time.Duration, p float64) time.Duration {
		if len(x) == 0 {
			return 0
		}
		sort.Slice(x, func(i, j int) bool { return x[i] < x[j] })
		return x[int(float64(len(x)-1)*p)].Round(time.Millisecond)
	}
	uploads := func(stop chan struct{}, wg *sync.WaitGroup, tag string) (*atomic.Int64, *[]time.Duration, *sync.Mutex) {
		var ups atomic.Int64
		var upLat []time.Duration
		var upMu sync.Mutex
		for w := range 4 {
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					st := time.Now()
					req, _ := http.NewRequest("PUT", fmt.Sprintf("%s/api/v1/buckets/%s/files/%s/%d-%d", s.url, u.bucket, tag, w, i), bytes.NewReader(payload))
					req.Header.Set("Authorization", "Bearer "+u.token)
					resp, err := client.Do(req)
					if err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode == 201 {
							ups.Add(1)
							upMu.Lock()
							upLat = append(upLat, time.Since(st))
							upMu.Unlock()
						}
					}
				}
			})
		}
		return &ups, &upLat, &upMu
	}
	dur := 10 * time.Second
	{
		stop := make(chan struct{})
		var wg sync.WaitGroup
		ups, lat, _ := uploads(stop, &wg, "alone")
		time.Sleep(dur)
		close(stop)
		wg.Wait()
		fmt.Printf("baseline, 4 upload loops (64 KiB) alone: %.0f uploads/s, p50 %v p95 %v\n", float64(ups.Load())/dur.Seconds(), pct(*lat, .5), pct(*lat, .95))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	upsP, upLatP, _ := uploads(stop, &wg, "storm")
	codes := map[int]int{}
	var cmu sync.Mutex
	var logLat []time.Duration
	t0 = time.Now()
	for range 200 {
		wg.Go(func() {
			for time.Since(t0) < dur {
				st := time.Now()
				req, _ := http.NewRequest("POST", s.url+"/api/v1/auth/login", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				code := 0
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					code = resp.StatusCode
				}
				cmu.Lock()
				codes[code]++
				if code == 200 {
					logLat = append(logLat, time.Since(st))
				}
				cmu.Unlock()
				if code == 503 {
					time.Sleep(200 * time.Millisecond) // a polite client honours Retry-After (shortened)
				}
			}
		})
	}
	time.Sleep(dur)
	close(stop)
	wg.Wait()
	el := time.Since(t0)
	ups, upLat := upsP, *upLatP
	fmt.Printf("one login alone: %v → %.1f logins/s per slot\n", seq.Round(time.Millisecond), float64(time.Second)/float64(seq))
	fmt.Printf("200 concurrent login loops for %v: %d logins ok (%.1f/s), p50 %v p95 %v; status counts %v\n", dur, codes[200], float64(codes[200])/el.Seconds(), pct(logLat, .5), pct(logLat, .95), codes)
	fmt.Printf("meanwhile 4 upload loops (64 KiB): %d uploads (%.0f/s), p50 %v p95 %v\n", ups.Load(), float64(ups.Load())/el.Seconds(), pct(upLat, .5), pct(upLat, .95))
	fmt.Printf("pool rejections (metric): %.0f\n\n", s.metric("coffer_password_pool_rejected_total"))
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
