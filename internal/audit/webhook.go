package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// WebhookOptions bound the webhook sink; zero values take the defaults
// written on each field.
type WebhookOptions struct {
	Batch    int           // events per POST at most; default 100
	Interval time.Duration // a batch waits at most this long to fill; default 1s
	Queue    int           // events waiting to be posted at most; default 10000 (more are dropped and counted)
	Retries  int           // attempts after the first before a batch is dropped; default 5
	Backoff  time.Duration // the first retry's wait, doubled each time up to 30s; default 500ms
	Timeout  time.Duration // one POST's bound; default 10s
	Client   *http.Client  // default: a client of its own with Timeout
}

// webhook posts events as JSON arrays, in batches, from a bounded queue,
// retrying a failed POST (a transport error, 429 or 5xx) with backoff; a
// batch refused for good (another 4xx, or retries exhausted) is dropped
// and counted.
type webhook struct {
	url   string
	o     WebhookOptions
	queue chan Event
	drop  func(n int, why string)
	done  chan struct{}
	stop  chan struct{} // closed by close: post what is queued, then end
	ctx   context.Context
	abort context.CancelFunc
}

func newWebhook(raw string, o WebhookOptions, drop func(int, string)) (*webhook, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("audit webhook: %q is not an http(s) URL", raw)
	}
	if o.Batch <= 0 {
		o.Batch = 100
	}
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.Queue <= 0 {
		o.Queue = 10000
	}
	if o.Retries < 0 {
		o.Retries = 0
	} else if o.Retries == 0 {
		o.Retries = 5
	}
	if o.Backoff <= 0 {
		o.Backoff = 500 * time.Millisecond
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: o.Timeout}
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &webhook{url: raw, o: o, queue: make(chan Event, o.Queue), drop: drop, done: make(chan struct{}), stop: make(chan struct{}), ctx: ctx, abort: cancel}
	go h.run()
	return h, nil
}

func (h *webhook) enqueue(e Event) {
	select {
	case h.queue <- e:
	default:
		h.drop(1, "audit webhook queue full")
	}
}

func (h *webhook) run() {
	defer close(h.done)
	batch := make([]Event, 0, h.o.Batch)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case e := <-h.queue:
			if len(batch) == 0 {
				timer.Reset(h.o.Interval)
			}
			batch = append(batch, e)
			if len(batch) < h.o.Batch {
				continue
			}
		case <-timer.C:
		case <-h.stop:
		rest:
			for {
				select {
				case e := <-h.queue:
					batch = append(batch, e)
					if len(batch) == h.o.Batch {
						h.send(batch)
						batch = batch[:0]
					}
				default:
					break rest
				}
			}
			if len(batch) > 0 {
				h.send(batch)
			}
			return
		}
		timer.Stop()
		if len(batch) > 0 {
			h.send(batch)
			batch = batch[:0]
		}
	}
}

// send posts batch, retrying; it drops (counts) the batch when it gives up.
func (h *webhook) send(batch []Event) {
	body, err := json.Marshal(batch)
	if err != nil {
		h.drop(len(batch), "audit webhook: encode: "+err.Error())
		return
	}
	wait := h.o.Backoff
	var last string
	for attempt := 0; attempt <= h.o.Retries; attempt++ {
		if attempt > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-h.ctx.Done():
				t.Stop()
				h.drop(len(batch), "audit webhook: shut down before delivery ("+last+")")
				return
			}
			wait = min(2*wait, 30*time.Second)
		}
		retry, why := h.post(body)
		if why == "" {
			return
		}
		last = why
		if !retry {
			break
		}
	}
	h.drop(len(batch), "audit webhook: "+last)
}

// post makes one POST: ok ("" why), or why it failed and whether to retry.
func (h *webhook) post(body []byte) (retry bool, why string) {
	req, err := http.NewRequestWithContext(h.ctx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return false, err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.o.Client.Do(req)
	if err != nil {
		return true, err.Error()
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return false, ""
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 || resp.StatusCode == http.StatusRequestTimeout:
		return true, resp.Status
	}
	return false, resp.Status
}

// close posts what is queued until ctx ends, then gives up on the rest
// (counted as dropped).
func (h *webhook) close(ctx context.Context) error {
	close(h.stop)
	select {
	case <-h.done:
		h.abort()
		return nil
	case <-ctx.Done():
		h.abort()
		<-h.done
		return nil
	}
}
