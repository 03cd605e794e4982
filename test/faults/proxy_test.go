package faults

import (
	"net"
	"sync"
	"time"
)

// proxyMode is what a proxy does with traffic.
type proxyMode int

const (
	pass      proxyMode = iota // forward every byte
	blackhole                  // forward nothing: connections stay open, silent (a partition)
	refuse                     // close every connection, accept and close new ones (a dead peer)
)

// proxy is a TCP proxy between a node and a backend that can delay,
// blackhole or refuse traffic: the harness's partitions and slow links
// where tc netem is missing (it is, here). Each node has its own proxy to
// PostgreSQL and to MinIO, so one node can be cut off alone.
type proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cond  *sync.Cond
	mode  proxyMode
	delay time.Duration
	conns map[net.Conn]struct{}
	done  bool
}

// newProxy listens on host (a free port) and forwards to target.
func newProxy(host, target string) (*proxy, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	go p.accept()
	return p, nil
}

// Addr is host:port of the proxy.
func (p *proxy) Addr() string { return p.ln.Addr().String() }

// Set changes the mode and the delay added to every chunk forwarded.
// Refuse closes every open connection.
func (p *proxy) Set(mode proxyMode, delay time.Duration) {
	p.mu.Lock()
	p.mode, p.delay = mode, delay
	var doomed []net.Conn
	if mode == refuse {
		for c := range p.conns {
			doomed = append(doomed, c)
		}
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	for _, c := range doomed {
		c.Close()
	}
}

// Close stops the proxy and closes every connection.
func (p *proxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = true
	for c := range p.conns {
		c.Close()
	}
	p.cond.Broadcast()
}

func (p *proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done || p.mode == refuse {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

// gate waits while the proxy blackholes and returns the delay to add, or
// false when the connection must close.
func (p *proxy) gate() (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.mode == blackhole && !p.done {
		p.cond.Wait()
	}
	return p.delay, !p.done && p.mode != refuse
}

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

func (p *proxy) serve(client net.Conn) {
	if !p.track(client) {
		client.Close()
		return
	}
	defer p.untrack(client)
	// A new connection in a blackhole waits, like a SYN into a partition.
	if _, ok := p.gate(); !ok {
		return
	}
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		return
	}
	if !p.track(server) {
		server.Close()
		return
	}
	defer p.untrack(server)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pipe(server, client) }()
	go func() { defer wg.Done(); p.pipe(client, server) }()
	wg.Wait()
}

// pipe copies src to dst through the gate, then closes both (an end of
// either direction ends the connection: enough for PostgreSQL and HTTP).
func (p *proxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			delay, ok := p.gate()
			if !ok {
				return
			}
			if delay > 0 {
				time.Sleep(delay)
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
