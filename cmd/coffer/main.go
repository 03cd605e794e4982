// Command coffer is a self-hosted file and object storage server.
package main

import (
	// First, so that its init maps the executable's pages one at a time
	// before the other packages' inits touch them (see the package doc).
	_ "github.com/coffer-storage/coffer/internal/exemap"

	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/coffer-storage/coffer/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], cli.Env{Stdout: os.Stdout, Stderr: os.Stderr})
	stop()
	os.Exit(code)
}
