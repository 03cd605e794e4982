#!/usr/bin/env python3
# Generates coffer.json, the Grafana dashboard, beside this file:
#   python3 deploy/grafana/dashboard.py
# Edit the panels here, run it, commit both. test/deploy checks every
# query against a running node's /metrics and with promtool.
import json, os
DS = {"type": "prometheus", "uid": "${datasource}"}
panels = []
pid = [0]
y = [0]
def row(title):
    pid[0] += 1
    panels.append({"id": pid[0], "type": "row", "title": title, "collapsed": False,
                   "gridPos": {"h": 1, "w": 24, "x": 0, "y": y[0]}, "panels": []})
    y[0] += 1
x = [0]
def panel(title, exprs, unit="short", w=8, h=8, kind="timeseries", desc="", legend=None, thresholds=None):
    pid[0] += 1
    if x[0] + w > 24:
        x[0] = 0; y[0] += h
    targets = []
    for i, e in enumerate(exprs):
        if isinstance(e, tuple):
            e, leg = e
        else:
            leg = legend or ""
        targets.append({"datasource": DS, "expr": e, "legendFormat": leg, "refId": chr(65 + i)})
    p = {"id": pid[0], "type": kind, "title": title, "description": desc, "datasource": DS,
         "gridPos": {"h": h, "w": w, "x": x[0], "y": y[0]}, "targets": targets,
         "fieldConfig": {"defaults": {"unit": unit}, "overrides": []}, "options": {}}
    if thresholds:
        p["fieldConfig"]["defaults"]["thresholds"] = {"mode": "absolute", "steps": thresholds}
    if kind == "timeseries":
        p["options"] = {"legend": {"displayMode": "list", "placement": "bottom"}, "tooltip": {"mode": "multi"}}
    panels.append(p)
    x[0] += w
def endrow(h=8):
    x[0] = 0; y[0] += h

I = 'instance=~"$instance"'
R = "$__rate_interval"
H = "coffer_http_request_duration_seconds_bucket"

row("Requests")
panel("Request rate by API", [(f'sum by (api) (rate(coffer_http_requests_total{{{I}}}[{R}]))', "{{api}}")], "reqps")
panel("Error ratio (5xx, not counting 503 sheds) by API",
      [(f'sum by (api) (rate(coffer_http_requests_total{{{I},code=~"5..",code!="503"}}[{R}])) / sum by (api) (rate(coffer_http_requests_total{{{I}}}[{R}]))', "{{api}}")], "percentunit")
panel("Requests by status class", [(f'sum by (api, class) (label_replace(rate(coffer_http_requests_total{{{I}}}[{R}]), "class", "${{1}}xx", "code", "([0-9]).."))', "{{api}} {{class}}")], "reqps")
endrow()
for q in ("0.5", "0.95", "0.99"):
    pass
panel("Latency by API (p50, p95, p99)", [
    (f'histogram_quantile({q}, sum by (api, le) (rate({H}{{{I}}}[{R}])))', f"{{{{api}}}} p{int(float(q)*100)}") for q in ("0.5", "0.95", "0.99")], "s", w=12)
panel("p99 latency by route (top 10)", [(f'topk(10, histogram_quantile(0.99, sum by (api, route, le) (rate({H}{{{I}}}[{R}]))))', "{{api}} {{route}}")], "s", w=12)
endrow()
panel("Request rate by route (top 15)", [(f'topk(15, sum by (api, route) (rate(coffer_http_requests_total{{{I}}}[{R}])))', "{{api}} {{route}}")], "reqps", w=12)
panel("In flight", [(f'sum by (api) (coffer_http_in_flight_requests{{{I}}})', "{{api}}")], "short", w=12)
endrow()

row("Admission and rate limits")
panel("Refused by admission (503), by reason", [(f'sum by (api, reason) (rate(coffer_http_rejected_total{{{I}}}[{R}]))', "{{api}} {{reason}}")], "reqps")
panel("Refused: all 503 (admission, metadata pool) and 429 (rate limits, quotas)", [(f'sum by (api, code) (rate(coffer_http_requests_total{{{I},code=~"503|429"}}[{R}]))', "{{api}} {{code}}")], "reqps")
endrow()
panel("Admission: in flight vs limit", [(f'sum by (api, class) (coffer_admission_in_flight{{{I}}})', "{{api}} {{class}} in flight"),
      (f'sum by (api, class) (coffer_admission_limit{{{I}}})', "{{api}} {{class}} limit")], "short")
panel("CPU scheduling delay (admission's signal)", [(f'coffer_admission_sched_delay_seconds{{{I}}}', "{{instance}}")], "s")
endrow()
panel("Password hashing: waiting and refused", [(f'sum(coffer_password_pool_waiting{{{I}}})', "waiting"),
      (f'sum(rate(coffer_password_pool_rejected_total{{{I}}}[{R}]))', "refused/s"),
      (f'sum(rate(coffer_password_hashes_total{{{I}}}[{R}]))', "hashes/s")], "short", w=12)
