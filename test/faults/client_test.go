package faults

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coffer-storage/coffer/internal/s3api/sigv4"
	"github.com/coffer-storage/coffer/test/testenv"
)

// clientTimeout bounds every request: the server's --request-timeout
// (30 s, the documented bound of requests that move no object bytes; the
// harness's objects are at most 100 KiB) and a margin. A request that
// reaches it is a hang, a finding.
const clientTimeout = 35 * time.Second

// s3conn signs and sends S3 requests to one node.
type s3conn struct {
	key    testenv.S3Key
	base   func() string // the node's S3 URL (it keeps its port across restarts)
	bucket string
	http   *http.Client
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (c *s3conn) do(ctx context.Context, method, path string, body []byte, hdr ...string) (reply, error) {
	ctx, cancel := context.WithTimeout(ctx, clientTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base()+"/"+c.bucket+path, bytes.NewReader(body))
	if err != nil {
		return reply{}, err
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	sum := sha256.Sum256(body)
	if err := sigv4.SignRequest(req, c.key.ID, c.key.Secret, "us-east-1", hex.EncodeToString(sum[:]), time.Now()); err != nil {
		return reply{}, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, err
	}
	return reply{resp.StatusCode, resp.Header, b}, nil
}

func newHTTP() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}}
}

// outcome classifies a reply: 2xx succeeded; 4xx (but 408 and 429) is a
// definite failure (the request changed nothing), and so is a refused
// connection (the request never reached a server: status 0, Err
// "refused"); anything else — a 5xx, 408, 429, a reset connection, a
// timeout — is indeterminate.
func outcome(r reply, err error) output {
	switch {
	case err != nil && errClass(err) == "refused":
		return output{Err: "refused"}
	case err != nil:
		return output{Unknown: true, Err: errClass(err)}
	case r.status >= 200 && r.status < 300:
		return output{OK: true, Status: r.status}
	case r.status >= 400 && r.status < 500 && r.status != 408 && r.status != 429:
		return output{Status: r.status}
	default:
		o := output{Unknown: true, Status: r.status, Err: fmt.Sprintf("status %d", r.status)}
		if r.status == 503 && r.header.Get("Retry-After") != "" {
			o.Err += " Retry-After " + r.header.Get("Retry-After")
		}
		return o
	}
}

// errClass names a transport error: "timeout" (a hang: the client gave
// up), "refused", "reset" or the error.
func errClass(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case strings.Contains(err.Error(), "connection refused"):
		return "refused"
	case strings.Contains(err.Error(), "reset by peer"), strings.Contains(err.Error(), "EOF"), strings.Contains(err.Error(), "broken pipe"):
		return "reset"
	}
	return err.Error()
}

// isClear reports whether an indeterminate outcome is a clear error: a 503
// with Retry-After, a refused or reset connection (a dead or restarting
// node); not a hang, not another 5xx.
func isClear(o output) bool {
	return !o.Unknown || strings.Contains(o.Err, "Retry-After") || o.Err == "refused" || o.Err == "reset"
}

// rep503 is the Retry-After of an outcome's error, or "".
func rep503(e string) string {
	_, after, _ := strings.Cut(e, "Retry-After ")
	return after
}

var etagRE = regexp.MustCompile(`<ETag>(?:"|&#34;|&quot;)?([0-9a-f]+)`)

// run is the shared state of one harness run.
type run struct {
	start   time.Time
	keysPer int
	genLen  time.Duration
	fault   atomic.Pointer[string] // the fault window open now
	values  sync.Map               // ETag → id of every value sent
	mu      sync.Mutex
	finding []string // integrity violations seen by clients
}

func (r *run) now() int64 { return int64(time.Since(r.start)) }

// keys are the keys of the generation open at t: the key set changes
// every genLen, so each key's history (and the checker's search) stays
// short, as Jepsen's independent keys do.
func (r *run) keys(t int64) (prefix string, keys []string) {
	gen := time.Duration(t) / r.genLen
	prefix = fmt.Sprintf("f/g%03d/", gen)
	for i := range r.keysPer {
		keys = append(keys, fmt.Sprintf("%sk%d", prefix, i))
	}
	return prefix, keys
}

func (r *run) note(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finding = append(r.finding, fmt.Sprintf(format, args...))
}

func (r *run) currentFault() string {
	if f := r.fault.Load(); f != nil {
		return *f
	}
	return ""
}

