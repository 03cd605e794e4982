package server

import (
	"context"
	"sync"
	"time"

	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/ratelimit"
)

// overrideTTL is how long a node keeps a user's rate limit override (an
// administrator's change takes effect within it on every node).
const overrideTTL = 10 * time.Second

// newQuotas builds the token-bucket quotas of the config, with per-user
// overrides read from ms (cached for overrideTTL); nil if no quota is set.
func newQuotas(cfg config.Config, ms meta.Limits) *ratelimit.Quotas {
	q := func(r config.Rate, mib bool) ratelimit.Quota {
		n := int64(r.N)
		if mib {
			n <<= 20
		}
		return ratelimit.Quota{N: n, Window: r.Per}
	}
	d := map[ratelimit.Dimension]ratelimit.DimQuotas{
		ratelimit.DimUser:  {Requests: q(cfg.RateUser, false), Bytes: q(cfg.RateUserMiB, true)},
		ratelimit.DimKey:   {Requests: q(cfg.RateKey, false), Bytes: q(cfg.RateKeyMiB, true)},
		ratelimit.DimShare: {Requests: q(cfg.RateShare, false), Bytes: q(cfg.RateShareMiB, true)},
		ratelimit.DimAddr:  {Requests: q(cfg.RateAnonymous, false), Bytes: q(cfg.RateAnonymousMiB, true)},
	}
	if d[ratelimit.DimUser].Requests.Off() && d[ratelimit.DimUser].Bytes.Off() &&
		d[ratelimit.DimKey].Requests.Off() && d[ratelimit.DimKey].Bytes.Off() &&
		d[ratelimit.DimShare].Requests.Off() && d[ratelimit.DimShare].Bytes.Off() &&
		d[ratelimit.DimAddr].Requests.Off() && d[ratelimit.DimAddr].Bytes.Off() {
		return nil
	}
	qs := ratelimit.NewQuotas(d)
	oc := &overrides{ms: ms, def: d[ratelimit.DimUser], m: map[string]override{}}
	qs.Override = oc.lookup
	return qs
}

type override struct {
	q       ratelimit.DimQuotas
	ok      bool
	fetched time.Time
}

type overrides struct {
	ms  meta.Limits
	def ratelimit.DimQuotas
	mu  sync.Mutex
	m   map[string]override
}

func (o *overrides) lookup(d ratelimit.Dimension, key string) (ratelimit.DimQuotas, bool) {
	if d != ratelimit.DimUser {
		return ratelimit.DimQuotas{}, false
	}
	now := time.Now()
	o.mu.Lock()
	e, hit := o.m[key]
	o.mu.Unlock()
	if hit && now.Sub(e.fetched) < overrideTTL {
		return e.q, e.ok
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	l, err := o.ms.GetUserLimits(ctx, key)
	cancel()
	e = override{fetched: now}
	if err == nil {
		e.ok, e.q = true, o.def
		if l.Requests > 0 {
			e.q.Requests = ratelimit.Quota{N: l.Requests, Window: l.Window}
		}
		if l.Bytes > 0 {
			e.q.Bytes = ratelimit.Quota{N: l.Bytes, Window: l.Window}
		}
	} else if hit {
		// The store is unreachable: keep what we had a little longer.
		e = override{q: e.q, ok: e.ok, fetched: now}
	}
	o.mu.Lock()
	if len(o.m) > 100_000 {
		clear(o.m)
	}
	o.m[key] = e
	o.mu.Unlock()
	return e.q, e.ok
}