panel("Sign-ins by outcome (file API)", [(f'sum by (code) (rate(coffer_http_requests_total{{{I},route="POST /api/v1/auth/login"}}[{R}]))', "{{code}}")], "reqps", w=12)
endrow()

row("Bytes")
panel("Upload bytes (request bodies) by API", [(f'sum by (api) (rate(coffer_http_request_bytes_total{{{I}}}[{R}]))', "{{api}}")], "Bps", w=12)
panel("Download bytes (response bodies) by API", [(f'sum by (api) (rate(coffer_http_response_bytes_total{{{I}}}[{R}]))', "{{api}}")], "Bps", w=12)
endrow()
panel("Bytes received, not committed yet", [(f'sum(coffer_upload_staged_bytes{{{I}}})', "staged")], "bytes", w=12)
endrow()

row("Caches")
panel("Metadata cache hit ratio", [(f'sum by (cache) (rate(coffer_meta_cache_hits_total{{{I}}}[{R}])) / (sum by (cache) (rate(coffer_meta_cache_hits_total{{{I}}}[{R}])) + sum by (cache) (rate(coffer_meta_cache_misses_total{{{I}}}[{R}])))', "{{cache}}")], "percentunit")
panel("Blob read cache hit ratio (remote stores)", [(f'sum(rate(coffer_blob_cache_hits_total{{{I}}}[{R}])) / (sum(rate(coffer_blob_cache_hits_total{{{I}}}[{R}])) + sum(rate(coffer_blob_cache_misses_total{{{I}}}[{R}])))', "hit ratio")], "percentunit")
panel("Cache sizes", [(f'sum by (cache) (coffer_meta_cache_bytes{{{I}}})', "meta {{cache}}"), (f'sum(coffer_blob_cache_bytes{{{I}}})', "blob cache")], "bytes")
endrow()

row("Metadata and blob stores")
panel("Metadata operation latency (p50, p99)", [
    (f'histogram_quantile({q}, sum by (op, le) (rate(coffer_meta_op_duration_seconds_bucket{{{I}}}[{R}])))', f"{{{{op}}}} p{int(float(q)*100)}") for q in ("0.5", "0.99")], "s", w=12)
panel("Blob operation latency (p50, p99)", [
    (f'histogram_quantile({q}, sum by (op, le) (rate(coffer_blob_op_duration_seconds_bucket{{{I}}}[{R}])))', f"{{{{op}}}} p{int(float(q)*100)}") for q in ("0.5", "0.99")], "s", w=12)
endrow()
panel("Blob read failures and corruption", [(f'sum(rate(coffer_blob_failed_reads_total{{{I}}}[{R}]))', "failed reads/s"),
      (f'sum(rate(coffer_blob_corrupt_reads_total{{{I}}}[{R}]))', "corrupt reads/s")], "short", w=12)
panel("Metadata and blob operations", [(f'sum by (op) (rate(coffer_meta_op_duration_seconds_count{{{I}}}[{R}]))', "meta {{op}}"),
      (f'sum by (op) (rate(coffer_blob_op_duration_seconds_count{{{I}}}[{R}]))', "blob {{op}}")], "ops", w=12)
endrow()

row("Background jobs")
panel("Janitor", [(f'sum(rate(coffer_janitor_reclaimed_blobs_total{{{I}}}[{R}]))', "reclaimed blobs/s"),
      (f'sum(rate(coffer_janitor_orphan_blobs_total{{{I}}}[{R}]))', "orphans/s"),
      (f'sum(rate(coffer_janitor_aborted_uploads_total{{{I}}}[{R}]))', "aborted uploads/s"),
      (f'sum(rate(coffer_janitor_failures_total{{{I}}}[{R}]))', "failed passes/s")], "short")
panel("Since the last janitor, lifecycle and scrub pass", [(f'time() - max(coffer_janitor_last_run_timestamp_seconds{{{I}}} > 0)', "janitor"),
      (f'time() - max(coffer_lifecycle_last_success_timestamp_seconds{{{I}}} > 0)', "lifecycle"),
      (f'time() - max(coffer_scrub_last_success_timestamp_seconds{{{I}}} > 0)', "scrub")], "s")
panel("Lifecycle", [(f'sum(rate(coffer_lifecycle_expired_objects_total{{{I}}}[{R}]))', "expired objects/s"),
      (f'sum(rate(coffer_lifecycle_removed_versions_total{{{I}}}[{R}]))', "removed versions/s"),
      (f'sum(rate(coffer_lifecycle_aborted_uploads_total{{{I}}}[{R}]))', "aborted uploads/s"),
      (f'max(coffer_lifecycle_running{{{I}}})', "running")], "short")
