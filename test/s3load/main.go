// Command s3load is the independent S3 client of scripts/bench-s3-cpu.sh:
// aws-sdk-go-v2 with its defaults (SigV4, signed payload over plain HTTP,
// the SDK's default request checksums), the same binary against every
// server. It PUTs or GETs objects of -size with -c workers for -duration
// after a -warmup, and prints one tab-separated line: ops, ops/s, errors,
// and, when -pid names the server process, the server's CPU per op
// (utime+stime from /proc/PID/stat over the measured phase only, divided
// by the operations) and its peak RSS (VmHWM), with the load average.
//
//	go run ./test/s3load -endpoint http://127.0.0.1:9000 -ak A -sk S -op put -size 1024 -c 16 -pid 1234
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

func main() {
	endpoint := flag.String("endpoint", "", "S3 endpoint (http://127.0.0.1:PORT)")
	ak := flag.String("ak", "", "access key")
	sk := flag.String("sk", "", "secret key")
	bucket := flag.String("bucket", "s3load", "bucket (created if missing)")
	op := flag.String("op", "put", "put, get or delete (DeleteObject of keys never written: 204 after the lookup; in a -versioned bucket, a delete marker each)")
	versioned := flag.Bool("versioned", false, "enable versioning on the bucket (delete: each DeleteObject writes a delete marker)")
	size := flag.Int("size", 1024, "object size in bytes")
	conc := flag.Int("c", 16, "concurrent workers")
	dur := flag.Duration("duration", 8*time.Second, "measured phase")
	warm := flag.Duration("warmup", 2*time.Second, "unmeasured phase before it")
	objects := flag.Int("objects", 200, "objects prepared for get")
	pid := flag.Int("pid", 0, "server process to measure (0: none)")
	label := flag.String("label", "", "first column of the output line")
	flag.Parse()
	if *endpoint == "" || (*op != "put" && *op != "get" && *op != "delete") {
		flag.Usage()
		os.Exit(2)
	}
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx,
		config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(*ak, *sk, "")),
		config.WithRetryMaxAttempts(1),
		// AWS_CA_BUNDLE (set on this machine) refuses config.WithHTTPClient
		// of a plain http.Client; the SDK's buildable client takes it.
		config.WithHTTPClient(awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
			tr.MaxIdleConns = 1024
			tr.MaxIdleConnsPerHost = 1024
		})))
	if err != nil {
		fail(err)
	}
	cl := s3.NewFromConfig(cfg, func(o *s3.Options) { o.BaseEndpoint = endpoint; o.UsePathStyle = true })
	if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bucket}); err != nil && !strings.Contains(err.Error(), "BucketAlreadyOwnedByYou") {
		fail(fmt.Errorf("create bucket: %w", err))
	}
	if *versioned {
		if _, err := cl.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: bucket,
			VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
			fail(fmt.Errorf("versioning: %w", err))
		}
	}
	body := make([]byte, *size)
	_, _ = rand.Read(body)
	put := func(key string) error {
		_, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String(key), Body: bytes.NewReader(body)})
		return err
	}
	if *op == "get" {
		for i := 0; i < *objects; i++ {
			if err := put(fmt.Sprintf("get/%d", i)); err != nil {
				fail(fmt.Errorf("prepare: %w", err))
			}
		}
	}
	var seq atomic.Int64
	one := func() error {
		n := seq.Add(1)
		switch *op {
		case "put":
			return put(fmt.Sprintf("put/%d", n))
		case "delete":
			_, err := cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bucket, Key: aws.String(fmt.Sprintf("del/%d", n))})
			return err
		}
		out, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: bucket, Key: aws.String(fmt.Sprintf("get/%d", n%int64(*objects)))})
		if err != nil {
			return err
		}
		got, err := io.Copy(io.Discard, out.Body)
		out.Body.Close()
		if err == nil && got != int64(*size) {
			err = fmt.Errorf("got %d bytes, want %d", got, *size)
		}
		return err
	}
	var measuring atomic.Bool
	var ops, errs atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < *conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				err := one()
				if !measuring.Load() {
					continue
				}
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				} else {
					ops.Add(1)
				}
			}
		}()
	}
	time.Sleep(*warm)
	cpu0 := cpuTicks(*pid)
	start := time.Now()
	measuring.Store(true)
	time.Sleep(*dur)
	measuring.Store(false)
	elapsed := time.Since(start)
	cpu1 := cpuTicks(*pid)
	close(stop)
	wg.Wait()
	n := ops.Load()
	line := []string{*label, *op, strconv.Itoa(*size), strconv.Itoa(*conc), strconv.FormatInt(n, 10),
		fmt.Sprintf("%.0f", float64(n)/elapsed.Seconds()), strconv.FormatInt(errs.Load(), 10)}
	if *pid > 0 && n > 0 {
		// CLK_TCK is 100 on Linux (x86-64 and arm64 alike).
		line = append(line, fmt.Sprintf("%.0f", float64(cpu1-cpu0)*1e4/float64(n)), fmt.Sprintf("%.0f", float64(hwmKiB(*pid))/1024))
	} else {
		line = append(line, "-", "-")
	}
	load, _ := os.ReadFile("/proc/loadavg")
	line = append(line, strings.Fields(string(load) + " -")[0])
	fmt.Println(strings.Join(line, "\t"))
	if e := firstErr.Load(); e != nil {
		fmt.Fprintln(os.Stderr, "s3load: first error:", e)
	}
}

// cpuTicks is the process's utime+stime in clock ticks (fields 14 and 15
// of /proc/PID/stat, counted after the parenthesised command name).
func cpuTicks(pid int) int64 {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		fail(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

// hwmKiB is the process's peak resident set (VmHWM) in KiB.
func hwmKiB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		fail(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			v, _ := strconv.ParseInt(strings.Fields(l)[1], 10, 64)
			return v
		}
	}
	fail(errors.New("no VmHWM"))
	return 0
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "s3load:", err)
	os.Exit(1)
}
