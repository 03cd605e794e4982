package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// doer sends one request: a caller (no retries, counted during the run)
// or a retrier (setup and audit: retried after load shedding and
// transient network errors, never counted).
type doer interface {
	do(ctx context.Context, rq *request) (*response, error)
}

// retrier retries requests the server shed (429/503, honouring
// Retry-After) and transient connection failures.
type retrier struct {
	c       *caller
	retries *atomic.Int64
	// attempts bounds the tries of one request (default 8); shed answers
	// are retried until the context ends.
	attempts int
}

const maxRetryWait = 10 * time.Second

// maxShedWait is the longest Retry-After a retrier treats as load
// shedding; a longer one is a limit (such as the server's per-address
// signup limit), and waiting for it would stall the run: it fails.
const maxShedWait = time.Minute

func (r *retrier) do(ctx context.Context, rq *request) (*response, error) {
	attempts := r.attempts
	if attempts == 0 {
		attempts = 8
	}
	backoff := 100 * time.Millisecond
	for try := 1; ; try++ {
		resp, err := r.c.do(ctx, rq)
		var re *reqError
		if err == nil || !errors.As(err, &re) {
			return resp, err
		}
		var wait time.Duration
		switch {
		case re.outcome == outcomeShed && re.retryAfter > maxShedWait:
			return resp, err
		case re.outcome == outcomeShed:
			wait = re.retryAfter
			if wait <= 0 {
				wait = time.Second
			}
			try = min(try, attempts-1) // shedding is not a failure: keep trying
		case re.class == classRefused || re.class == classReset || re.class == classClosed || re.class == classTimeout ||
			re.status >= 500:
			wait = backoff
			backoff = min(2*backoff, 5*time.Second)
		default:
			return resp, err
		}
		if try >= attempts {
			return resp, err
		}
		if r.retries != nil {
			r.retries.Add(1)
		}
		// Jitter spreads the retries of many parallel setup workers.
		wait = min(wait, maxRetryWait) + rand.N(wait/4+time.Millisecond)
		select {
		case <-ctx.Done():
			return resp, err
		case <-time.After(wait):
		}
	}
}

// user is an account created by the setup.
type user struct {
	email, password string
	bucket          string   // its default bucket, set once the signup succeeded
	sess            *session // a session of the user for the cleanup (nil: log in then)
}

// session is one login of a user, held by one VU. A refresh token can be
// used once: presenting a used one revokes the whole login, so a session
// is never shared between VUs and always keeps the newest token.
type session struct {
	base string // the file API's URL
	u    *user

	mu      sync.Mutex
	access  string
	refresh string
	expires time.Time
	stale   bool // the refresh token's state is unknown: log in again
}

type tokenPair struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	ExpiresIn    int    `json:"expires_in"`
}

// createAccount creates u's account and notes its default bucket: through
// the admin API when adminToken (an administrator's access token) is set,
// else by signing up as anyone may, which the server limits per client
// address (--signup-rate, 5 an hour by default).
func createAccount(ctx context.Context, d doer, base, adminToken string, u *user) error {
	body, n := jsonBody(map[string]string{"email": u.email, "password": u.password})
	rq := &request{name: "signup", method: http.MethodPost, url: base + "/api/v1/auth/signup",
		header: jsonHeader(), body: body, bodyLen: n, expect: http.StatusCreated, capture: 64 << 10}
	if adminToken != "" {
		rq.name, rq.url = "create-user", base+"/api/v1/admin/users"
		rq.header.Set("Authorization", "Bearer "+adminToken)
	}
	resp, err := d.do(ctx, rq)
	var re *reqError
	switch {
	case err == nil:
	case adminToken != "" && errors.As(err, &re) && re.status == http.StatusUnauthorized:
		return fmt.Errorf("%w: the server refused --admin-token (an access token lasts 15 minutes: log in again for a fresh one)", err)
	case adminToken != "" && errors.As(err, &re) && re.status == http.StatusForbidden:
		return fmt.Errorf("%w: --admin-token is not an administrator's", err)
	case errors.As(err, &re) && re.status == http.StatusTooManyRequests:
		return fmt.Errorf("%w: the server limits signups per client address (--signup-rate, 5 an hour by default); "+
			"give an administrator's access token with --admin-token (COFFER_BENCH_ADMIN_TOKEN) to create the accounts through the admin API, "+
			"or start the server with --signup-rate 0 (COFFER_SIGNUP_RATE=0)", err)
	case errors.As(err, &re) && re.status == http.StatusForbidden:
		return fmt.Errorf("%w: the server does not let anyone sign up; give an administrator's access token with --admin-token, "+
			"or start the server with --signup open", err)
	default:
		return err
	}
	var out struct {
		Bucket struct {
			Name string `json:"name"`
		} `json:"bucket"`
	}
	if err := json.Unmarshal(resp.body, &out); err != nil || out.Bucket.Name == "" {
		return fmt.Errorf("creating the account %s: answer without a bucket: %.200q", u.email, resp.body)
	}
	u.bucket = out.Bucket.Name
	return nil
}

