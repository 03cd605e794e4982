package memblob_test

import (
	"testing"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/blob/blobtest"
	"github.com/coffer-storage/coffer/internal/blob/memblob"
)

func TestConformance(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store { return memblob.New() })
}
