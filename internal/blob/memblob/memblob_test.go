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

func TestLargeStreamed(t *testing.T) {
	if testing.Short() {
		t.Skip("256 MiB object skipped in -short mode")
	}
	blobtest.RunLarge(t, memblob.New())
}
