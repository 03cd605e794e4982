"""Measurements of the web console for docs/PERFORMANCE.md ("## Web console").

Not part of the test run (it moves 1 GiB). Against a running coffer serve:

  CONSOLE_URL=http://127.0.0.1:8080 CONSOLE_ADMIN=email:password \\
  CONSOLE_CHROMIUM=/usr/bin/chromium CONSOLE_SERVER_PID=PID CONSOLE_WORK=/tmp/x \\
  python test/console/measure.py [first-load] [listing] [upload]

first-load: bytes transferred (compressed) and time to interactive of a
cold load; listing: a folder of 10,000 files (time to render, frame times
while scrolling); upload: a 1 GiB file through the console (tus) vs curl -T
(PUT /files), with the server's and the browser's peak RSS.
"""

import json
import os
import subprocess
import sys
import time
import urllib.request

from playwright.sync_api import sync_playwright, expect

BASE = os.environ["CONSOLE_URL"].rstrip("/")
EMAIL, PW = os.environ["CONSOLE_ADMIN"].split(":", 1)
CHROMIUM = os.environ.get("CONSOLE_CHROMIUM", "/usr/bin/chromium")
WORK = os.environ["CONSOLE_WORK"]
SERVER_PID = os.environ.get("CONSOLE_SERVER_PID")


def api(method, path, body=None, token=None, headers=None, data=None):
    req = urllib.request.Request(BASE + path, method=method)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    if body is not None:
        data = json.dumps(body).encode()
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, data, timeout=600) as r:
        out = r.read()
        return r.status, (json.loads(out) if out and out[:1] == b"{" else out)


def rss_kib(pid, field="VmRSS"):
    try:
        for line in open("/proc/%s/status" % pid):
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def browser_rss_kib(root_pid):
    """Sum of RSS of the browser's process tree."""
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid=,rss="], capture_output=True, text=True).stdout
    kids, rss = {}, {}
    for line in out.splitlines():
        p, pp, r = (int(x) for x in line.split())
        kids.setdefault(pp, []).append(p)
        rss[p] = r
    total, todo = 0, [root_pid]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        todo += kids.get(p, [])
    return total


def tree(root_pid):
    """The pids of root_pid's process tree."""
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True).stdout
    kids = {}
    for line in out.splitlines():
        p, pp = (int(x) for x in line.split())
        kids.setdefault(pp, []).append(p)
    pids, todo = [], [root_pid]
    while todo:
        p = todo.pop()
        pids.append(p)
        todo += kids.get(p, [])
    return pids


def cpu_s(pids):
    """utime+stime of pids, in seconds (USER_HZ 100)."""
    total = 0
    for p in pids:
        try:
            f = open("/proc/%s/stat" % p).read().rsplit(")", 1)[1].split()
            total += int(f[11]) + int(f[12])
        except (OSError, IndexError):
            pass
    return total / 100


def cpu_by_type(pids):
    """utime+stime of pids by Chromium process type (--type=...)."""
    out = {}
    for p in pids:
        try:
            cmd = open("/proc/%s/cmdline" % p).read().split("\0")
        except OSError:
            continue
        name = os.path.basename(cmd[0]) if cmd and cmd[0] else "?"
        if len(cmd) <= 2:  # Chromium rewrites its argv with spaces
            cmd = cmd[0].split()
            name = os.path.basename(cmd[0]) if cmd else "?"
        kind = next((a.split("=", 1)[1] for a in cmd if a.startswith("--type=")), name)
        if kind == "utility":
            kind = next((a.split("=", 1)[1].split(".")[-1] for a in cmd if a.startswith("--utility-sub-type=")), kind)
        out[kind] = out.get(kind, 0) + cpu_s([p])
    return out


def sign_in(page):
    page.goto(BASE + "/login")
    page.get_by_label("Email").fill(EMAIL)
    page.get_by_label("Password").fill(PW)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Buckets")).to_be_visible(timeout=30000)


def first_load(browser):
    ctx = browser.new_context()
    page = ctx.new_page()
    sizes = []
    cdp = ctx.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.on("Network.loadingFinished", lambda e: sizes.append(e["encodedDataLength"]))
    t0 = time.perf_counter()
    page.goto(BASE + "/")
    expect(page.get_by_role("button", name="Sign in")).to_be_enabled()
    tti = time.perf_counter() - t0
    page.wait_for_load_state("networkidle")
    nav = page.evaluate("() => JSON.stringify(performance.getEntriesByType('navigation')[0].toJSON())")
    nav = json.loads(nav)
    print("first load: %d requests, %.1f KiB transferred (headers + compressed bodies); "
          "sign-in form interactive after %.0f ms (DOMContentLoaded %.0f ms)"
          % (len(sizes), sum(sizes) / 1024, tti * 1000, nav["domContentLoadedEventEnd"]))
    ctx.close()