// client runs operations on one node until ctx ends and returns its
// records.
func (r *run) client(ctx context.Context, id, node int, c *s3conn, seed int64) []record {
	rng := rand.New(rand.NewSource(seed))
	var h []record
	seq := 0
	seen := map[string]string{} // key → the last id this client saw there
	for ctx.Err() == nil {
		call := r.now()
		prefix, keys := r.keys(call)
		key := keys[rng.Intn(len(keys))]
		rec := record{Client: id, Node: node, Call: call, Fault: r.currentFault()}
		newValue := func() string {
			seq++
			v := fmt.Sprintf("c%d-%d", id, seq)
			r.values.Store(etagOf(v), v)
			return v
		}
		switch p := rng.Intn(100); {
		case p < 30:
			rec.In = input{Kind: opGet, Key: key}
			rep, err := c.do(context.Background(), "GET", "/"+key, nil)
			rec.Out = outcome(rep, err)
			if rec.Out.OK {
				v, berr := checkBody(rep.body)
				if berr != nil {
					r.note("GET %s by client %d on node %d at %s: %v", key, id, node, ms(call), berr)
					v = "corrupt"
				}
				rec.Out.Value = v
				seen[key] = v
			}
		case p < 50:
			v := newValue()
			rec.In = input{Kind: opPut, Key: key, Value: v}
			rep, err := c.do(context.Background(), "PUT", "/"+key, valueBody(v))
			rec.Out = outcome(rep, err)
		case p < 58:
			rec.In = input{Kind: opDelete, Key: key}
			rep, err := c.do(context.Background(), "DELETE", "/"+key, nil)
			rec.Out = outcome(rep, err)
		case p < 68:
			v := newValue()
			rec.In = input{Kind: opPutIfNew, Key: key, Value: v}
			rep, err := c.do(context.Background(), "PUT", "/"+key, valueBody(v), "If-None-Match", "*")
			rec.Out = outcome(rep, err)
		case p < 80:
			match, ok := seen[key]
			if !ok || match == "corrupt" {
				match = fmt.Sprintf("c%d-%d", rng.Intn(6), 1+rng.Intn(max(seq, 1)))
			}
			v := newValue()
			rec.In = input{Kind: opPutMatch, Key: key, Value: v, Match: etagOf(match)}
			rep, err := c.do(context.Background(), "PUT", "/"+key, valueBody(v), "If-Match", `"`+rec.In.Match+`"`)
			rec.Out = outcome(rep, err)
		case p < 90:
			src := keys[(slices.Index(keys, key)+1+rng.Intn(len(keys)-1))%len(keys)] // another key: a copy onto itself is a 400
			rec.In = input{Kind: opCopy, Key: key, Source: src}
			rep, err := c.do(context.Background(), "PUT", "/"+key, nil, "X-Amz-Copy-Source", "/"+c.bucket+"/"+src)
			rec.Out = outcome(rep, err)
			if rec.Out.OK && bytes.Contains(rep.body, []byte("<Error>")) {
				rec.Out = output{Unknown: true, Status: rep.status, Err: "error in a 200 copy reply"}
			}
			if rec.Out.OK {
				if m := etagRE.FindSubmatch(rep.body); m != nil {
					if v, ok := r.values.Load(string(m[1])); ok {
						rec.Out.Value = v.(string)
					} else {
						r.note("copy %s→%s by client %d at %s wrote ETag %s, which no PUT wrote", src, key, id, ms(call), m[1])
					}
				}
			}
		default:
			rec.List = true
			rec.In = input{Key: prefix}
			rep, err := c.do(context.Background(), "GET", "?list-type=2&prefix="+url.QueryEscape(prefix), nil)
			rec.Out = outcome(rep, err)
			if rec.Out.OK {
				var l struct {
					Contents []struct{ Key string }
				}
				if err := xml.Unmarshal(rep.body, &l); err != nil {
					r.note("ListObjectsV2 by client %d: %v", id, err)
				}
				for _, o := range l.Contents {
					rec.Listed = append(rec.Listed, o.Key)
				}
			}
		}
		rec.Return = r.now()
		if rec.Out.Unknown {
			rec.Return = -1
		}
		rec.Latency = r.now() - call
		h = append(h, rec)
		// Think a little; after an error, back off as a client should
		// (Retry-After, or a moment after a refused or broken connection).
		pause := time.Duration(5+rng.Intn(15)) * time.Millisecond
		if rec.Out.Err != "" {
			pause = 200 * time.Millisecond
			if s, err := strconv.Atoi(rep503(rec.Out.Err)); err == nil {
				pause = time.Duration(min(s, 5)) * time.Second
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
	}
	return h
}
