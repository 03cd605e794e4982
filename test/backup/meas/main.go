// Command meas is the load of docs/PERFORMANCE.md's "Issue 24: backup
// and restore": it fills a coffer server through the file API (-mode
// fill: -n objects of -size bytes, -c at a time), or measures PUT/GET
// latency percentiles for -d (-mode lat), the foreground during a backup.
//
//	go run ./test/backup/meas -url http://127.0.0.1:8080 -mode fill -n 10000 -size 102400
//	go run ./test/backup/meas -url http://127.0.0.1:8080 -mode lat -c 8 -size 131072 -d 15s
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

var base = flag.String("url", "", "file API")
var email = flag.String("email", "m@example.com", "")
var mode = flag.String("mode", "fill", "fill | lat")
var n = flag.Int("n", 10000, "objects (fill)")
var size = flag.Int("size", 100<<10, "bytes per object")
var conc = flag.Int("c", 16, "concurrency")
var dur = flag.Duration("d", 20*time.Second, "duration (lat)")

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func jsonReq(method, path string, v, out any, tok string) int {
	b, _ := json.Marshal(v)
	req, _ := http.NewRequest(method, *base+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	must(err)
	defer resp.Body.Close()
	d, _ := io.ReadAll(resp.Body)
	if out != nil {
		json.Unmarshal(d, out)
	}
	return resp.StatusCode
}

func main() {
	flag.Parse()
	http.DefaultTransport.(*http.Transport).MaxIdleConnsPerHost = 64
	var su struct{ Bucket struct{ Name string } }
	jsonReq("POST", "/api/v1/auth/signup", map[string]string{"email": *email, "password": "correct horse battery"}, &su, "")
	var sess struct {
		AccessToken string `json:"access_token"`
	}
	jsonReq("POST", "/api/v1/auth/login", map[string]string{"email": *email, "password": "correct horse battery"}, &sess, "")
	var bl struct {
		Buckets []struct{ Name string } `json:"buckets"`
	}
	jsonReq("GET", "/api/v1/buckets", nil, &bl, sess.AccessToken)
	bucket := su.Bucket.Name
	if bucket == "" && len(bl.Buckets) > 0 {
		bucket = bl.Buckets[0].Name
	}
	tok := sess.AccessToken
	data := make([]byte, *size)
	for i := range data {
		data[i] = byte(i * 7)
	}
	do := func(method, key string, body []byte) (int, time.Duration) {
		var r io.Reader
		if body != nil {
			r = bytes.NewReader(body)
		}
		req, _ := http.NewRequest(method, *base+"/api/v1/buckets/"+bucket+"/files/"+key, r)
		req.Header.Set("Authorization", "Bearer "+tok)
		t := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, time.Since(t)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, time.Since(t)
	}
	switch *mode {
	case "fill":
		var next, fails atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for range *conc {
			wg.Go(func() {
				for {
					i := next.Add(1) - 1
					if i >= int64(*n) {
						return
					}
					d := slices.Clone(data)
					d[0], d[1], d[2] = byte(i), byte(i>>8), byte(i>>16)
					if st, _ := do("PUT", fmt.Sprintf("f/%06d", i), d); st != 201 && st != 200 {
						if fails.Add(1) < 3 {
							fmt.Fprintln(os.Stderr, "PUT", i, st)
						}
					}
				}
			})
		}
		wg.Wait()
		fmt.Printf("filled %d x %d B in %s, %d failed\n", *n, *size, time.Since(start).Round(time.Millisecond), fails.Load())
	case "lat":
		var mu sync.Mutex
		var lat []time.Duration
		var errs atomic.Int64
		stop := time.Now().Add(*dur)
		var wg sync.WaitGroup
		for w := range *conc {
			wg.Go(func() {
				for i := 0; time.Now().Before(stop); i++ {
					key := fmt.Sprintf("lat/%d/%d", w, i%50)
					st, d := do("PUT", key, data)
					if st != 201 && st != 200 {
						errs.Add(1)
					}
					st2, d2 := do("GET", key, nil)
					if st2 != 200 {
						errs.Add(1)
					}
					mu.Lock()
					lat = append(lat, d, d2)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		slices.Sort(lat)
		p := func(q float64) time.Duration { return lat[int(q*float64(len(lat)-1))] }
		fmt.Printf("ops %d (%.0f/s) errors %d p50 %s p99 %s max %s\n", len(lat), float64(len(lat))/dur.Seconds(), errs.Load(),
			p(0.5).Round(10*time.Microsecond), p(0.99).Round(10*time.Microsecond), lat[len(lat)-1].Round(time.Millisecond))
	}
}
