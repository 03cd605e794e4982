package deploy

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/coffer-storage/coffer/test/testenv"
)

// dashboard is what TestMonitoringFiles reads of deploy/grafana/coffer.json.
type dashboard struct {
	Title      string
	UID        string
	Panels     []dashPanel
	Templating struct {
		List []struct{ Name, Type string }
	}
}

type dashPanel struct {
	ID      int
	Type    string
	Title   string
	GridPos struct{ H, W, X, Y int } `json:"gridPos"`
	Targets []struct {
		Expr  string
		RefID string `json:"refId"`
	}
}

// rulesFile is a Prometheus rules file.
type rulesFile struct {
	Groups []struct {
		Name  string
		Rules []struct {
			Alert       string
			Record      string
			Expr        string
			For         string
			Labels      map[string]string
			Annotations map[string]string
		}
	}
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(), "deploy", "grafana", "coffer.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("deploy/grafana/coffer.json: %v", err)
	}
	return d
}

func readAlerts(t *testing.T) (rulesFile, string) {
	t.Helper()
	path := filepath.Join(repoRoot(), "deploy", "prometheus", "alerts.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r rulesFile
	if err := yaml.Unmarshal(b, &r); err != nil {
		t.Fatalf("deploy/prometheus/alerts.yaml: %v", err)
	}
	return r, path
}

// grafanaVars replaces the dashboard's variables by what Prometheus would
// get from Grafana.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$instance", ".*")

// TestMonitoringFiles: every metric the dashboard and the alert rules name
// exists in a running node's /metrics after a short load (the node
// configured with what the panels cover: encryption with a key service,
// continuous replication, TLS), the alert rules pass promtool check rules, and so do the
// dashboard's queries (as recording rules).
func TestMonitoringFiles(t *testing.T) {
	d := readDashboard(t)
	alerts, alertsPath := readAlerts(t)

	// The files' own shape.
	if d.UID == "" || d.Title == "" || !slices.ContainsFunc(d.Templating.List, func(v struct{ Name, Type string }) bool { return v.Name == "instance" }) {
		t.Errorf("the dashboard needs a uid, a title and the instance variable its queries use")
	}
	ids := map[int]bool{}
	exprs := map[string]string{} // expression -> where
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d is used twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 || p.GridPos.W == 0 || p.GridPos.H == 0 {
			t.Errorf("panel %q has no query or no size", p.Title)
		}
		for _, tg := range p.Targets {
			exprs[grafanaVars.Replace(tg.Expr)] = "dashboard panel " + p.Title
		}
	}
	nAlerts := 0
	for _, g := range alerts.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Expr == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("alert rule %+v lacks a name, expression, severity or summary", r)
			}
			exprs[r.Expr] = "alert " + r.Alert
			nAlerts++
		}
	}
	// What the issue asks the alerts to cover.
	for _, want := range []string{"coffer_http_requests_total", "coffer_http_request_duration_seconds_bucket", "coffer_data_disk_free_bytes",
		"coffer_backup_last_success_timestamp_seconds", "coffer_replication_lag_seconds", "coffer_tls_cert_expiry_timestamp_seconds", "coffer_kms_errors_total"} {
		found := false
		for _, g := range alerts.Groups {
			for _, r := range g.Rules {
				found = found || slices.Contains(metricNames(r.Expr), want)
			}
		}
		if !found {
			t.Errorf("no alert rule uses %s", want)
		}
	}

	// The metrics a node exposes.
	have := scrapeNames(t)
	var missing []string
	for e, where := range exprs {
		for _, m := range metricNames(e) {
			if !have[m] {
				missing = append(missing, fmt.Sprintf("%s (%s)", m, where))
			}
		}
	}
	sort.Strings(missing)
	for _, m := range slices.Compact(missing) {
		t.Errorf("not in /metrics: %s", m)
	}
	t.Logf("%d panels, %d alert rules, %d distinct queries checked against %d metric names", len(d.Panels), nAlerts, len(exprs), len(have))

	// promtool: the alert rules, and every dashboard query as a recording
	// rule, parse and type-check.
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("COFFER_REQUIRE_CLIENTS") == "1" {
			t.Fatalf("promtool not found (scripts/test.sh installs Debian's prometheus package)")
		}
		t.Skip("promtool not found: the rules' syntax is unchecked (scripts/test.sh installs it)")
	}
	if out, err := exec.Command(promtool, "check", "rules", alertsPath).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules %s: %v\n%s", alertsPath, err, out)
	}
	var rec bytes.Buffer
	rec.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	i := 0
	for e, where := range exprs {
		if !strings.HasPrefix(where, "dashboard") {
			continue
		}
		i++
		q, _ := json.Marshal(e) // a JSON string is a YAML string
		fmt.Fprintf(&rec, "      - record: dashboard:query_%d\n        expr: %s\n", i, q)
	}
	recPath := filepath.Join(t.TempDir(), "dashboard-rules.yaml")
	if err := os.WriteFile(recPath, rec.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", recPath).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules (the dashboard's %d queries): %v\n%s", i, err, out)
	}
}

