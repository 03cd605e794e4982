package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// GatewayAdmin manages gateway buckets (docs/gateway.md) for
// /api/v1/admin/gateways; server implements it.
type GatewayAdmin interface {
	// ListGateways lists every gateway bucket.
	ListGateways(ctx context.Context) ([]meta.Bucket, error)
	// CreateGateway creates (or updates) the gateway bucket g describes:
	// InvalidArgument for a bad URL or owner, Conflict if a native bucket
	// has the name.
	CreateGateway(ctx context.Context, g NewGateway) (meta.Bucket, error)
	// DeleteGateway removes a gateway bucket (the backend's objects stay);
	// NotFound if no gateway bucket has the name.
	DeleteGateway(ctx context.Context, name string) error
}

// NewGateway is the body of POST /api/v1/admin/gateways.
type NewGateway struct {
	Name   string `json:"name"`
	URL    string `json:"url"`   // s3://BUCKET[/PREFIX]?endpoint=…&region=…&mode=ro|rw[&credentials_file=…]
	Owner  string `json:"owner"` // the owner's email
	Public bool   `json:"public"`
}

type gatewayJSON struct {
	Name       string    `json:"name"`
	URL        string    `json:"url"`
	OwnerID    string    `json:"owner_id"`
	Visibility string    `json:"visibility"`
	CreatedAt  time.Time `json:"created_at"`
}

func toGatewayJSON(b meta.Bucket) gatewayJSON {
	return gatewayJSON{Name: b.Name, URL: b.Gateway, OwnerID: b.OwnerID, Visibility: string(b.Visibility), CreatedAt: b.CreatedAt}
}

// gatewayHandlers are the administrators' routes of gateway buckets
// (/api/v1/admin/gateways).
type gatewayHandlers struct {
	jsonDecoder
	gateways GatewayAdmin // Config.Gateways; nil: 501
}

func (h *gatewayHandlers) enabled() (GatewayAdmin, error) {
	if h.gateways == nil {
		return nil, errcode.New(errcode.NotImplemented, "gateway buckets are not available on this server")
	}
	return h.gateways, nil
}

func (h *gatewayHandlers) adminListGateways(r *http.Request, _ auth.Principal) (response, error) {
	g, err := h.enabled()
	if err != nil {
		return nil, err
	}
	bs, err := g.ListGateways(r.Context())
	if err != nil {
		return nil, err
	}
	out := make([]gatewayJSON, len(bs))
	for i, b := range bs {
		out[i] = toGatewayJSON(b)
	}
	return ok(map[string]any{"gateways": out}), nil
}

func (h *gatewayHandlers) adminCreateGateway(r *http.Request, _ auth.Principal) (response, error) {
	g, err := h.enabled()
	if err != nil {
		return nil, err
	}
	var body NewGateway
	if err := h.decodeJSON(r, &body); err != nil {
		return nil, err
	}
	b, err := g.CreateGateway(r.Context(), body)
	if err != nil {
		return nil, err
	}
	return created(toGatewayJSON(b)), nil
}

func (h *gatewayHandlers) adminDeleteGateway(r *http.Request, _ auth.Principal) (response, error) {
	g, err := h.enabled()
	if err != nil {
		return nil, err
	}
	if err := g.DeleteGateway(r.Context(), r.PathValue("name")); err != nil {
		return nil, err
	}
	return noContent{}, nil
}
