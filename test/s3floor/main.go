// Command s3floor is the floor under Coffer's small S3 requests: an HTTP
// server on net/http, as Coffer's, that answers test/s3load's requests
// with no authentication, no metadata and no storage. A PUT reads its
// body and answers its MD5 as the ETag (what any S3 server must compute);
// a GET answers -size bytes. Measured with the same client and the same
// CPU accounting as scripts/bench-s3-cpu.sh, its CPU per request is what
// net/http and the runtime cost before any of a storage server's own work
// (issue 23, fifth pass: "small objects", in docs/PERFORMANCE.md).
//
//	go run ./test/s3floor -listen 127.0.0.1:29700 -size 1024
//
// Loopback only; a measuring tool, not part of Coffer.
package main

import (
	"crypto/md5"
	"encoding/hex"
	"flag"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:29700", "address (loopback)")
	size := flag.Int("size", 1024, "bytes a GET answers")
	flag.Parse()
	host, _, err := net.SplitHostPort(*listen)
	if err != nil || net.ParseIP(host) == nil || !net.ParseIP(host).IsLoopback() {
		log.Fatalf("s3floor: -listen must be a loopback address, not %q", *listen)
	}
	body := make([]byte, *size)
	sum := md5.Sum(body)
	etag := `"` + hex.EncodeToString(sum[:]) + `"`
	length := strconv.Itoa(*size)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPut:
			m := md5.New()
			if _, err := io.Copy(m, r.Body); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			w.Header().Set("ETag", `"`+hex.EncodeToString(m.Sum(nil))+`"`)
			w.WriteHeader(http.StatusOK)
		case http.MethodGet, http.MethodHead:
			w.Header().Set("ETag", etag)
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Length", length)
			if r.Method == http.MethodGet {
				w.Write(body)
			}
		default:
			w.WriteHeader(http.StatusOK)
		}
	})
	log.Fatal(http.ListenAndServe(*listen, h))
}
