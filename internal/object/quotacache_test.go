package object

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// countingAccounts counts the reads of a user row.
type countingAccounts struct {
	meta.Accounts
	gets atomic.Int64
}

func (c *countingAccounts) GetUser(ctx context.Context, id string) (meta.User, error) {
	c.gets.Add(1)
	return c.Accounts.GetUser(ctx, id)
}

// TestSmallPutUnlimitedOwner: a small (inline) upload to the bucket of an
// owner the account cache knows to have no quota reads no user row before
// its body (Config.Unlimited); once a quota is set through the account
// service, the next upload fails fast again, before reading its body.
func TestSmallPutUnlimitedOwner(t *testing.T) {
	var counting *countingAccounts
	f := newFixtureOver(t, 0, func(m meta.Stores) meta.Stores {
		counting = &countingAccounts{Accounts: m.Accounts}
		m.Accounts = counting
		return m
	})
	users := auth.NewService(auth.StoresOf(meta.Stores{Accounts: counting}), nil, auth.ConfigFrom(config.Defaults())).Users
	f.svc = New(f.meta, f.blobs, testConfig(func(c *Config) { c.GarbageGrace, c.Unlimited = time.Nanosecond, users.Unlimited }), nil)
	ctx := t.Context()
	if _, err := f.put(t, f.alice, "alice-bucket", "a", "first"); err != nil { // loads the cache
		t.Fatal(err)
	}
	before := counting.gets.Load()
	for _, k := range []string{"b", "c", "a"} {
		if _, err := f.put(t, f.alice, "alice-bucket", k, "123456"); err != nil {
			t.Fatal(err)
		}
	}
	if n := counting.gets.Load() - before; n != 0 {
		t.Errorf("3 small uploads of an owner without quota read the user row %d times, want 0", n)
	}
	if _, err := users.SetQuota(ctx, "alice", 14); err != nil { // 12 bytes used
		t.Fatal(err)
	}
	body := &countingReader{r: strings.NewReader("ABCDEF")}
	_, err := f.svc.Put(ctx, f.alice, PutInput{Bucket: "alice-bucket", Key: "d", Body: body, Size: 6})
	if !errcode.Is(err, errcode.QuotaExceeded) || body.n != 0 {
		t.Errorf("6 bytes over a quota just set: %v after %d bytes read, want QuotaExceeded before the body", err, body.n)
	}
}
