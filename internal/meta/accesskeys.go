package meta

import (
	"context"
	"time"
)

// AccessKeys keeps the users' S3 credentials.
type AccessKeys interface {
	// CreateAccessKey stores k. NotFound if the user does not exist;
	// AlreadyExists if the ID is taken.
	CreateAccessKey(ctx context.Context, k AccessKey) error
	// GetAccessKey returns the key with id; NotFound if none.
	GetAccessKey(ctx context.Context, id string) (AccessKey, error)
	// ListAccessKeys returns the user's keys (internal ones included),
	// oldest first.
	ListAccessKeys(ctx context.Context, userID string) ([]AccessKey, error)
	// DeleteAccessKey deletes the user's key id; NotFound if the user has
	// no such key (another user's key is NotFound too).
	DeleteAccessKey(ctx context.Context, userID, id string) error
	// TouchAccessKey sets the key's LastUsed to t (NotFound if missing).
	TouchAccessKey(ctx context.Context, id string, t time.Time) error
}