// scrapeNames starts the nodes whose metrics the files cover, loads them
// briefly and returns the sample names of their /metrics.
func scrapeNames(t *testing.T) map[string]bool {
	t.Helper()
	have := map[string]bool{}
	srv := testenv.Start(t, "--encryption", "on", "--replicate-to", t.TempDir())
	c := srv.NewUser(t)
	// A failed sign-in, an upload, a list, a download and a delete on the
	// file API.
	bad := testenv.NewClient(srv.URL)
	bad.Email = c.Email
	if st := bad.JSON(t, "POST", "/api/v1/auth/login", map[string]string{"email": c.Email, "password": "wrong password!"}, nil); st != 401 {
		t.Errorf("a wrong password: status %d", st)
	}
	body := bytes.Repeat([]byte("coffer "), 2000)
	for _, st := range []struct {
		method, path string
		body         []byte
		want         int
	}{
		{"PUT", testenv.FileURL(c.Bucket, "docs/a.txt"), body, 201},
		{"GET", "/api/v1/buckets/" + c.Bucket + "/files", nil, 200},
		{"GET", testenv.FileURL(c.Bucket, "docs/a.txt"), nil, 200},
		{"DELETE", testenv.FileURL(c.Bucket, "docs/a.txt"), nil, 204},
	} {
		resp := c.Do(t, st.method, st.path, bytes.NewReader(st.body))
		resp.Body.Close()
		if resp.StatusCode != st.want {
			t.Errorf("%s %s: %d, want %d", st.method, st.path, resp.StatusCode, st.want)
		}
	}
	// The same on the S3 API.
	k := testenv.NewS3Key(t, c)
	testenv.MustS3(t, k, srv.S3URL, "PUT", "/"+c.Bucket+"/s3/b.bin", body, 200)
	testenv.MustS3(t, k, srv.S3URL, "HEAD", "/"+c.Bucket+"/s3/b.bin", nil, 200)
	testenv.MustS3(t, k, srv.S3URL, "GET", "/"+c.Bucket+"/s3/b.bin", nil, 200)
	testenv.MustS3(t, k, srv.S3URL, "GET", "/"+c.Bucket+"?list-type=2", nil, 200)
	testenv.MustS3(t, k, srv.S3URL, "DELETE", "/"+c.Bucket+"/s3/b.bin", nil, 204)
	scrape(t, http.DefaultClient, srv.URL, have)

	// A node serving TLS: the certificate's expiry.
	certFile, keyFile, pool := selfSigned(t)
	tlsSrv := testenv.StartTLS(t, pool, "--tls-cert", certFile, "--tls-key", keyFile)
	scrape(t, tlsSrv.HTTPClient(), tlsSrv.URL, have)
	return have
}

// scrape adds the sample names of base's /metrics to have.
func scrape(t *testing.T, hc *http.Client, base string, have map[string]bool) {
	t.Helper()
	resp, err := hc.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if l == "" || l[0] == '#' {
			continue
		}
		if i := strings.IndexAny(l, "{ "); i > 0 {
			have[l[:i]] = true
		}
	}
}

var (
	promString = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	promBraces = regexp.MustCompile(`\{[^{}]*\}`)
	promRange  = regexp.MustCompile(`\[[^\[\]]*\]`)
	promGroup  = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	promOffset = regexp.MustCompile(`\boffset\s+-?[0-9][0-9a-z]*`)
	promToken  = regexp.MustCompile(`[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promWords  = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
		"bool": true, "and": true, "or": true, "unless": true, "offset": true, "inf": true, "nan": true, "Inf": true, "NaN": true}
)

// metricNames returns the metric names a PromQL expression selects: its
// identifiers that are not functions, aggregations, keywords, label
// names, strings or numbers.
func metricNames(expr string) []string {
	e := promString.ReplaceAllString(expr, `""`)
	e = promBraces.ReplaceAllString(e, " ")
	e = promRange.ReplaceAllString(e, " ")
	e = promGroup.ReplaceAllString(e, " ")
	e = promOffset.ReplaceAllString(e, " ")
	var names []string
	for _, loc := range promToken.FindAllStringIndex(e, -1) {
		tok := e[loc[0]:loc[1]]
		if tok[0] >= '0' && tok[0] <= '9' || promWords[tok] {
			continue
		}
		if rest := strings.TrimLeft(e[loc[1]:], " \t\n"); strings.HasPrefix(rest, "(") {
			continue // a function or an aggregation
		}
		if !slices.Contains(names, tok) {
			names = append(names, tok)
		}
	}
	return names
}

func TestMetricNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`sum by (api) (rate(coffer_http_requests_total{code=~"5..",api="s3"}[5m])) / sum(rate(coffer_http_requests_total[5m])) > 0.02`: {"coffer_http_requests_total"},
		`histogram_quantile(0.99, sum by (le) (rate(x_bucket{le="1"}[$__rate_interval])))`:                                             {"x_bucket"},
		`time() - max(a_seconds > 0) and on (instance) b_total offset 5m > 1.5e9`:                                                      {"a_seconds", "b_total"},
		`label_replace(rate(c_total[1m]), "class", "${1}xx", "code", "([0-9])..")`:                                                     {"c_total"},
		`predict_linear(free_bytes[6h], 24 * 3600) < 0 or pressure == 1`:                                                               {"free_bytes", "pressure"},
	} {
		if got := metricNames(expr); !slices.Equal(got, want) {
			t.Errorf("metricNames(%q) = %v, want %v", expr, got, want)
		}
	}
}

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key,
// and returns their paths and a pool trusting it.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "coffer test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(30 * 24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}
