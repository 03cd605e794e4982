package auth

import (
	"runtime"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/config"
)

// TestDefaultConfig: the account service's defaults come from
// config.Defaults() alone (the values it always had); NewService and the
// login guard take their configuration as given, zeros included.
func TestDefaultConfig(t *testing.T) {
	got := ConfigFrom(config.Defaults())
	want := Config{
		AccessTTL: 15 * time.Minute, RefreshTTL: 30 * 24 * time.Hour,
		Logins: LoginLimits{PerPair: 10, PerAddress: 100, Window: 15 * time.Minute, PerAccount: 1000, AccountWindow: time.Hour,
			BackoffBase: time.Second, BackoffMax: time.Minute, KnownFor: 30 * 24 * time.Hour},
		Signup: SignupOpen, SignupLimit: 5, SignupWindow: time.Hour,
		Params: Params{Memory: 19456, Time: 2},
		Pool:   PoolConfig{Slots: max(1, runtime.GOMAXPROCS(0)/2), MaxQueue: 64, MaxWait: 2 * time.Second},
	}
	if got != want {
		t.Errorf("ConfigFrom(config.Defaults()):\n got %+v\nwant %+v", got, want)
	}

	// --signup-rate 0 (unlimited) is SignupLimit 0: no throttle.
	off := config.Defaults()
	off.SignupRate = config.Rate{}
	if c := ConfigFrom(off); c.SignupLimit != 0 {
		t.Errorf("--signup-rate 0: SignupLimit %d, want 0 (unlimited)", c.SignupLimit)
	}
	s, _ := newTestService(t, func(c *Config) { c.AccessTTL, c.RefreshTTL, c.SignupLimit, c.Signup = 0, 0, 0, "" })
	if c := s.core; c.cfg.AccessTTL != 0 || c.cfg.RefreshTTL != 0 || c.cfg.Signup != "" || s.Signups.signups != nil || c.tokens.ttl != 0 {
		t.Errorf("NewService defaulted a zero value: %+v (signups %v, token TTL %v)", c.cfg, s.Signups.signups, c.tokens.ttl)
	}
	if g := newLoginGuard(LoginLimits{}, nil); g.pair.Limit != 0 || g.addr.Limit != 0 || g.pair.Window != 0 || g.known.ttl != 0 {
		t.Errorf("the login guard defaulted zero limits: %+v %+v", g.pair, g.known)
	}
	h := NewHasher(Params{Memory: 8 * 1024, Time: 1}, PoolConfig{Slots: 3})
	if h.cfg.Slots != 3 || h.cfg.MaxQueue != 0 || h.cfg.MaxWait != 0 || h.params.Threads != 1 || h.params.SaltLen != 16 || h.params.KeyLen != 32 {
		t.Errorf("NewHasher: %+v %+v; want the pool as given, the hash's shape defaulted", h.cfg, h.params)
	}
}