func jsonHeader() http.Header { return http.Header{"Content-Type": {"application/json"}} }

// login signs the session in with the user's password.
func (s *session) login(ctx context.Context, d doer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loginLocked(ctx, d)
}

func (s *session) loginLocked(ctx context.Context, d doer) error {
	body, n := jsonBody(map[string]string{"email": s.u.email, "password": s.u.password})
	resp, err := d.do(ctx, &request{name: "login", method: http.MethodPost, url: s.base + "/api/v1/auth/login",
		header: jsonHeader(), body: body, bodyLen: n, expect: http.StatusOK, capture: 64 << 10})
	if err != nil {
		return err
	}
	return s.store(resp.body)
}

func (s *session) store(b []byte) error {
	var tp tokenPair
	if err := json.Unmarshal(b, &tp); err != nil || tp.AccessToken == "" || tp.RefreshToken == "" {
		s.stale = true
		return fmt.Errorf("token answer without tokens: %.200q", b)
	}
	if tp.ExpiresIn <= 0 {
		tp.ExpiresIn = 900
	}
	s.access, s.refresh, s.stale = tp.AccessToken, tp.RefreshToken, false
	s.expires = time.Now().Add(time.Duration(tp.ExpiresIn) * time.Second)
	return nil
}

// rotate exchanges the refresh token for a new pair, as a client does to
// keep a session alive. When the outcome is unknown (timeout, 5xx) the
// old token may be used up already, and reusing it would revoke the
// login, so the next rotate logs in again instead.
func (s *session) rotate(ctx context.Context, d doer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stale || s.refresh == "" {
		return s.loginLocked(ctx, d)
	}
	body, n := jsonBody(map[string]string{"refresh_token": s.refresh})
	resp, err := d.do(ctx, &request{name: "refresh", method: http.MethodPost, url: s.base + "/api/v1/auth/refresh",
		header: jsonHeader(), body: body, bodyLen: n, expect: http.StatusOK, capture: 64 << 10})
	if err != nil {
		var re *reqError
		if errors.As(err, &re) && (re.outcome == outcomeShed || re.status == http.StatusUnauthorized) {
			// Shed before it was handled, or refused: the token state is known.
			s.stale = re.status == http.StatusUnauthorized
			return err
		}
		s.stale = true
		return err
	}
	return s.store(resp.body)
}

// bearer returns the Authorization header value, rotating the tokens
// first if the access token expires within a minute.
func (s *session) bearer(ctx context.Context, d doer) (string, error) {
	s.mu.Lock()
	fresh := !s.stale && s.access != "" && time.Until(s.expires) > time.Minute
	tok := s.access
	s.mu.Unlock()
	if fresh {
		return "Bearer " + tok, nil
	}
	if err := s.rotate(ctx, d); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return "Bearer " + s.access, nil
}

// createKey creates an S3 access key for the session's user.
func (s *session) createKey(ctx context.Context, d doer) (id, secret string, err error) {
	auth, err := s.bearer(ctx, d)
	if err != nil {
		return "", "", err
	}
	body, n := jsonBody(map[string]string{"name": "coffer bench"})
	h := jsonHeader()
	h.Set("Authorization", auth)
	resp, err := d.do(ctx, &request{name: "create-key", method: http.MethodPost, url: s.base + "/api/v1/keys",
		header: h, body: body, bodyLen: n, expect: http.StatusCreated, capture: 64 << 10})
	if err != nil {
		return "", "", err
	}
	var k struct {
		ID     string `json:"access_key_id"`
		Secret string `json:"secret_access_key"`
	}
	if err := json.Unmarshal(resp.body, &k); err != nil || k.ID == "" || k.Secret == "" {
		return "", "", fmt.Errorf("key answer without a key: %.200q", resp.body)
	}
	return k.ID, k.Secret, nil
}