endrow()
panel("Encryption jobs (re-wrap, encrypt)", [(f'max by (kind) (coffer_kms_job_done_rows{{{I}}})', "{{kind}} rows done"),
      (f'max(coffer_kms_job_running{{{I}}})', "running"),
      (f'sum(rate(coffer_kms_job_failed_total{{{I}}}[{R}]))', "failed rows/s")], "short")
panel("Key service calls and errors", [(f'sum by (op) (rate(coffer_kms_calls_total{{{I}}}[{R}]))', "{{op}} calls/s"),
      (f'sum by (op) (rate(coffer_kms_errors_total{{{I}}}[{R}]))', "{{op}} errors/s")], "short")
panel("Scrub", [(f'sum(rate(coffer_scrub_bytes_total{{{I}}}[{R}]))', "bytes/s"),
      (f'sum(increase(coffer_scrub_bad_blobs_total{{{I}}}[1h]))', "bad blobs (1h)")], "short")
endrow()

row("Backup and replication")
panel("Since the last backup", [(f'time() - max(coffer_backup_last_success_timestamp_seconds{{{I}}})', "{{instance}}")], "s", kind="stat",
      thresholds=[{"color": "green", "value": None}, {"color": "orange", "value": 86400}, {"color": "red", "value": 93600}])
panel("Replication lag", [(f'max(coffer_replication_lag_seconds{{{I}}})', "lag")], "s")
panel("Replication errors", [(f'sum(rate(coffer_replication_errors_total{{{I}}}[{R}]))', "errors/s")], "short")
endrow()

row("Audit")
panel("Audit events by outcome", [(f'sum by (outcome) (rate(coffer_audit_events_total{{{I}}}[{R}]))', "{{outcome}}")], "short", w=12)
panel("Audit events dropped", [(f'sum(rate(coffer_audit_dropped_total{{{I}}}[{R}]))', "dropped/s")], "short", w=12)
endrow()

row("Resources")
panel("Data disk free", [(f'min(coffer_data_disk_free_bytes{{{I}}} / coffer_data_disk_size_bytes{{{I}}})', "free")], "percentunit", kind="stat",
      thresholds=[{"color": "red", "value": None}, {"color": "orange", "value": 0.1}, {"color": "green", "value": 0.2}])
panel("Data disk free bytes and pressure", [(f'coffer_data_disk_free_bytes{{{I}}}', "{{instance}} free"),
      (f'coffer_data_disk_pressure{{{I}}}', "{{instance}} pressure")], "bytes")
panel("TLS certificate expires in", [(f'min(coffer_tls_cert_expiry_timestamp_seconds{{{I}}}) - time()', "expires in")], "s", kind="stat",
      thresholds=[{"color": "red", "value": None}, {"color": "orange", "value": 604800}, {"color": "green", "value": 1209600}])
endrow()
panel("Resident memory", [(f'process_resident_memory_bytes{{{I}}}', "{{instance}}")], "bytes")
panel("Goroutines", [(f'go_goroutines{{{I}}}', "{{instance}}")], "short")
panel("CPU", [(f'rate(process_cpu_seconds_total{{{I}}}[{R}])', "{{instance}}")], "percentunit")
endrow()
panel("Go heap and GC", [(f'go_memstats_heap_inuse_bytes{{{I}}}', "{{instance}} heap in use"),
      (f'rate(go_gc_duration_seconds_count{{{I}}}[{R}])', "{{instance}} GCs/s")], "short")
panel("Open files", [(f'process_open_fds{{{I}}}', "{{instance}} open"), (f'process_max_fds{{{I}}}', "{{instance}} max")], "short")
panel("Build", [(f'count by (version, revision) (coffer_build_info{{{I}}})', "{{version}} {{revision}}")], "short", kind="table")
endrow()

dash = {
    "title": "Coffer", "uid": "coffer-overview", "tags": ["coffer", "storage"], "timezone": "browser",
    "schemaVersion": 39, "version": 1, "editable": True, "refresh": "30s",
    "time": {"from": "now-6h", "to": "now"},
    "description": "Coffer: requests, errors and latency per API and route; admission and rate-limit refusals; bytes; caches; metadata and blob latency; background jobs; backup, replication, audit; disk, memory and goroutines. Checked against /metrics by test/deploy.",
    "templating": {"list": [
        {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source", "current": {}, "hide": 0},
        {"name": "instance", "type": "query", "datasource": DS, "label": "Node", "query": {"query": "label_values(coffer_build_info, instance)", "refId": "A"},
         "definition": "label_values(coffer_build_info, instance)", "includeAll": True, "multi": True, "allValue": ".*", "refresh": 2, "current": {}, "hide": 0},
    ]},
    "annotations": {"list": []},
    "panels": panels,
}
json.dump(dash, open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "coffer.json"), "w"), indent=2)
open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "coffer.json"), "a").write("\n")
print(len(panels), "panels")
