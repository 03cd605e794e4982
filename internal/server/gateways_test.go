package server

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/httpapi"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/sqlite"
)

// TestGatewayAdmin: --gateway specifications and the admin API's bodies
// become gateway bucket records; bad ones change nothing.
func TestGatewayAdmin(t *testing.T) {
	ctx := t.Context()
	m, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "meta.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.CreateUser(ctx, meta.User{ID: "u1", Email: "alice@x.io", CreatedAt: time.Now()}, meta.Bucket{Name: "alice-home", OwnerID: "u1"}); err != nil {
		t.Fatal(err)
	}
	reachable := true
	g := &gatewayAdmin{accounts: m, buckets: m, check: func(context.Context, string) error {
		if !reachable {
			return errors.New("connection refused")
		}
		return nil
	}}

	if err := g.registerGateways(ctx, []string{"photos=s3://bk/pre?endpoint=http://127.0.0.1:9&mode=ro&owner=Alice@X.io&public=true"}); err != nil {
		t.Fatal(err)
	}
	b, err := m.GetBucket(ctx, "photos")
	if err != nil {
		t.Fatal(err)
	}
	if b.OwnerID != "u1" || b.Visibility != meta.PublicRead || b.Gateway != "s3://bk/pre/?endpoint=http%3A%2F%2F127.0.0.1%3A9&mode=ro" {
		t.Errorf("--gateway record: %+v", b)
	}
	for _, tc := range []struct {
		name string
		spec string
		want string
	}{
		{"bad spec", "photos=s3://bk?owner=alice@x.io", "mode"},
		{"unknown owner", "other=s3://bk?mode=ro&owner=nobody@x.io", "no account"},
		{"over a native bucket", "alice-home=s3://bk?mode=ro&owner=alice@x.io", "not a gateway"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := g.registerGateways(ctx, []string{tc.spec})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("registerGateways(%q): %v; want an error about %q", tc.spec, err, tc.want)
			}
		})
	}
	if b, _ := m.GetBucket(ctx, "alice-home"); b.IsGateway() {
		t.Error("the native bucket became a gateway")
	}

	// The admin API.
	nb, err := g.CreateGateway(ctx, httpapi.NewGateway{Name: "drop", URL: "s3://up?mode=rw", Owner: "alice@x.io"})
	if err != nil || nb.Gateway != "s3://up?mode=rw" || nb.Visibility != meta.Private {
		t.Errorf("CreateGateway: %+v, %v", nb, err)
	}
	for _, tc := range []struct {
		name   string
		in     httpapi.NewGateway
		code   errcode.Code
		reason string
	}{
		{"secret in URL", httpapi.NewGateway{Name: "gwone", URL: "s3://up?mode=rw&secret_key=x", Owner: "alice@x.io"}, errcode.InvalidArgument, "invalid_gateway"},
		{"owner in URL", httpapi.NewGateway{Name: "gwone", URL: "s3://up?mode=rw&owner=alice@x.io", Owner: "alice@x.io"}, errcode.InvalidArgument, "invalid_gateway"},
		{"unknown owner", httpapi.NewGateway{Name: "gwone", URL: "s3://up?mode=rw", Owner: "bob@x.io"}, errcode.InvalidArgument, "unknown_owner"},
		{"native name", httpapi.NewGateway{Name: "alice-home", URL: "s3://up?mode=rw", Owner: "alice@x.io"}, errcode.Conflict, "not_a_gateway"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := g.CreateGateway(ctx, tc.in)
			if e := errcode.As(err); e == nil || e.Code != tc.code || e.Detail["reason"] != tc.reason {
				t.Errorf("CreateGateway: %v; want %v %s", err, tc.code, tc.reason)
			}
		})
	}
	reachable = false
	_, err = g.CreateGateway(ctx, httpapi.NewGateway{Name: "down", URL: "s3://up?mode=rw", Owner: "alice@x.io"})
	if e := errcode.As(err); e == nil || e.Detail["reason"] != "gateway_unreachable" {
		t.Errorf("CreateGateway of an unreachable backend: %v", err)
	}
	gs, err := g.ListGateways(ctx)
	if err != nil || len(gs) != 2 || gs[0].Name != "drop" || gs[1].Name != "photos" {
		t.Errorf("ListGateways: %+v, %v", gs, err)
	}
	if err := g.DeleteGateway(ctx, "alice-home"); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("DeleteGateway of a native bucket: %v; want NotFound", err)
	}
	if err := g.DeleteGateway(ctx, "drop"); err != nil {
		t.Errorf("DeleteGateway: %v", err)
	}
	if _, err := m.GetBucket(ctx, "drop"); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("after DeleteGateway: %v", err)
	}
}
