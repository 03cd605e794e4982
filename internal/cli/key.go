package cli

import (
	"path/filepath"

	"github.com/coffer-storage/coffer/internal/server"
)

func serverKey(data string) ([]byte, error) {
	return server.LoadOrCreateKey(filepath.Join(data, "server.key"))
}