def listing(browser, token):
    bucket = "measure-10k"
    try:
        api("POST", "/api/v1/buckets", {"name": bucket}, token)
        boundary = "coffer-measure"
        for batch in range(10):
            parts = []
            for i in range(1000):
                n = batch * 1000 + i
                parts.append(("--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"many/file-%05d.txt\"\r\n"
                              "Content-Type: text/plain\r\n\r\nfile %d\r\n" % (boundary, n, n)).encode())
            body = b"".join(parts) + ("--%s--\r\n" % boundary).encode()
            api("POST", "/api/v1/buckets/%s/files" % bucket, token=token, data=body,
                headers={"Content-Type": "multipart/form-data; boundary=" + boundary})
    except urllib.error.HTTPError as e:
        if e.code != 409:
            raise
    ctx = browser.new_context(viewport={"width": 1440, "height": 900})
    page = ctx.new_page()
    sign_in(page)
    t0 = time.perf_counter()
    page.goto(BASE + "/b/%s/many/" % bucket)
    expect(page.locator('[data-key="many/file-00000.txt"]')).to_be_visible(timeout=60000)
    first = time.perf_counter() - t0
    expect(page.get_by_text("10000 item(s)")).to_be_visible(timeout=60000)
    page.wait_for_function("() => !document.querySelector('.status').textContent.includes('loading')", timeout=60000)
    full = time.perf_counter() - t0
    rows = page.evaluate("() => document.querySelectorAll('.rows .row').length")
    frames = page.evaluate("""async () => {
      const box = document.querySelector('.rows');
      const times = [];
      let last = performance.now();
      for (let i = 0; i < 120; i++) {
        box.scrollTop = (box.scrollHeight - box.clientHeight) * i / 119;
        await new Promise((r) => requestAnimationFrame(() => r()));
        const now = performance.now();
        times.push(now - last);
        last = now;
      }
      times.sort((a, b) => a - b);
      return { median: times[60], p95: times[114], max: times[119] };
    }""")
    sort_t = page.evaluate("""async () => {
      const t0 = performance.now();
      document.querySelector('button[aria-label="Sort by Size"]').click();
      await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
      return performance.now() - t0;
    }""")
    print("listing 10,000 files: first rows after %.0f ms, all 10 pages loaded after %.0f ms; %d row elements in the DOM; "
          "scrolling top to bottom in 120 frames: frame median %.1f ms, p95 %.1f ms, max %.1f ms; re-sort by size %.0f ms"
          % (first * 1000, full * 1000, rows, frames["median"], frames["p95"], frames["max"], sort_t))
    ctx.close()


