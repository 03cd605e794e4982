package objectfake

import (
	"context"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
)

// Object lock, as the service has it: a bucket made by
// CreateLockedBucket has object lock (and versioning Enabled); the lock
// decisions are meta's own functions (CheckRetentionChange,
// CheckUnlocked) at Now.

// CreateLockedBucket is CreateBucket of a bucket with object lock.
func (f *Service) CreateLockedBucket(ctx context.Context, a object.Actor, name string, v meta.Visibility) (meta.Bucket, error) {
	b, err := f.CreateBucket(ctx, a, name, v)
	if err != nil {
		return b, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b.ObjectLock.Enabled, b.Versioning = true, meta.VersioningEnabled
	f.Buckets[name] = b
	return b, nil
}

// GetObjectLock returns the lock state of a bucket a owns.
func (f *Service) GetObjectLock(_ context.Context, a object.Actor, name string) (meta.ObjectLock, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.authorize(a, name, true)
	return b.ObjectLock, err
}

// SetObjectLock sets the default retention of a bucket with object lock.
func (f *Service) SetObjectLock(_ context.Context, a object.Actor, name string, d meta.DefaultRetention) (meta.Bucket, error) {
	if err := meta.CheckDefaultRetention(d); err != nil {
		return meta.Bucket{}, err
	}
	f.mu.Lock()
	b, err := f.authorize(a, name, true)
	f.mu.Unlock()
	if err == nil && !b.ObjectLock.Enabled {
		err = meta.ErrLockNotEnabled(name)
	}
	if err != nil {
		return meta.Bucket{}, err
	}
	return f.setBucket(a, name, "SetObjectLock", func(b *meta.Bucket) { b.ObjectLock.Default = d })
}

// locked finds the version a lock operation of a names, in a bucket with
// object lock.
func (f *Service) locked(a object.Actor, bucket, key, versionID string) (Object, error) {
	b, err := f.authorize(a, bucket, true)
	if err != nil {
		return Object{}, err
	}
	if !b.ObjectLock.Enabled {
		return Object{}, meta.ErrLockNotEnabled(bucket)
	}
	return f.find(bucket, key, versionID)
}

// GetLock returns the version with its lock.
func (f *Service) GetLock(_ context.Context, a object.Actor, bucket, key, versionID string) (meta.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, err := f.locked(a, bucket, key, versionID)
	return o.Object, err
}

// SetRetention sets the version's retention as meta.CheckRetentionChange
// allows.
func (f *Service) SetRetention(_ context.Context, a object.Actor, bucket, key, versionID string, r meta.Retention, bypass bool) (meta.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.Fail["SetRetention"]; err != nil {
		return meta.Object{}, err
	}
	o, err := f.locked(a, bucket, key, versionID)
	if err != nil {
		return meta.Object{}, err
	}
	if r.Mode != "" && !r.Until.After(f.Now) {
		return meta.Object{}, object.ErrRetentionPast()
	}
	if err := meta.CheckRetentionChange(o.Object, r, bypass, f.Now); err != nil {
		return meta.Object{}, err
	}
	f.wrote("SetRetention " + bucket + "/" + key + " " + versionID)
	return f.update(o, func(o *meta.Object) { o.Retention = r }), nil
}

// SetLegalHold sets or clears the version's legal hold.
func (f *Service) SetLegalHold(_ context.Context, a object.Actor, bucket, key, versionID string, on bool) (meta.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, err := f.locked(a, bucket, key, versionID)
	if err != nil {
		return meta.Object{}, err
	}
	f.wrote("SetLegalHold " + bucket + "/" + key + " " + versionID)
	return f.update(o, func(o *meta.Object) { o.LegalHold = on }), nil
}

// update changes version o of its key in place, wherever it is kept, and
// returns it changed.
func (f *Service) update(o Object, change func(*meta.Object)) meta.Object {
	k := o.Bucket + "/" + o.Key
	if cur, ok := f.Objects[k]; ok && cur.VersionID == o.VersionID {
		change(&cur.Object)
		f.Objects[k] = cur
	}
	for i, v := range f.Versions[k] {
		if v.VersionID == o.VersionID {
			change(&f.Versions[k][i].Object)
		}
	}
	change(&o.Object)
	return o.Object
}
