package server

import (
	"github.com/coffer-storage/coffer/internal/metrics"
	"github.com/coffer-storage/coffer/internal/object"
)

// registerIntegrityMetrics exports this node's counters of damaged reads
// and of its scrub work (docs/operations.md#integrity-of-stored-bytes).
func registerIntegrityMetrics(m *metrics.Metrics, rs *object.ReadStats, ss *object.ScrubStats) {
	m.CounterFunc("coffer_blob_corrupt_reads_total", "Reads on this node that found a blob whose size or checksum differs from its record (refused; the response cut; listed by coffer fsck).",
		func() float64 { return float64(rs.Corrupt.Load()) })
	m.CounterFunc("coffer_blob_failed_reads_total", "Reads on this node the blob store failed (an I/O error) after the object was found (listed by coffer fsck).",
		func() float64 { return float64(rs.Failed.Load()) })
	m.CounterFunc("coffer_scrub_objects_total", "Object versions this node's scrub checked.",
		func() float64 { return float64(ss.Objects.Load()) })
	m.CounterFunc("coffer_scrub_bytes_total", "Bytes this node's scrub read and checked.",
		func() float64 { return float64(ss.Bytes.Load()) })
	for problem, c := range map[string]interface{ Load() int64 }{
		"missing": &ss.Missing, "corrupt": &ss.Corrupt, "unreadable": &ss.Unreadable,
	} {
		m.CounterFunc("coffer_scrub_bad_blobs_total", "Damaged blobs this node's scrub found, by problem: missing (gone), corrupt (size or checksum differs from the record), unreadable (the store failed the read).",
			func() float64 { return float64(c.Load()) }, "problem", problem)
	}
	m.CounterFunc("coffer_scrub_unverified_total", "Encrypted blobs this node's scrub could check the size of only (no key: SSE-C, or the key service down).",
		func() float64 { return float64(ss.Unverified.Load()) })
	m.GaugeFunc("coffer_scrub_last_success_timestamp_seconds", "When the last scrub run this node finished ended (Unix seconds; 0: none).",
		func() float64 { return float64(ss.LastSuccess.Load()) })
	m.GaugeFunc("coffer_scrub_running", "1 while this node scrubs.",
		func() float64 { return float64(ss.Running.Load()) })
}