def upload(browser, token, pw_browser_pid):
    """curl -T and the console upload the same 1 GiB file to the same
    server, alternating for UPLOAD_ROUNDS rounds (default 1); each with its
    time, the server's CPU and the browser's (or curl's) CPU."""
    path = os.path.join(WORK, "gib.bin")
    if not os.path.exists(path) or os.path.getsize(path) != 1 << 30:
        with open(path, "wb") as f:
            for _ in range(1024):
                f.write(os.urandom(1 << 20))
    bucket = "measure-upload"
    try:
        api("POST", "/api/v1/buckets", {"name": bucket}, token)
    except urllib.error.HTTPError:
        pass
    srv = [int(SERVER_PID)] if SERVER_PID else []
    ratios = []
    for r in range(int(os.environ.get("UPLOAD_ROUNDS", "1"))):
        load = open("/proc/loadavg").read().split()[:3]
        # curl -T: PUT /files, the same machine, the same bytes.
        c0, s0, t0 = os.times().children_user + os.times().children_system, cpu_s(srv), time.perf_counter()
        subprocess.run(["curl", "-fsS", "-o", "/dev/null", "-T", path, "-H", "Authorization: Bearer " + token,
                        BASE + "/api/v1/buckets/%s/files/curl.bin" % bucket], check=True)
        curl_s, curl_srv = time.perf_counter() - t0, cpu_s(srv) - s0
        curl_cpu = os.times().children_user + os.times().children_system - c0
        srv_before = rss_kib(SERVER_PID, "VmHWM") if SERVER_PID else 0
        ctx = browser.new_context(viewport={"width": 1440, "height": 900}, bypass_csp=bool(os.environ.get("UPLOAD_NO_ANIMATIONS")))
        page = ctx.new_page()
        sign_in(page)
        page.goto(BASE + "/b/%s/" % bucket)
        page.get_by_role("button", name="Upload").click()
        if os.environ.get("UPLOAD_NO_ANIMATIONS"):  # an experiment: what the page's animations cost
            page.add_style_tag(content="*, *::before, *::after { transition: none !important; animation: none !important; }")
        peak_browser = [0]
        b0, s0, t0 = cpu_s(tree(pw_browser_pid)), cpu_s(srv), time.perf_counter()
        k0 = cpu_by_type(tree(pw_browser_pid))
        page.locator(".uppy-Dashboard-input").first.set_input_files([path])
        while True:
            peak_browser[0] = max(peak_browser[0], browser_rss_kib(pw_browser_pid))
            if page.locator(".uppy-StatusBar.is-complete").count():
                break
            time.sleep(0.2)
        ui_s, ui_srv, ui_browser = time.perf_counter() - t0, cpu_s(srv) - s0, cpu_s(tree(pw_browser_pid)) - b0
        k1 = cpu_by_type(tree(pw_browser_pid))
        kinds = ", ".join("%s %.1f s" % (k, v - k0.get(k, 0)) for k, v in sorted(k1.items()) if v - k0.get(k, 0) >= 0.05)
        # The browser's floor: the same File sent by one XHR PUT from a page
        # with no upload UI (no Uppy, no progress rendering).
        page.evaluate("""() => { const i = document.createElement('input'); i.type = 'file'; i.id = 'raw-file'; document.body.append(i); }""")
        page.set_input_files("#raw-file", [path])
        b0r, s0r = cpu_s(tree(pw_browser_pid)), cpu_s(srv)
        raw_s = page.evaluate("""async ([url, token]) => {
          const f = document.getElementById('raw-file').files[0];
          const t0 = performance.now();
          await new Promise((ok, fail) => { const x = new XMLHttpRequest(); x.open('PUT', url);
            x.setRequestHeader('Authorization', 'Bearer ' + token); x.onload = () => (x.status < 300 ? ok() : fail(new Error('HTTP ' + x.status))); x.onerror = fail; x.send(f); });
          return (performance.now() - t0) / 1000; }""", [BASE + "/api/v1/buckets/%s/files/raw.bin" % bucket, token])
        raw_srv, raw_browser = cpu_s(srv) - s0r, cpu_s(tree(pw_browser_pid)) - b0r
        # The same as a Blob slice (what tus-js-client's own reader sends):
        # Chromium streams it through its browser process (issue 23).
        k0s, b0s = cpu_by_type(tree(pw_browser_pid)), cpu_s(tree(pw_browser_pid))
        slice_s = page.evaluate("""async ([url, token]) => {
          const f = document.getElementById('raw-file').files[0];
          const t0 = performance.now();
          await new Promise((ok, fail) => { const x = new XMLHttpRequest(); x.open('PUT', url);
            x.setRequestHeader('Authorization', 'Bearer ' + token); x.onload = () => (x.status < 300 ? ok() : fail(new Error('HTTP ' + x.status))); x.onerror = fail; x.send(f.slice(0, f.size)); });
          return (performance.now() - t0) / 1000; }""", [BASE + "/api/v1/buckets/%s/files/raw.bin" % bucket, token])
        slice_browser, k1s = cpu_s(tree(pw_browser_pid)) - b0s, cpu_by_type(tree(pw_browser_pid))
        slice_kinds = ", ".join("%s %.1f s" % (k, v - k0s.get(k, 0)) for k, v in sorted(k1s.items()) if v - k0s.get(k, 0) >= 0.05)
        srv_peak = rss_kib(SERVER_PID, "VmHWM") if SERVER_PID else 0
        ratios.append(curl_s / ui_s)
        print("round %d (load average %s): 1 GiB: curl -T (PUT /files) %.1f s = %.0f MiB/s (server CPU %.1f s, curl %.1f s); "
              "console (Uppy, tus) %.1f s = %.0f MiB/s (server CPU %.1f s, browser %.1f s: %s): console/curl %.2f; "
              "server peak RSS %d MiB (before the console upload %d MiB); browser processes peak RSS %d MiB"
              % (r + 1, " ".join(load), curl_s, 1024 / curl_s, curl_srv, curl_cpu, ui_s, 1024 / ui_s, ui_srv, ui_browser, kinds,
                 curl_s / ui_s, srv_peak // 1024, srv_before // 1024, peak_browser[0] // 1024), flush=True)
        print("  browser floor: one XHR PUT of the File from a page without upload UI %.1f s = %.0f MiB/s (server CPU %.1f s, browser %.1f s)"
              % (raw_s, 1024 / raw_s, raw_srv, raw_browser), flush=True)
        print("  the same XHR PUT of File.slice(0, size): %.1f s = %.0f MiB/s (browser %.1f s: %s)"
              % (slice_s, 1024 / slice_s, slice_browser, slice_kinds), flush=True)
        ctx.close()
        for key in ("curl.bin", "gib.bin", "raw.bin"):
            try:
                api("DELETE", "/api/v1/buckets/%s/files/%s" % (bucket, key), token=token)
            except urllib.error.HTTPError:
                pass
    ratios.sort()
    n = len(ratios)
    print("console/curl median %.2f (min %.2f, max %.2f)" % ((ratios[(n - 1) // 2] + ratios[n // 2]) / 2, ratios[0], ratios[-1]))
    os.remove(path)


def main():
    what = sys.argv[1:] or ["first-load", "listing", "upload"]
    _, s = api("POST", "/api/v1/auth/login", {"email": EMAIL, "password": PW})
    token = s["access_token"]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        # The browser's root process: the newest chromium child of ours.
        out = subprocess.run(["pgrep", "-n", "-P", str(os.getpid())], capture_output=True, text=True).stdout.split()
        root = int(out[0]) if out else 0
        if "first-load" in what:
            first_load(browser)
        if "listing" in what:
            listing(browser, token)
        if "upload" in what:
            upload(browser, token, root)
        browser.close()


if __name__ == "__main__":
    main()
