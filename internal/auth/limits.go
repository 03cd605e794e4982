package auth

import (
	"context"

	"github.com/coffer-storage/coffer/internal/audit"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// SetLimits stores an administrator's rate limit override for user l.UserID
// (Requests and Bytes both 0: back to the server's defaults). NotFound if
// there is no such user.
func (s *Users) SetLimits(ctx context.Context, l meta.UserLimits) (err error) {
	defer func() { s.audit(ctx, audit.Event{Action: audit.UserLimits, Target: audit.Target{User: l.UserID}}, err) }()
	if _, err := s.meta.GetUser(ctx, l.UserID); err != nil {
		return err
	}
	return s.meta.SetUserLimits(ctx, l)
}

// Limits returns the override of user id, if any (ok false: the
// defaults). NotFound if there is no such user.
func (s *Users) Limits(ctx context.Context, id string) (meta.UserLimits, bool, error) {
	if _, err := s.meta.GetUser(ctx, id); err != nil {
		return meta.UserLimits{}, false, err
	}
	l, err := s.meta.GetUserLimits(ctx, id)
	if errcode.Is(err, errcode.NotFound) {
		return meta.UserLimits{UserID: id}, false, nil
	}
	return l, err == nil, err
}
