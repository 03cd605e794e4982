package cli

import (
	"context"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/server"
)

type serveCmd struct{ env Env }

func (*serveCmd) Synopsis() string {
	return "run the server (defaults: ./coffer-data, 127.0.0.1:8080, SQLite + local disk)"
}

func (c *serveCmd) Run(ctx context.Context, args []string) error {
	cfg := config.Defaults()
	fs := cfg.FlagSet("coffer serve")
	routeHelp(fs, c.env)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{errorf("unexpected arguments: %v", fs.Args())}
	}
	if err := config.ApplyEnv(fs, c.env.Getenv); err != nil {
		return usageError{err}
	}
	if err := cfg.Validate(); err != nil {
		return usageError{err}
	}
	if err := cfg.ResolvePaths(); err != nil {
		return usageError{err}
	}
	restrictUmask()
	if cfg.DebugListen == "" {
		// No heap profile can be asked for: sample no allocations. Each
		// sampled allocation site adds a bucket, hashed into a 1.45 MB
		// table whose pages a burst of requests touches at random
		// (docs/PERFORMANCE.md, "Issue 23, third pass: idle RSS").
		runtime.MemProfileRate = 0
	}
	cfg.LogFormat = logFormat(cfg.LogFormat, c.env.Stderr)
	log := newLogger(c.env.Stderr, cfg.LogLevel, cfg.LogFormat)
	srv, err := server.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	if srv.TLS() {
		// SIGHUP re-reads the certificate (without TLS it keeps its
		// default meaning and ends the process).
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		go func() {
			for {
				select {
				case <-hup:
					srv.ReloadTLS() // logs the outcome
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	return srv.Run(ctx, c.env.Stdout)
}
