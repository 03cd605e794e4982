#!/usr/bin/env python3
# Traces adaptive admission during one coffer bench run (issue 23, fourth pass):
# every ~100 ms the admission gauges of /metrics (CPU headroom, scheduling delay,
# runnable per CPU, class limits and in-flight counts, refusals), the server's and
# the bench's CPU (cores, from /proc/PID/stat) and the machine's busy CPUs
# (/proc/stat), into OUTDIR/trace.tsv.
#   scripts/trace-admission.py SERVER_BIN BENCH_BIN OUTDIR [scenario] [vus] [duration] [serve flags...]
#   USERS=20 BENCH_EXTRA="--rate 438/s --expect-continue" scripts/trace-admission.py .tools/coffer .tools/coffer /tmp/t upload-proxy 1000 20s
# PORT, S3_PORT: loopback ports (default 28401, 29401).
import os, re, subprocess, sys, time, tempfile, urllib.request, shutil
srv, bench, out = sys.argv[1:4]
sc = sys.argv[4] if len(sys.argv) > 4 else "upload-direct"
vus = sys.argv[5] if len(sys.argv) > 5 else "200"
dur = sys.argv[6] if len(sys.argv) > 6 else "30s"
extra = sys.argv[7:]
os.makedirs(out, exist_ok=True)
env = dict(os.environ, COFFER_SIGNUP_RATE="0")
port, s3 = os.environ.get("PORT", "28401"), os.environ.get("S3_PORT", "29401")
data = tempfile.mkdtemp(prefix="i23d-admit-data.", dir=os.environ.get("TMPDIR", "/tmp"))
sp = subprocess.Popen([srv, "serve", "--data", data, "--listen", "127.0.0.1:" + port, "--s3-listen", "127.0.0.1:" + s3,
                       "--log-level", "warn", "--max-in-flight", "10000", "--max-in-flight-per-client", "0"] + extra,
                      stdout=open(out + "/server.log", "w"), stderr=subprocess.STDOUT, env=env)
for _ in range(100):
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1); break
    except Exception:
        time.sleep(0.1)
bt = open(out + "/bench.txt", "w")
bp = subprocess.Popen([bench, "bench", sc, "--target", f"http://127.0.0.1:{port}", "--vus", vus, "--users", os.environ.get("USERS", "100"),
                       "--duration", dur, "--json", out + "/bench.json"] + os.environ.get("BENCH_EXTRA", "").split(), stdout=bt, stderr=subprocess.STDOUT, env=env)
hz = os.sysconf("SC_CLK_TCK")
def cpu(pid):
    try:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / hz
    except Exception:
        return 0.0
def allcpu():
    f = open("/proc/stat").readline().split()[1:]
    v = list(map(int, f))
    return sum(v) / hz, (v[3] + v[4]) / hz  # total, idle+iowait
tr = open(out + "/trace.tsv", "w")
tr.write("t\thead\tsrv_cores\tbench_cores\tmachine_busy\tdelay_ms\trunq\tlim_fc\tlim_fw\tlim_sw\tinfl_fc\tinfl_fw\tinfl_sw\tinfl_sc\trej\tload1\n")
running = False
prev = None
while bp.poll() is None:
    if not running:
        running = "bench: running" in open(out + "/bench.txt").read()
        time.sleep(0.1)
        continue
    try:
        m = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1).read().decode()
    except Exception:
        m = ""
    now = time.time(); sc_, bc = cpu(sp.pid), cpu(bp.pid); tot, idle = allcpu()
    g = {}
    rej = 0.0
    for line in m.splitlines():
        if line.startswith("coffer_admission_sched_delay_seconds "): g["delay"] = float(line.split()[1]) * 1000
        elif line.startswith("coffer_admission_cpu_headroom "): g["head"] = float(line.split()[1])
        elif line.startswith("coffer_admission_runnable_per_cpu "): g["runq"] = float(line.split()[1])
        elif line.startswith("coffer_admission_limit{") or line.startswith("coffer_admission_in_flight{"):
            k = re.match(r'(coffer_admission_\w+)\{api="(\w+)",class="(\w+)"\} (\S+)', line)
            if k: g[(k[1][17:], k[2], k[3])] = float(k[4])
        elif line.startswith("coffer_http_rejected_total{"):
            rej += float(line.split()[-1])
    if prev:
        dt = now - prev[0]
        l1 = open("/proc/loadavg").read().split()[0]
        row = [f"{now:.2f}", f"{g.get('head',-9):.2f}", f"{(sc_-prev[1])/dt:.2f}", f"{(bc-prev[2])/dt:.2f}", f"{((tot-prev[3])-(idle-prev[4]))/(tot-prev[3]) * 2 if tot>prev[3] else 0:.2f}",
               f"{g.get('delay',-1):.2f}", f"{g.get('runq',-1):.2f}",
               str(g.get(("limit","file","control"),-1)), str(g.get(("limit","file","write"),-1)), str(g.get(("limit","s3","write"),-1)),
               str(g.get(("in_flight","file","control"),-1)), str(g.get(("in_flight","file","write"),-1)), str(g.get(("in_flight","s3","write"),-1)), str(g.get(("in_flight","s3","control"),-1)),
               f"{rej-prev[5]:.0f}", l1]
        tr.write("\t".join(row) + "\n"); tr.flush()
    prev = (now, sc_, bc, tot, idle, rej)
    time.sleep(0.1)
sp.terminate(); sp.wait()
shutil.rmtree(data, ignore_errors=True)
