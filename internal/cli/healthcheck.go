package cli

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

// healthcheckCmd asks a running node whether it is ready (GET /readyz):
// the container image's HEALTHCHECK and systemd's or Kubernetes' probes
// where no curl is at hand (the image has no shell). Exit 0 when the node
// answers 200, 1 otherwise.
type healthcheckCmd struct{ env Env }

func (*healthcheckCmd) Synopsis() string {
	return "ask a running node whether it is ready (GET /readyz; exit 0 if so): the container's HEALTHCHECK"
}

func (c *healthcheckCmd) Run(ctx context.Context, args []string) error {
	fs := newFlagSet("coffer healthcheck", c.env)
	url := fs.String("url", "", "the endpoint to ask (default: /readyz on --listen's port at 127.0.0.1, https if COFFER_TLS_CERT is set; from COFFER_LISTEN, else 127.0.0.1:8080)")
	timeout := fs.Duration("timeout", 5*time.Second, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{errorf("unexpected arguments: %v", fs.Args())}
	}
	target := *url
	if target == "" {
		target = readyURL(os.Getenv("COFFER_LISTEN"), os.Getenv("COFFER_TLS_CERT") != "")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return usageError{errorf("--url: %v", err)}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	if host := req.URL.Hostname(); req.URL.Scheme == "https" {
		if ip := net.ParseIP(host); (ip != nil && ip.IsLoopback()) || host == "localhost" {
			// The node's own certificate names its public host, not the
			// loopback address this probe runs on inside its container.
			tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
		}
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", target, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", target, resp.Status, body)
	}
	fmt.Fprintf(c.env.Stdout, "%s: ready\n", target)
	return nil
}

// readyURL is /readyz at the loopback address of listen's port (a node
// listening on every address, or on its container's, answers there too).
func readyURL(listen string, tls bool) string {
	port := "8080"
	if listen != "" {
		if _, p, err := net.SplitHostPort(listen); err == nil && p != "" {
			port = p
		}
	}
	scheme := "http"
	if tls {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort("127.0.0.1", port) + "/readyz"
}
