package e2e

import (
	"testing"

	"github.com/coffer-storage/coffer/internal/testbackend"
)

// TestMain stops the PostgreSQL and MinIO servers the scale-out runs
// (COFFER_E2E_BACKEND=scaleout) started.
func TestMain(m *testing.M) { testbackend.Main(m) }
