package server

import (
	"context"
	"log/slog"

	"github.com/coffer-storage/coffer/internal/audit"
	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/httpx"
)

// openAudit starts the audit log of --audit-log and --audit-webhook (nil
// when neither is set: off, and every service's call is a no-op).
func openAudit(cfg config.Config, log *slog.Logger) (*audit.Logger, error) {
	l, err := audit.New(audit.Options{
		File: cfg.AuditLog, MaxSize: cfg.AuditLogMaxSize, MaxFiles: cfg.AuditLogMaxFiles,
		Webhook: cfg.AuditWebhook, Ring: cfg.AuditRecent,
		Origin: auditOrigin, Log: log,
	})
	if err != nil {
		return nil, err
	}
	if l != nil {
		log.Info("audit log on", "file", cfg.AuditLog, "webhook", cfg.AuditWebhook != "")
	}
	return l, nil
}

// auditOrigin is what the guard and the APIs recorded of the request ctx
// belongs to: its ID, its client address, and the user and key the API
// authenticated (httpx.Slot).
func auditOrigin(ctx context.Context) audit.Origin {
	o := audit.Origin{RequestID: httpx.RequestID(ctx)}
	if sl := httpx.SlotOf(ctx); sl != nil {
		o.Client, o.UserID, o.KeyID, o.Admin = sl.Client, sl.User, sl.Key, sl.Admin
	}
	return o
}

// auditMetrics exports the audit log's counters (0 while it is off):
// coffer_audit_events_total{outcome} and coffer_audit_dropped_total.
func (s *Server) auditMetrics() {
	for i, o := range audit.Outcomes {
		s.metrics.CounterFunc("coffer_audit_events_total", "Audit events recorded, by outcome of the action.",
			func() float64 { ev, _ := s.audit.Stats(); return float64(ev[i]) }, "outcome", string(o))
	}
	s.metrics.CounterFunc("coffer_audit_dropped_total", "Audit events lost: the queue was full, the file could not be written, or the webhook gave up.",
		func() float64 { _, d := s.audit.Stats(); return float64(d) })
}
