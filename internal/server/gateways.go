package server

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/gateway"
	"github.com/coffer-storage/coffer/internal/httpapi"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Gateway buckets (docs/gateway.md): --gateway specifications become
// bucket records at start (created, or updated if the gateway bucket
// exists); administrators manage more through /api/v1/admin/gateways.
// The backends are opened by the object service on first use
// (gateway.Open), so a backend that is down at start makes its bucket
// answer 503 until it is back, not the server fail.

// gatewayAdmin implements httpapi.GatewayAdmin.
type gatewayAdmin struct {
	accounts meta.Accounts // the owners named by email
	buckets  meta.Buckets
	// check opens a new gateway's backend (reachable, bucket exists).
	check func(ctx context.Context, url string) error
}

var _ httpapi.GatewayAdmin = (*gatewayAdmin)(nil)

// put records the gateway bucket sp describes.
func (g *gatewayAdmin) put(ctx context.Context, sp gateway.Spec) (meta.Bucket, error) {
	owner, err := g.accounts.GetUserByEmail(ctx, auth.NormalizeEmail(sp.Owner))
	if errcode.Is(err, errcode.NotFound) {
		return meta.Bucket{}, &errcode.Error{Code: errcode.InvalidArgument, Message: fmt.Sprintf("gateway %q: owner %q has no account", sp.Name, sp.Owner),
			Detail: map[string]any{"reason": "unknown_owner"}}
	}
	if err != nil {
		return meta.Bucket{}, err
	}
	b := meta.Bucket{Name: sp.Name, OwnerID: owner.ID, Visibility: sp.Visibility(), Gateway: sp.URL()}
	if err := g.buckets.PutGatewayBucket(ctx, b); err != nil {
		return meta.Bucket{}, err
	}
	return g.buckets.GetBucket(ctx, sp.Name)
}

// ListGateways implements httpapi.GatewayAdmin.
func (g *gatewayAdmin) ListGateways(ctx context.Context) ([]meta.Bucket, error) {
	bs, err := g.buckets.ListGatewayBuckets(ctx)
	if bs == nil {
		bs = []meta.Bucket{}
	}
	return bs, err
}

// CreateGateway implements httpapi.GatewayAdmin.
func (g *gatewayAdmin) CreateGateway(ctx context.Context, in httpapi.NewGateway) (meta.Bucket, error) {
	sep := "?"
	if strings.Contains(in.URL, "?") {
		sep = "&"
	}
	raw := in.Name + "=" + in.URL + sep + "owner=" + url.QueryEscape(in.Owner) + "&public=" + strconv.FormatBool(in.Public)
	sp, err := gateway.ParseSpec(raw)
	if err != nil {
		return meta.Bucket{}, &errcode.Error{Code: errcode.InvalidArgument, Message: err.Error(), Detail: map[string]any{"reason": "invalid_gateway"}}
	}
	if g.check != nil {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := g.check(cctx, sp.URL()); err != nil {
			return meta.Bucket{}, &errcode.Error{Code: errcode.InvalidArgument, Message: fmt.Sprintf("gateway %q: cannot reach its bucket: %v", sp.Name, err),
				Detail: map[string]any{"reason": "gateway_unreachable"}}
		}
	}
	return g.put(ctx, sp)
}

// DeleteGateway implements httpapi.GatewayAdmin.
func (g *gatewayAdmin) DeleteGateway(ctx context.Context, name string) error {
	b, err := g.buckets.GetBucket(ctx, name)
	if err == nil && !b.IsGateway() {
		err = errcode.New(errcode.NotFound, "bucket %q is not a gateway bucket", name)
	}
	if err != nil {
		return err
	}
	return g.buckets.DeleteBucket(ctx, name)
}

// registerGateways records the --gateway specifications.
func (g *gatewayAdmin) registerGateways(ctx context.Context, specs []string) error {
	for _, raw := range specs {
		sp, err := gateway.ParseSpec(raw)
		if err != nil {
			return fmt.Errorf("--gateway: %w", err)
		}
		if _, err := g.put(ctx, sp); err != nil {
			return fmt.Errorf("--gateway %s: %w", sp.Name, err)
		}
	}
	return nil
}
