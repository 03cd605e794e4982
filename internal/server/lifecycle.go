package server

import (
	"github.com/coffer-storage/coffer/internal/metrics"
	"github.com/coffer-storage/coffer/internal/object"
)

// registerLifecycleMetrics exports the lifecycle worker's counters of
// this node (docs/lifecycle.md#metrics).
func registerLifecycleMetrics(m *metrics.Metrics, st *object.LifecycleStats) {
	m.CounterFunc("coffer_lifecycle_expired_objects_total", "Current versions this node expired by lifecycle rules (a delete marker written, or removed in a bucket never versioned).",
		func() float64 { return float64(st.Expired.Load()) })
	m.CounterFunc("coffer_lifecycle_removed_versions_total", "Noncurrent versions this node removed by lifecycle rules (NoncurrentVersionExpiration).",
		func() float64 { return float64(st.VersionsRemoved.Load()) })
	m.CounterFunc("coffer_lifecycle_removed_markers_total", "Expired object delete markers this node removed by lifecycle rules.",
		func() float64 { return float64(st.MarkersRemoved.Load()) })
	m.CounterFunc("coffer_lifecycle_aborted_uploads_total", "Multipart uploads this node aborted by lifecycle rules (AbortIncompleteMultipartUpload).",
		func() float64 { return float64(st.UploadsAborted.Load()) })
	for reason, c := range map[string]interface{ Load() int64 }{
		"locked": &st.SkippedLocked, "changed": &st.SkippedChanged, "gone": &st.SkippedGone, "error": &st.SkippedError,
	} {
		m.CounterFunc("coffer_lifecycle_skipped_total", "Deletes lifecycle decided and did not make, by reason: locked (object lock), changed (the version or the rules changed since the decision), gone (deleted meanwhile), error (logged).",
			func() float64 { return float64(c.Load()) }, "reason", reason)
	}
	m.GaugeFunc("coffer_lifecycle_last_run_seconds", "Duration of the last lifecycle run this node finished (0: none).",
		st.LastRun)
	m.GaugeFunc("coffer_lifecycle_last_success_timestamp_seconds", "When the last lifecycle run this node finished ended (Unix seconds; 0: none).",
		func() float64 { return float64(st.LastSuccess.Load()) })
	m.GaugeFunc("coffer_lifecycle_running", "1 while this node works on a lifecycle run.",
		func() float64 { return float64(st.Running.Load()) })
}
