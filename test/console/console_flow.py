"""Browser test of Coffer's web console in a real Chromium (Playwright).

Run by console_test.go against a real `coffer serve`; reads its setup from
the environment:

  CONSOLE_URL       the file API listener (the console is at /)
  CONSOLE_ADMIN     email:password of an administrator
  CONSOLE_CHROMIUM  the Chromium binary (Debian's chromium)
  CONSOLE_AXE       axe-core's axe.min.js (the accessibility check)
  CONSOLE_SHOTS     folder for the screenshots, optional
  CONSOLE_WORK      a scratch folder (axe.json: the accessibility report)

The browser reaches the server through a TCP proxy in this script, so a
test can cut the connections of an upload in flight.
"""

import calendar
import contextlib
import hashlib
import io
import json
import os
import re
import socket
import struct
import sys
import threading
import time
import urllib.request
import urllib.error
import zipfile

from playwright.sync_api import sync_playwright, expect

BASE = os.environ["CONSOLE_URL"].rstrip("/")
ADMIN_EMAIL, ADMIN_PW = os.environ["CONSOLE_ADMIN"].split(":", 1)
CHROMIUM = os.environ.get("CONSOLE_CHROMIUM", "/usr/bin/chromium")
SHOTS = os.environ.get("CONSOLE_SHOTS", "")
WORK = os.environ["CONSOLE_WORK"]
AXE = os.environ.get("CONSOLE_AXE", "")
TIMEOUT = 30_000
PAGES = []  # for screenshots at a failure
BUCKET = "console-%d" % (int(time.time()) % 100000)


def log(*a):
    print(*a, flush=True)


class Proxy:
    """A TCP proxy in front of the server. cut_after(n) closes every
    connection once n bytes more have gone from the browser to the server
    (one time); throttle(rate) slows the browser-to-server direction to
    rate bytes a second (None: full speed); patches, creations (tus POST)
    and heads (tus HEAD) count the tus requests seen, sent the bytes sent
    upstream; ranged lists the GET request lines of /s/ that carried a
    Range header."""

    def __init__(self, upstream):
        host, port = upstream.split("://", 1)[1].split(":")
        self.upstream = (host, int(port))
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Small receive buffers (inherited by accepted sockets): when the
        # browser drops a throttled request, little is left to drain.
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 10)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(64)
        self.url = "http://127.0.0.1:%d" % self.lsock.getsockname()[1]
        self.lock = threading.Lock()
        self.conns = []
        self.budget = None
        self.cuts = 0
        self.patches = 0
        self.creations = 0
        self.heads = 0
        self.sent = 0
        self.rate = None
        self.ranged = []
        self.tokens = set()
        threading.Thread(target=self.accept, daemon=True).start()

    def throttle(self, rate):
        with self.lock:
            self.rate = rate

    def cut_after(self, n):
        with self.lock:
            self.budget = n

    def accept(self):
        while True:
            c, _ = self.lsock.accept()
            u = socket.create_connection(self.upstream)
            with self.lock:
                self.conns.append((c, u))
            threading.Thread(target=self.pump, args=(c, u, True), daemon=True).start()
            threading.Thread(target=self.pump, args=(u, c, False), daemon=True).start()

    def pump(self, src, dst, up):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if up:
                    with self.lock:
                        if data.startswith(b"PATCH /api/v1/tus/"):
                            self.patches += 1
                        elif data.startswith(b"POST /api/v1/tus/"):
                            self.creations += 1
                        elif data.startswith(b"HEAD /api/v1/tus/"):
                            self.heads += 1
                        elif data.startswith(b"GET /s/") and b"\r\nrange: bytes=" in data.lower():
                            self.ranged.append(data.split(b"\r\n", 1)[0].decode())
                        self.sent += len(data)
                        for m in re.finditer(rb"\r\n[Aa]uthorization: Bearer ([^\r\n]+)", data):
                            self.tokens.add(m.group(1).decode())
                        rate = self.rate
                    if rate:
                        time.sleep(len(data) / rate)
                    cut = False
                    with self.lock:
                        if self.budget is not None:
                            self.budget -= len(data)
                            if self.budget <= 0:
                                self.budget = None
                                self.cuts += 1
                                cut = True
                    if cut:
                        self.cut_all()
                        return
                dst.sendall(data)
        except OSError:
            pass
        finally:
            # One side ended: end the other too, and release the sockets
            # (a half-closed socket nobody reads would stall a browser
            # still sending a body after an early response).
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                try:
                    s.close()
                except OSError:
                    pass

    def cut_all(self):
        with self.lock:
            conns, self.conns = self.conns, []
        # Reset both ends: SO_LINGER 0 makes the close send an RST, and
        # the shutdown first wakes the pump threads blocked in recv (a
        # close alone would wait for them).
        for c, u in conns:
            for s in (c, u):
                try:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                try:
                    s.close()
                except OSError:
                    pass


def api(method, path, body=None, token=None, raw=False):
    req = urllib.request.Request(BASE + path, method=method)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, data, timeout=60) as r:
            out = r.read()
            return r.status, (out if raw else (json.loads(out) if out else None))
    except urllib.error.HTTPError as e:
        out = e.read()
        return e.code, (json.loads(out) if out.startswith(b"{") else out)


def put(path, data, content_type, token):
    req = urllib.request.Request(BASE + path, data=data, method="PUT")
    req.add_header("Authorization", "Bearer " + token)
    req.add_header("Content-Type", content_type)
    with urllib.request.urlopen(req, timeout=60) as r:
        return r.status


# A one-page PDF with a line of text.
def pdf():
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 200] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        None,
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    stream = b"BT /F1 18 Tf 20 100 Td (Coffer PDF preview) Tj ET"
    objs[3] = b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream"
    out = b"%PDF-1.4\n"
    offsets = []
    for i, o in enumerate(objs):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % (i + 1) + o + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return out


def stored_state(page):
    """Everything the console's origin keeps in localStorage and IndexedDB,
    as text (blobs as their size)."""
    return page.evaluate("""async () => {
        const out = {local: {...localStorage}, idb: {}};
        for (const d of await indexedDB.databases()) {
            const db = await new Promise((ok, bad) => { const r = indexedDB.open(d.name); r.onsuccess = () => ok(r.result); r.onerror = bad; });
            for (const store of db.objectStoreNames) {
                const all = await new Promise((ok, bad) => { const r = db.transaction(store).objectStore(store).getAll(); r.onsuccess = () => ok(r.result); r.onerror = bad; });
                out.idb[d.name + '/' + store] = all;
            }
            db.close();
        }
        return JSON.stringify(out, (k, v) => v instanceof Blob ? '[blob ' + v.size + ']' : v);
    }""")


def login(email, pw):
    st, s = api("POST", "/api/v1/auth/login", {"email": email, "password": pw})
    assert st == 200, (st, s)
    return s["access_token"]


def sha(data):
    return hashlib.sha256(data).hexdigest()


def shot(page, name):
    if SHOTS:
        page.screenshot(path=os.path.join(SHOTS, name + ".png"))


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    return path


# A 64x48 PNG (a real image for the preview).
def png(w=64, h=48):
    import struct
    import zlib

    raw = b"".join(b"\x00" + b"".join(bytes([(x * 4) % 256, (y * 5) % 256, 160]) for x in range(w)) for y in range(h))

    def chunk(t, d):
        c = struct.pack(">I", len(d)) + t + d
        return c + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)

    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def upload_panel(page, open_it):
    """Opens (open_it) or closes the upload panel, whatever its state."""
    button = page.get_by_role("button", name="Upload", exact=True)
    if (button.get_attribute("aria-expanded") == "true") != open_it:
        button.click()
    expect(button).to_have_attribute("aria-expanded", "true" if open_it else "false")


def slow_indexeddb(page, ms):
    """Delays every IndexedDB open's success in the page by ms (until the
    next navigation), as a loaded machine can."""
    page.evaluate("""ms => {
        const open = IDBFactory.prototype.open;
        const success = Object.getOwnPropertyDescriptor(IDBRequest.prototype, 'onsuccess');
        IDBFactory.prototype.open = function (...args) {
            const req = open.apply(this, args);
            Object.defineProperty(req, 'onsuccess', {
                configurable: true,
                get() { return success.get.call(req); },
                set(fn) { success.set.call(req, fn && ((e) => setTimeout(() => fn.call(req, e), ms))); },
            });
            return req;
        };
    }""", ms)


def wait_uploads_complete(page, n):
    # n files of the dashboard done, and Uppy's status bar says "Complete"
    # with its progress bar at 100 %.
    expect(page.locator(".uppy-Dashboard-Item.is-complete")).to_have_count(n, timeout=60_000)
    expect(page.locator(".uppy-StatusBar.is-complete")).to_be_visible(timeout=60_000)
    width = page.eval_on_selector(".uppy-StatusBar-progress", "e => e.style.width")
    assert width == "100%", width


def sign_in(page, base, email, pw):
    page.goto(base + "/")
    expect(page.get_by_role("heading", name="Sign in to Coffer")).to_be_visible(timeout=TIMEOUT)
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(pw)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Buckets")).to_be_visible(timeout=TIMEOUT)


def evil_svg(origin, drop):
    """An SVG whose script, if it ever runs in the console's origin, takes
    over the session (issue 18, N1): it announces itself to /__pwned/ran
    (a route the test watches), asks /api/v1/auth/refresh for a new access
    token with the refresh cookie, and drops the token into the attacker's
    drop box (drop: its /s/ token)."""
    o = json.dumps(origin)
    js = ("var o = %s; fetch(o + '/__pwned/ran');"
          "fetch(o + '/api/v1/auth/refresh', {method: 'POST', credentials: 'include',"
          " headers: {'Content-Type': 'application/json', 'X-Coffer-Session': 'cookie'}, body: '{}'})"
          ".then(function (r) { return r.json(); }).then(function (j) {"
          " fetch(o + '/__pwned/token?t=' + encodeURIComponent(j.access_token || ''));"
          " return fetch(o + '/s/%s/stolen.txt', {method: 'PUT', body: j.access_token || 'none'}); });") % (o, drop)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<svg xmlns="http://www.w3.org/2000/svg" width="120" height="40" viewBox="0 0 120 40">'
            '<rect width="120" height="40" fill="#2456d6"/><text x="10" y="25" fill="#fff">INVOICE</text>'
            '<script type="application/ecmascript"><![CDATA[' + js + ']]></script></svg>').encode()


# Records every URL the console turns into a blob: URL (window.__blobs), so
# the exploit test can open each one as a user's "Open in new tab" would.
BLOB_HOOK = """(() => { const make = URL.createObjectURL.bind(URL); window.__blobs = []; window.__blobTypes = [];
  URL.createObjectURL = (o) => { const u = make(o); window.__blobs.push(u); window.__blobTypes.push(o.type); return u; }; })()"""


def svg_exploit(browser_ctx, page, base, admin_token):
    """Issue 18, N1: an attacker drops invoice.svg (with a script) into the
    victim's drop box; the victim previews it and opens the preview "in a
    new tab" (page.goto in a new tab and window.open from the console, of
    every blob: URL the console made and every URL the preview shows). No
    script of the file may run, and no token may leave."""
    st, box = api("POST", "/api/v1/shares", {"bucket": BUCKET, "prefix": "n1-inbox/", "allow_upload": True}, token=admin_token)
    assert st == 201, (st, box)
    drop = box["token"]
    svg = evil_svg(base, drop)
    req = urllib.request.Request(BASE + "/s/%s/invoice.svg" % drop, data=svg, method="PUT")
    req.add_header("Content-Type", "image/svg+xml")
    with urllib.request.urlopen(req, timeout=60) as r:
        assert r.status == 201, r.status
    # The same bytes under a raster name and type: the console must not
    # trust the uploader's type either way.
    req = urllib.request.Request(BASE + "/s/%s/invoice.png" % drop, data=svg, method="PUT")
    req.add_header("Content-Type", "image/png")
    with urllib.request.urlopen(req, timeout=60) as r:
        assert r.status == 201, r.status

    seen = []  # what the file's script would do, as the browser sent it
    browser_ctx.route("**/__pwned/**", lambda route: (seen.append(route.request.url), route.fulfill(status=204)))
    def watch(req):
        if "/auth/refresh" not in req.url and "stolen" not in req.url:
            return
        try:
            other = req.frame.page != page
        except Exception:  # noqa: BLE001 - a navigation before its frame exists: another tab
            other = True
        if other:
            seen.append(req.method + " " + req.url)
    browser_ctx.on("request", watch)

    opened = []
    for name in ["invoice.svg", "invoice.png"]:
        page.goto(base + "/b/" + BUCKET + "/n1-inbox/")
        page.evaluate("() => { window.__blobs = window.__blobs || []; window.__blobs.length = 0; }")
        page.locator(".rows").get_by_role("button", name=name).click()
        body = page.locator("dialog.preview .preview-body")
        expect(body).to_be_visible()
        expect(body).not_to_contain_text("Loading")
        page.wait_for_timeout(500)
        urls = page.evaluate("""() => [...(window.__blobs || []), ...[...document.querySelectorAll(
            'dialog.preview [src], dialog.preview [href], dialog.preview [data]')].map(e => e.src || e.href || e.data)]""")
        urls = [u for u in dict.fromkeys(urls) if u and not u.startswith("data:")]
        log("N1: the preview of", name, "made", urls or "no URL")
        for u in urls:
            # "Open image in new tab": a new tab navigated to the URL...
            before = len(seen)
            tab = browser_ctx.new_page()
            try:
                tab.goto(u, timeout=10_000)
            except Exception as e:  # noqa: BLE001 - a revoked blob: URL does not load
                log("N1: new tab could not load", u[:60], "-", str(e).splitlines()[0][:80])
            tab.wait_for_timeout(1000)
            opened.append(tab)
            if len(seen) > before:
                log("N1: the SVG's script ran in a new tab opened with page.goto(%s)" % u[:60])
            before = len(seen)
            # ...and window.open from the console's page.
            try:
                with browser_ctx.expect_page(timeout=5_000) as pi:
                    page.evaluate("u => { window.open(u, '_blank'); }", u)
                pop = pi.value
                pop.wait_for_timeout(1000)
                opened.append(pop)
                if len(seen) > before:
                    log("N1: the SVG's script ran in a tab opened with window.open(%s)" % u[:60])
            except Exception as e:  # noqa: BLE001 - a blocked open is fine
                log("N1: window.open gave no page:", str(e).splitlines()[0][:80])
        page.keyboard.press("Escape")
    page.wait_for_timeout(1000)
    for t in opened:
        t.close()
    browser_ctx.unroute("**/__pwned/**")
    browser_ctx.remove_listener("request", watch)
    st, listing = api("GET", "/api/v1/buckets/%s/files?prefix=n1-inbox/" % BUCKET, token=admin_token)
    stolen = [f["key"] for f in listing.get("files", []) if "stolen" in f["key"]]
    assert not seen, ("the SVG's script ran in the console's origin", seen)
    assert not stolen, ("a token left through the drop box", stolen)
    log("N1: no script of the SVG ran, no token left (%d tabs opened)" % len(opened))


class Noise:
    """What a page reports as going wrong: console errors, page errors,
    failed requests and HTTP error answers (for "no noise on load")."""

    def __init__(self, page):
        self.items = []
        self.inflight = set()
        page.on("request", lambda r: self.inflight.add(r))
        page.on("requestfinished", lambda r: self.inflight.discard(r))
        page.on("requestfailed", lambda r: self.inflight.discard(r))
        page.on("console", lambda m: m.type == "error" and self.items.append("console error: " + m.text))
        page.on("pageerror", lambda e: self.items.append("page error: " + str(e)))
        page.on("requestfailed", lambda r: self.items.append("request failed: %s %s (%s)" % (r.method, r.url, r.failure)))
        page.on("response", lambda r: r.status >= 400 and self.items.append("HTTP %d: %s %s" % (r.status, r.request.method, r.url)))

    def settle(self, page, timeout_ms=10_000):
        """Waits until no request of the page is in flight (Playwright's
        networkidle does not wait again once the first load reached it)."""
        waited = 0
        while self.inflight and waited < timeout_ms:
            page.wait_for_timeout(50)
            waited += 50
        page.wait_for_timeout(100)

    def mark(self):
        return len(self.items)

    def since(self, mark):
        return self.items[mark:]


def quiet_load(page, noise, url, ready, what):
    """Loads url, waits for ready (a locator) and the network to settle, and
    asserts that nothing went wrong on the way. The page as it was settles
    first: a request of the previous document still in flight is aborted by
    the navigation (net::ERR_ABORTED), which is the browser leaving a page,
    not noise of the page being loaded (CI saw it once with /api/v1/me
    fetched right after signing in)."""
    noise.settle(page)
    m = noise.mark()
    page.goto(url)
    expect(ready).to_be_visible()
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(300)
    assert not noise.since(m), ("noise on load, " + what, noise.since(m))
    log("no console noise on load:", what)


AXE_REPORT = {}


def axe(page, name):
    """Runs axe-core over the page as it is and records its violations;
    fails on a serious or critical one. axe is evaluated through the
    DevTools protocol (page.evaluate): the console's CSP refuses the inline
    script that page.add_script_tag would add."""
    if not page.evaluate("() => !!window.axe"):
        page.evaluate(open(AXE).read())
    res = page.evaluate("""async () => { const r = await axe.run(document, {resultTypes: ['violations']});
        return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.length,
            targets: v.nodes.slice(0, 3).map(n => n.target.join(' '))})); }""")
    AXE_REPORT[name] = res
    bad = [v for v in res if v["impact"] in ("serious", "critical")]
    minor = ["%s (%s, %d)" % (v["id"], v["impact"], v["nodes"]) for v in res if v not in bad]
    log("axe %s: %d serious or critical, other: %s" % (name, len(bad), ", ".join(minor) or "none"))
    assert not bad, ("axe: serious or critical violations on " + name, bad)


def no_overflow(page, what):
    """At the page's width, neither the document nor a table is wider than
    its box (scrollWidth vs clientWidth)."""
    got = page.evaluate("""() => {
        const d = document.documentElement;
        const out = [['document', d.scrollWidth, d.clientWidth]];
        document.querySelectorAll('table').forEach((t, i) => out.push(['table ' + (t.className || i), t.scrollWidth, t.clientWidth,
            t.parentElement.scrollWidth, t.parentElement.clientWidth]));
        return out; }""")
    wide = [g for g in got if g[1] > g[2] or (len(g) > 3 and g[3] > g[4])]
    if wide:
        culprits = page.evaluate("""() => [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5)
            .slice(0, 8).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))""")
        log("wider than the screen:", culprits)
    assert not wide, ("horizontal overflow at %s" % what, wide)
    log("no horizontal overflow:", what, ", ".join("%s %d/%d" % (g[0], g[1], g[2]) for g in got))


def focus_stays_in(page, dialog, presses=12):
    """Tab and Shift+Tab, many times, never take the focus out of dialog."""
    for key in ["Tab"] * presses + ["Shift+Tab"] * presses:
        page.keyboard.press(key)
        inside = dialog.evaluate("d => d.contains(document.activeElement) && document.activeElement !== d")
        assert inside, ("focus left the dialog after " + key, page.evaluate("() => document.activeElement.outerHTML.slice(0, 120)"))


def active_key(page):
    return page.evaluate("() => document.activeElement && document.activeElement.dataset && document.activeElement.dataset.key")


def press_to(page, key, want):
    """Presses key and waits until the focused row is want (None: no row)."""
    page.keyboard.press(key)
    try:
        page.wait_for_function("k => ((document.activeElement && document.activeElement.dataset && document.activeElement.dataset.key) || null) === k",
                               arg=want, timeout=5_000)
    except Exception:  # noqa: BLE001 - the assertion below says what is wrong
        pass
    got = active_key(page)
    assert got == want, ("after %s the focused row is %r, want %r" % (key, got, want))


def dialog_named(page, name):
    return page.get_by_role("dialog", name=name)


def versions_flow(browser, base):
    """Versions and the trash: versioning switched on in the bucket list,
    a file uploaded twice, its versions panel (a version downloaded, the
    first restored), the file deleted, found among the deleted files and
    undeleted; axe and 375 px on the panel and the trash."""
    bucket = "versions-%d" % (int(time.time()) % 100000)
    token = login(ADMIN_EMAIL, ADMIN_PW)
    st, _ = api("POST", "/api/v1/buckets", {"name": bucket}, token=token)
    assert st == 201, st
    first, second = b"the first version\n" * 50, b"the second version, longer\n" * 80
    v1 = write(os.path.join(WORK, "v1", "doc.txt"), first)
    v2 = write(os.path.join(WORK, "v2", "doc.txt"), second)
    ctx = browser.new_context(viewport={"width": 1440, "height": 900}, accept_downloads=True)
    ctx.set_default_timeout(TIMEOUT)
    page = ctx.new_page()
    PAGES.append(page)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    sign_in(page, base, ADMIN_EMAIL, ADMIN_PW)

    # The bucket setting: off, then on.
    switch = page.get_by_label("Versioning of " + bucket)
    expect(switch).to_have_value("")
    switch.select_option("Enabled")
    expect(page.get_by_role("status").filter(has_text="keeps versions now")).to_be_visible()
    st, b = api("GET", "/api/v1/buckets/" + bucket, token=token)
    assert st == 200 and b.get("versioning") == "Enabled", (st, b)
    expect(page.get_by_label("Versioning of " + bucket)).to_have_value("Enabled")
    expect(page.get_by_label("Versioning of " + bucket).locator("option")).to_have_count(2)  # never off again
    axe(page, "buckets, versioning")
    log("versioning switched on in the bucket list")

    # Upload doc.txt twice.
    page.get_by_role("link", name=bucket).click()
    upload_panel(page, True)
    page.locator(".uppy-Dashboard-input").first.set_input_files([v1])
    wait_uploads_complete(page, 1)
    page.get_by_role("button", name="Add more").click()
    page.locator(".uppy-Dashboard-input").first.set_input_files([v2])
    wait_uploads_complete(page, 1)
    page.get_by_role("button", name="Done").click()
    row = page.locator('.rows [data-key="doc.txt"]')
    expect(row).to_be_visible()

    # The versions panel: two versions, the newest first and latest.
    row.get_by_role("checkbox").check()
    page.get_by_role("button", name="Versions", exact=True).click()
    dlg = dialog_named(page, "Versions of doc.txt")
    expect(dlg).to_be_visible()
    versions = dlg.locator("tbody tr")
    expect(versions).to_have_count(2)
    expect(versions.nth(0)).to_contain_text("latest")
    expect(versions.nth(0)).to_contain_text("2.1 KiB")
    expect(versions.nth(1)).to_contain_text("900 B")
    expect(versions.nth(1).get_by_role("button", name=re.compile("^Restore"))).to_be_visible()
    expect(versions.nth(0).get_by_role("button", name=re.compile("^Restore"))).to_have_count(0)
    focus_stays_in(page, dlg, 6)
    axe(page, "versions panel")
    shot(page, "versions")
    # Download the first version: the browser saves its bytes.
    with page.expect_download() as d:
        versions.nth(1).get_by_role("button", name=re.compile("^Download")).click()
    got = open(d.value.path(), "rb").read()
    assert got == first, ("the downloaded version", len(got))
    log("downloaded the first version:", len(got), "bytes")
    # Restore the first version, after a confirmation.
    versions.nth(1).get_by_role("button", name=re.compile("^Restore")).click()
    ask = page.get_by_role("dialog", name=re.compile(r"^Restore version 1 \("))
    expect(ask).to_be_visible()
    ask.get_by_role("button", name="Restore", exact=True).click()
    expect(ask).to_have_count(0)
    expect(versions).to_have_count(3)
    expect(dlg.get_by_role("status")).to_contain_text("is the latest version again")
    st, body = api("GET", "/api/v1/buckets/%s/files/doc.txt" % bucket, token=token, raw=True)
    assert st == 200 and body == first, ("after the restore", st, len(body))
    # Delete a version for good (the middle one, the second upload).
    versions.nth(1).get_by_role("button", name=re.compile("^Delete")).click()
    ask = page.get_by_role("dialog", name=re.compile(r"^Delete version 2 \("))
    expect(ask).to_contain_text("cannot be undone")
    ask.get_by_role("button", name="Delete version").click()
    expect(versions).to_have_count(2)
    log("restored the first version; deleted the second for good")
    page.set_viewport_size({"width": 375, "height": 800})
    no_overflow(page, "375 px, versions panel")
    axe(page, "versions panel, 375 px")
    page.set_viewport_size({"width": 1440, "height": 900})
    dlg.get_by_role("button", name="Close").click()
    expect(dlg).to_have_count(0)

    # Delete the file, find it among the deleted files, undelete it.
    page.locator("#more-actions").get_by_role("button", name="Delete", exact=True).click()
    ask = page.get_by_role("dialog", name="Delete doc.txt?")
    ask.get_by_role("button", name="Delete", exact=True).click()
    expect(row).to_have_count(0)
    page.get_by_role("button", name="Deleted files").click()
    trash = dialog_named(page, "Deleted files in " + bucket)
    expect(trash.locator('tr[data-key="doc.txt"]')).to_be_visible()
    axe(page, "deleted files")
    shot(page, "trash")
    page.set_viewport_size({"width": 375, "height": 800})
    no_overflow(page, "375 px, deleted files")
    page.set_viewport_size({"width": 1440, "height": 900})
    trash.get_by_role("button", name="Undelete doc.txt").click()
    expect(trash.get_by_role("status")).to_contain_text("doc.txt is back.")
    expect(trash.get_by_text("No deleted files.")).to_be_visible()
    trash.get_by_role("button", name="Close").click()
    expect(row).to_be_visible()
    st, body = api("GET", "/api/v1/buckets/%s/files/doc.txt" % bucket, token=token, raw=True)
    assert st == 200 and body == first, ("after the undelete", st, len(body))
    assert not errors, errors
    ctx.close()
    log("versions: restore, delete, trash and undelete in the console")


def main():
    proxy = Proxy(BASE)
    base = proxy.url
    files = {
        "notes.txt": b"hello from the console test\n" * 100,
        "photo.png": png(),
    }
    folder = os.path.join(WORK, "album")
    folder_files = {"album/one.txt": b"one\n" * 10, "album/sub/two.txt": b"two\n" * 20}
    paths = [write(os.path.join(WORK, "in", n), d) for n, d in files.items()]
    for n, d in folder_files.items():
        write(os.path.join(WORK, n), d)
    evil = write(os.path.join(WORK, "in2", "evil.html"),
                 b"<html><body><h1>evil</h1><script>try{parent.document.body.dataset.pwned='1'}catch(e){};"
                 b"document.body.dataset.pwned='1';</script></body></html>")
    big = os.urandom(24 << 20)
    bigpath = write(os.path.join(WORK, "in3", "big.bin"), big)
    extra = write(os.path.join(WORK, "in6", "extra.txt"), b"one more\n" * 300)

    # The non-admin account, signed up through the API: its first bucket
    # is named after the email's local part.
    local = "console-user-%d" % int(time.time())
    user_email, user_pw = local + "@example.com", "user password 1"
    st, signup = api("POST", "/api/v1/auth/signup", {"email": user_email, "password": user_pw})
    assert st == 201, st
    assert signup["bucket"]["name"] == local, ("signup bucket", signup["bucket"])
    log("signup bucket named after the user:", signup["bucket"]["name"])
    user_token = login(user_email, user_pw)
    st, body = api("GET", "/api/v1/admin/server", token=user_token)
    assert st == 403, ("non-admin GET /admin/server", st, body)
    admin_token = login(ADMIN_EMAIL, ADMIN_PW)
    st, _ = api("PUT", "/api/v1/admin/users/%s/quota" % signup["user"]["id"], {"quota_bytes": 1000}, token=admin_token)
    assert st == 200, st
    overquota = write(os.path.join(WORK, "in4", "too-big.bin"), os.urandom(4096))

    with sync_playwright() as pw, capture_failure():
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        ctx = browser.new_context(viewport={"width": 1440, "height": 900}, accept_downloads=True)
        ctx.set_default_timeout(TIMEOUT)
        ctx.add_init_script(BLOB_HOOK)
        page = ctx.new_page()
        PAGES.append(page)
        noise = Noise(page)
        console_errors = []
        page.on("console", lambda m: m.type == "error" and console_errors.append(m.text))
        page.on("console", lambda m: os.environ.get("CONSOLE_DEBUG") and log("browser:", m.type, m.text))
        page.on("pageerror", lambda e: console_errors.append(str(e)))

        # Signed out: the sign-in page loads without a failed request or a
        # console error (no 400 from /auth/refresh: /auth/resume answers
        # 200 "not signed in").
        quiet_load(page, noise, base + "/", page.get_by_role("heading", name="Sign in to Coffer"), "signed out")
        shot(page, "login")
        axe(page, "sign-in")
        page.get_by_role("link", name="Create one").click()
        expect(page.get_by_role("heading", name="Create an account")).to_be_visible()
        axe(page, "sign-up")
        signed_in_at = time.time()
        sign_in(page, base, ADMIN_EMAIL, ADMIN_PW)
        log("signed in")

        # The session survives a reload (the refresh cookie, through
        # /auth/resume), quietly.
        quiet_load(page, noise, base + "/buckets", page.get_by_role("link", name="Admin", exact=True), "signed in, administrator")
        log("reload kept the session (cookie resume)")

        # Buckets: a name against the rule is explained in words, as it is
        # typed; the list shows each bucket's contents.
        name_field = page.get_by_label("Name", exact=True)
        name_field.fill("My_Files")
        expect(page.locator("#bucket-problem")).to_have_text("Only lower-case letters, digits, hyphens (-) and dots (.) are allowed.")
        expect(name_field).to_have_attribute("aria-invalid", "true")
        expect(page.locator("#bucket-rule")).to_contain_text("3 to 63 characters")
        name_field.fill("ab")
        expect(page.locator("#bucket-problem")).to_contain_text("3 to 63 characters")
        name_field.fill(BUCKET)
        expect(page.locator("#bucket-problem")).to_have_text("")
        page.get_by_role("button", name="Create bucket").click()
        expect(page.get_by_role("link", name=BUCKET)).to_be_visible()
        expect(page.locator('tr[data-bucket="%s"] td.contents' % BUCKET)).to_have_text("0 objects, 0 B")
        shot(page, "buckets")
        axe(page, "buckets")
        page.get_by_role("link", name=BUCKET).click()
        expect(page.get_by_role("navigation", name="Breadcrumbs")).to_contain_text(BUCKET)

        # Upload two files through the file input and a folder through
        # the folder input (webkitdirectory), then one by drag and drop.
        # Each batch after "Add more" is counted alone, in MiB.
        upload_panel(page, True)
        page.locator(".uppy-Dashboard-input").first.set_input_files(paths)
        wait_uploads_complete(page, 2)
        expect(page.locator(".upload-summary")).to_contain_text("2 files uploaded")
        page.get_by_role("button", name="Add more").click()
        page.locator(".uppy-Dashboard-input[webkitdirectory]").set_input_files(folder)
        wait_uploads_complete(page, 2)
        expect(page.locator(".upload-summary")).to_contain_text("2 files uploaded")
        page.get_by_role("button", name="Add more").click()
        dt = page.evaluate_handle("""() => { const dt = new DataTransfer();
            dt.items.add(new File(['dropped by drag and drop\\n'], 'dropped.txt', {type: 'text/plain'})); return dt; }""")
        page.locator(".uppy-Dashboard-AddFiles").dispatch_event("dragover", {"dataTransfer": dt})
        page.locator(".uppy-Dashboard").first.dispatch_event("drop", {"dataTransfer": dt})
        wait_uploads_complete(page, 1)
        expect(page.locator(".upload-summary")).to_contain_text("1 file uploaded, 25 B")
        axe(page, "upload panel")
        # Nothing in the upload panel moves by itself (issue 23): Uppy's
        # transitions and animations cost the browser more CPU than the bytes.
        moving = page.evaluate("""() => [...document.querySelectorAll('.uppy-Root, .uppy-Root *')].filter((e) => {
            const s = getComputedStyle(e);
            return s.transitionDuration.split(',').some((d) => parseFloat(d) > 0) || s.animationName !== 'none';
          }).map((e) => e.getAttribute('class')).slice(0, 5)""")
        assert not moving, "elements of the upload panel with a transition or animation: %s" % moving
        sizes = page.locator(".uppy-Dashboard-Item-statusSize").all_inner_texts()
        assert sizes and all(re.search(r"\d (B|KiB|MiB|GiB)$", t.strip()) for t in sizes), sizes
        shot(page, "upload")
        rows = page.locator(".rows")
        for name in ["notes.txt", "photo.png", "album/", "dropped.txt"]:
            expect(rows.locator('[data-key="%s"]' % name)).to_be_visible()
        log("uploaded: two files, a folder, a dropped file; counts per batch:", page.locator(".upload-summary").inner_text())
        # "Done" closes the panel, and the list takes the room back.
        page.get_by_role("button", name="Done").click()
        expect(page.get_by_role("button", name="Upload", exact=True)).to_have_attribute("aria-expanded", "false")
        expect(page.locator(".upload")).to_have_count(0)
        box = page.locator(".rows").bounding_box()
        assert box["y"] + box["height"] <= 900 and box["height"] > 500, box
        shot(page, "browser")
        axe(page, "file browser")

        # Preview the image: from a blob: typed by the console from the
        # bytes (PNG), revoked once the image has loaded (issue 18, N1).
        page.evaluate("() => { window.__blobs.length = 0; window.__blobTypes.length = 0; }")
        rows.get_by_role("button", name="photo.png").click()
        img = page.locator("dialog.preview img")
        expect(img).to_be_visible()
        page.wait_for_function("() => { const i = document.querySelector('dialog.preview img'); return i && i.complete && i.naturalWidth === 64; }")
        blobs = page.evaluate("() => window.__blobs.map((u, i) => [u, window.__blobTypes[i]])")
        assert [t for _, t in blobs] == ["image/png"], blobs
        assert img.get_attribute("src") == blobs[0][0], (img.get_attribute("src"), blobs)
        state = page.evaluate("""u => new Promise((done) => { const i = new Image();
            i.onload = () => done('open'); i.onerror = () => done('revoked'); i.src = u; })""", blobs[0][0])
        assert state == "revoked", "the preview's blob: URL is still open after the image loaded"
        shot(page, "preview")
        axe(page, "preview")
        # The preview is bookmarkable (?file=) and steps through the files.
        assert page.url.endswith("/b/%s/?file=photo.png" % BUCKET), page.url
        page.get_by_role("button", name="Previous file").click()
        expect(page.get_by_role("dialog", name="Preview of notes.txt")).to_be_visible()
        assert page.url.endswith("?file=notes.txt"), page.url
        page.keyboard.press("ArrowRight")
        expect(page.get_by_role("dialog", name="Preview of photo.png")).to_be_visible()
        page.reload()
        expect(page.get_by_role("dialog", name="Preview of photo.png")).to_be_visible()
        page.get_by_role("button", name="Close preview").click()
        expect(page.locator("dialog.preview")).to_have_count(0)
        assert page.url.endswith("/b/%s/" % BUCKET), page.url
        rows = page.locator(".rows")
        log("image preview; bookmarkable, previous/next")

        # Issue 18, N1: an SVG with a script, previewed and opened in new tabs.
        svg_exploit(ctx, page, base, admin_token)
        page.goto(base + "/b/" + BUCKET + "/")
        rows = page.locator(".rows")

        # Download one file and compare its SHA-256.
        page.get_by_label("Select notes.txt").check()
        with page.expect_download() as d:
            page.get_by_role("button", name="Download", exact=True).click()
        got = open(d.value.path(), "rb").read()
        assert sha(got) == sha(files["notes.txt"]), "downloaded notes.txt differs"
        # Streamed by the browser's download manager from a download
        # grant, not saved from a blob: held in memory.
        assert "/s/" in d.value.url and not d.value.url.startswith("blob:"), d.value.url
        page.get_by_label("Select notes.txt").uncheck()
        log("download: SHA-256 matches, streamed from", d.value.url.split("/s/")[0] + "/s/…")

        # Zip of the folder.
        page.get_by_label("Select album/").check()
        with page.expect_download() as d:
            page.get_by_role("button", name="Download", exact=True).click()
        assert "/s/" in d.value.url and d.value.url.endswith("?zip=1"), d.value.url
        z = zipfile.ZipFile(d.value.path())
        names = sorted(z.namelist())
        assert any(n.endswith("one.txt") for n in names) and any(n.endswith("sub/two.txt") for n in names), names
        for n in names:
            if n.endswith("sub/two.txt"):
                assert z.read(n) == folder_files["album/sub/two.txt"]
        page.get_by_label("Select album/").uncheck()
        log("zip of the folder:", names)

        # An uploaded HTML file, previewed, runs no script. IndexedDB is
        # slowed first: the panel's saved state (finished files only) must
        # not come back over a file added meanwhile (Golden Retriever's
        # restore replaced the file list and the upload vanished from the
        # panel, CI under load).
        assert "console-upload" in stored_state(page), "no saved panel state"
        slow_indexeddb(page, 2000)
        upload_panel(page, True)
        page.locator(".uppy-Dashboard-input").first.set_input_files([evil])
        wait_uploads_complete(page, 1)
        # The restore opens IndexedDB twice, one after the other: 4 s.
        page.wait_for_timeout(5000)
        expect(page.locator(".uppy-Dashboard-Item.is-complete")).to_have_count(1)
        upload_panel(page, False)
        rows.get_by_role("button", name="evil.html").click()
        expect(page.get_by_test_id("preview-text")).to_contain_text("<script>")
        page.wait_for_timeout(500)
        assert page.evaluate("() => document.body.dataset.pwned") is None, "the HTML's script ran"
        for f in page.frames:
            assert f.evaluate("() => document.body && document.body.dataset.pwned") is None, "script ran in a frame"
        page.get_by_role("button", name="Close preview").click()
        log("HTML preview ran no script")

        # Markdown is rendered, sanitized: headings and emphasis, no script,
        # no event handler, no javascript: link.
        md = (b"# Coffer notes\n\nSome **bold** text and a [link](javascript:document.body.dataset.pwned='link').\n\n"
              b"<script>document.body.dataset.pwned='md'</script>\n\n<img src=x onerror=\"document.body.dataset.pwned='img'\">\n\n"
              b"<a href=\"#\" onclick=\"document.body.dataset.pwned='click'\">click</a> and [a site](https://example.com/)\n")
        assert put("/api/v1/buckets/%s/files/readme.md" % BUCKET, md, "text/markdown", admin_token) in (200, 201)
        assert put("/api/v1/buckets/%s/files/paper.pdf" % BUCKET, pdf(), "application/pdf", admin_token) in (200, 201)
        assert put("/api/v1/buckets/%s/files/clip.mp4" % BUCKET, os.urandom(256 << 10), "video/mp4", admin_token) in (200, 201)
        page.reload()
        rows = page.locator(".rows")
        errors_before = len(console_errors)
        rows.get_by_role("button", name="readme.md").click()
        mdbox = page.get_by_test_id("preview-markdown")
        expect(mdbox.get_by_role("heading", name="Coffer notes")).to_be_visible()
        expect(mdbox.locator("strong")).to_have_text("bold")
        assert mdbox.locator("script").count() == 0
        assert mdbox.locator("[onerror], [onclick], img").count() == 0
        for href in mdbox.locator("a").evaluate_all("as => as.map(a => a.getAttribute('href') || '')"):
            assert not href.lower().startswith("javascript:"), href
        site = mdbox.get_by_role("link", name="a site")
        assert site.get_attribute("target") == "_blank" and site.get_attribute("rel") == "noopener noreferrer", site.evaluate("a => a.outerHTML")
        page.wait_for_timeout(300)
        assert page.evaluate("() => document.body.dataset.pwned") is None, "markdown ran script"
        # Chromium reports a CSP violation when DOMPurify parses the
        # markdown's HTML (an inert document) holding handler attributes:
        # the CSP refusing them, on top of the sanitizer removing them.
        # Those reports are expected here; nothing else is.
        csp = "Executing inline event handler violates the following Content Security Policy"
        md_errors = console_errors[errors_before:]
        del console_errors[errors_before:]
        assert all(e.startswith(csp) for e in md_errors), md_errors
        shot(page, "preview-markdown")
        page.get_by_role("button", name="Close preview").click()
        log("markdown rendered, sanitized")

        # PDF: shown in an iframe from a short-lived /s/ link of the file
        # (Chromium's PDF viewer, which refuses to render in a sandboxed
        # frame: docs/console.md), never from a blob: of the file's bytes.
        rows.get_by_role("button", name="paper.pdf").click()
        frame = page.locator("dialog.preview iframe.preview-pdf")
        expect(frame).to_be_visible()
        src = frame.get_attribute("src")
        assert src.startswith("/s/"), src
        box = frame.bounding_box()
        assert box and box["width"] > 200 and box["height"] > 200, box
        page.wait_for_timeout(1000)
        shot(page, "preview-pdf")
        page.get_by_role("button", name="Close preview").click()
        log("PDF preview from", src[:40])

        # Video: streamed with Range from a short-lived grant, deleted
        # when the preview closes.
        ranged = len(proxy.ranged)
        rows.get_by_role("button", name="clip.mp4").click()
        video = page.locator("dialog.preview video")
        expect(video).to_be_visible()
        assert video.get_attribute("src").startswith("/s/"), video.get_attribute("src")
        deadline = time.time() + 20
        while len(proxy.ranged) == ranged:
            assert time.time() < deadline, "no Range request for the video"
            time.sleep(0.1)
        log("video streamed with Range:", proxy.ranged[ranged:][:2])
        page.get_by_role("button", name="Close preview").click()
        page.wait_for_timeout(500)

        # Leaving the page with a preview open (a navigation, a closed
        # tab) runs no clean-up: the grant is revoked on pagehide, by a
        # keepalive request that outlives the page. Checked below.
        rows.get_by_role("button", name="paper.pdf").click()
        expect(page.locator("dialog.preview iframe.preview-pdf")).to_be_visible()
        page.goto(base + "/b/" + BUCKET + "/")
        rows = page.locator(".rows")
        expect(rows.get_by_role("button", name="paper.pdf")).to_be_visible()

        # The console's own grants (downloads, previews) are no share
        # links: none in the list, none left active, the spent ones gone.
        st, shares = api("GET", "/api/v1/shares", token=admin_token)
        assert st == 200 and not [x for x in shares["shares"] if x.get("grant") or (x.get("note") or "").startswith("console ")], shares
        # The preview's grant is revoked when the preview closes, by a
        # request of its own: wait for it (a busy machine), never skip it.
        deadline = time.time() + 15
        while True:
            st, grants = api("GET", "/api/v1/shares?grants=1", token=admin_token)
            held = [x for x in grants["shares"] if x.get("grant")]
            ok = all(x["state"] == "active" and x.get("note") == "console download" for x in held) and len(held) <= 2
            if ok or time.time() > deadline:
                break
            time.sleep(0.2)
        assert ok, held
        log("no console grants in the share list;", len(held), "download grant(s) still usable, none spent")

        # Filter: part of a name, any case; "No files match" when nothing does.
        page.get_by_label("Filter").fill("OTES")
        expect(rows.locator('[data-key="notes.txt"]')).to_be_visible()
        expect(rows.locator('[data-key="photo.png"]')).to_have_count(0)
        page.get_by_label("Filter").fill("zzz-none")
        expect(page.get_by_text("No files match “zzz-none”.")).to_be_visible()
        expect(page.get_by_text("This folder is empty")).to_have_count(0)
        page.get_by_label("Filter").fill("")
        expect(rows.locator('[data-key="photo.png"]')).to_be_visible()
        log("filter: substring, any case; 'No files match'")

        # New folder: the console's dialog (focus kept inside it, the name
        # checked as it is typed), an empty marker object that stays.
        page.get_by_role("button", name="New folder").click()
        dlg = dialog_named(page, "New folder")
        expect(dlg).to_be_visible()
        focus_stays_in(page, dlg)
        dlg.get_by_label("Folder name").fill("a/b")
        expect(dlg.locator("#ask-problem")).to_contain_text("has no “/”")
        dlg.get_by_role("button", name="Create folder").click()
        expect(dlg).to_be_visible()
        dlg.get_by_label("Folder name").fill("projects")
        expect(dlg.locator("#ask-problem")).to_have_text("")
        axe(page, "new folder dialog")
        dlg.get_by_role("button", name="Create folder").click()
        expect(dlg).to_have_count(0)
        expect(rows.locator('[data-key="projects/"]')).to_be_visible()
        page.reload()
        rows = page.locator(".rows")
        expect(rows.locator('[data-key="projects/"]')).to_be_visible()
        rows.get_by_role("link", name="projects/").click()
        expect(page.get_by_text("This folder is empty. Upload files, or create a folder.")).to_be_visible()
        page.go_back()
        rows = page.locator(".rows")
        expect(rows.locator('[data-key="projects/"]')).to_be_visible()
        st, listing = api("GET", "/api/v1/buckets/%s/files?delimiter=/" % BUCKET, token=admin_token)
        assert "projects/" in listing.get("folders", []), listing
        log("a new folder persists (an empty projects/ object)")

        # Keyboard: the grid is one Tab stop, the arrows move in it, the
        # focus ring is the row's own (not clipped by the name's cell),
        # Delete asks to delete the row.
        rows.locator('[data-key="projects/"]').focus()
        keys = rows.evaluate("r => [...r.querySelectorAll('[role=row]')].map(e => e.dataset.key)")
        press_to(page, "ArrowDown", keys[keys.index("projects/") + 1])
        ring = page.evaluate("() => { const s = getComputedStyle(document.activeElement); return [s.outlineStyle, s.outlineOffset]; }")
        assert ring[0] == "solid" and ring[1].startswith("-"), ring
        press_to(page, "ArrowUp", "projects/")
        press_to(page, "End", keys[-1])
        last = keys[-1]
        press_to(page, "Home", "album/")
        press_to(page, "Tab", None)
        press_to(page, "Shift+Tab", "album/")
        press_to(page, "End", last)
        page.keyboard.press("Delete")
        dlg = dialog_named(page, "Delete %s?" % last)
        expect(dlg).to_be_visible()
        focus_stays_in(page, dlg, 6)
        page.keyboard.press("Escape")
        expect(dlg).to_have_count(0)
        page.wait_for_function("k => document.activeElement && document.activeElement.dataset.key === k", arg=last, timeout=5_000)
        log("keyboard: one Tab stop, arrows, Home/End, Delete; focus kept in dialogs and given back")

        # Share the file; open the link in a fresh context without credentials.
        page.get_by_label("Select notes.txt").check()
        page.get_by_role("button", name="Share", exact=True).click()
        page.get_by_role("button", name="Create link").click()
        link = page.locator("#share-url").input_value()
        assert "/share#" in link, link
        shot(page, "share-dialog")
        axe(page, "share dialog")
        page.keyboard.press("Escape")
        page.get_by_label("Select notes.txt").uncheck()
        st, second_link = api("POST", "/api/v1/shares", {"bucket": BUCKET, "key": "photo.png", "note": "the photo, as promised"}, token=admin_token)
        assert st == 201, second_link
        anon = browser.new_context(viewport={"width": 375, "height": 800}, accept_downloads=True)
        ap = anon.new_page()
        anoise = Noise(ap)
        ap.goto(link)
        expect(ap.get_by_role("heading", name="notes.txt")).to_be_visible()
        expect(ap.get_by_text("Available until")).to_be_visible()
        shot(ap, "share-page-mobile")
        no_overflow(ap, "375 px, share page (file)")
        with ap.expect_download() as d:
            ap.get_by_role("link", name="Download").click()
        assert sha(open(d.value.path(), "rb").read()) == sha(files["notes.txt"])
        # Another link in the same tab (only the fragment differs): the
        # page shows the other file, its note and its preview (from /s/).
        ap.goto(base + "/share#" + second_link["token"])
        expect(ap.get_by_role("heading", name="photo.png")).to_be_visible()
        expect(ap.get_by_test_id("share-note")).to_have_text("the photo, as promised")
        pimg = ap.locator(".share-preview img")
        expect(pimg).to_be_visible()
        assert pimg.get_attribute("src").startswith("/s/"), pimg.get_attribute("src")
        ap.wait_for_function("() => { const i = document.querySelector('.share-preview img'); return i && i.complete && i.naturalWidth === 64; }")
        axe(ap, "share page, file")
        ap.goto(link)
        expect(ap.get_by_role("heading", name="notes.txt")).to_be_visible()
        assert not [x for x in anoise.items if "/s/" not in x], anoise.items
        log("share link opened without credentials; another link in the same tab shows the other file")

        # Revoke it (the console's dialog): the link fails, in words.
        page.get_by_role("link", name="Shares").click()
        expect(page.get_by_role("heading", name="Share links")).to_be_visible()
        expect(page.get_by_role("button", name="Revoke link to notes.txt")).to_be_visible()
        shot(page, "shares")
        axe(page, "shares")
        page.get_by_role("button", name="Revoke link to notes.txt").first.click()
        dlg = dialog_named(page, "Revoke this link?")
        dlg.get_by_role("button", name="Revoke").click()
        expect(page.get_by_text("Link revoked.")).to_be_visible()
        ap.goto(link.replace("/share#", "/share?again#"))
        expect(ap.get_by_role("alert")).to_contain_text("This link has been revoked by the person who shared it.")
        axe(ap, "share page, a revoked link")
        # A password: the page asks for it, then shows the file.
        st, locked = api("POST", "/api/v1/shares", {"bucket": BUCKET, "key": "notes.txt", "password": "open sesame"}, token=admin_token)
        assert st == 201, locked
        ap.goto(base + "/share#" + locked["token"])
        expect(ap.get_by_label("This link needs a password")).to_be_visible()
        axe(ap, "share page, password")
        ap.get_by_label("This link needs a password").fill("open sesame")
        ap.get_by_role("button", name="Unlock").click()
        expect(ap.get_by_role("heading", name="notes.txt")).to_be_visible()
        # A used-up link says so in words, and its owner can delete it.
        st, once = api("POST", "/api/v1/shares", {"bucket": BUCKET, "key": "notes.txt", "max_downloads": 1}, token=admin_token)
        assert st == 201
        st, _ = api("GET", once["url"], raw=True)
        assert st == 200
        ap.goto(base + "/share#" + once["token"])
        expect(ap.get_by_role("alert")).to_have_text("This link has been used the maximum number of times.")
        anon.close()
        page.reload()
        for label in ["Delete link to notes.txt"]:
            page.get_by_role("button", name=label).first.click()
            expect(page.get_by_text("Link deleted.")).to_be_visible()
        page.get_by_role("button", name="Delete link to notes.txt").first.click()
        expect(page.locator("tr[data-share=%s]" % json.dumps(once["id"]))).to_have_count(0)
        log("revoked and used-up links fail in words; the owner deletes them")

        page.goto(base + "/b/" + BUCKET + "/")
        rows = page.locator(".rows")

        # Copy (the default name has no space) and rename (move into a
        # folder), each through the console's dialog; the server's problem
        # shows in the dialog.
        page.get_by_label("Select notes.txt").check()
        page.get_by_role("button", name="Copy", exact=True).click()
        dlg = dialog_named(page, "Copy notes.txt")
        expect(dlg.get_by_label("Key of the copy in " + BUCKET)).to_have_value("notes-copy.txt")
        dlg.get_by_role("button", name="Copy").click()
        expect(rows.locator('[data-key="notes-copy.txt"]')).to_be_visible()
        page.get_by_label("Select notes-copy.txt").check()
        page.get_by_role("button", name="Rename/move").click()
        dlg = dialog_named(page, "Rename or move notes-copy.txt")
        field = dlg.get_by_label("New key in " + BUCKET)
        field.fill("bad\x01name.txt")
        dlg.get_by_role("button", name="Move").click()
        expect(dlg.get_by_role("alert")).to_contain_text("Bad Request")
        log("the server's problem in the dialog:", dlg.get_by_role("alert").inner_text())
        field.fill("moved/notes-copy.txt")
        dlg.get_by_role("button", name="Move").click()
        expect(rows.locator('[data-key="moved/"]')).to_be_visible()
        expect(rows.locator('[data-key="notes-copy.txt"]')).to_have_count(0)
        st, data = api("GET", "/api/v1/buckets/" + BUCKET + "/files/moved/notes-copy.txt", token=admin_token, raw=True)
        assert st == 200 and data == files["notes.txt"], st
        log("copy and rename")

        # A drop box and a folder link, used anonymously: the folder's name,
        # its folders as folders, a preview from /s/, uploads through Uppy.
        st, box = api("POST", "/api/v1/shares", {"bucket": BUCKET, "prefix": "", "allow_upload": True, "note": "drop here"}, token=admin_token)
        assert st == 201, (st, box)
        anon = browser.new_context(viewport={"width": 1440, "height": 900})
        ap = anon.new_page()
        ap.goto(base + "/share#" + box["token"])
        expect(ap.get_by_role("heading", name="Drop files here")).to_be_visible()
        expect(ap.get_by_test_id("share-note")).to_have_text("drop here")
        expect(ap.get_by_role("button", name="album/")).to_be_visible()
        expect(ap.get_by_role("link", name="one.txt")).to_have_count(0)
        ap.get_by_role("button", name="album/").click()
        expect(ap.get_by_role("link", name="one.txt")).to_be_visible()
        expect(ap.get_by_role("button", name="sub/")).to_be_visible()
        ap.get_by_role("button", name="Shared folder").click()
        ap.get_by_role("button", name="Preview photo.png").click()
        pimg = ap.locator("dialog.preview img")
        expect(pimg).to_be_visible()
        assert pimg.get_attribute("src").startswith("/s/"), pimg.get_attribute("src")
        ap.get_by_role("button", name="Close preview").click()
        axe(ap, "share page, folder and drop box")
        ap.locator(".dropzone .uppy-Dashboard-input").first.set_input_files([extra])
        expect(ap.locator(".dropzone .uppy-Dashboard-Item.is-complete")).to_have_count(1, timeout=60_000)
        expect(ap.get_by_role("link", name="extra.txt")).to_be_visible()
        shot(ap, "share-dropbox")
        anon.close()
        st, data = api("GET", "/api/v1/buckets/" + BUCKET + "/files/extra.txt", token=admin_token, raw=True)
        assert st == 200 and data == open(extra, "rb").read(), st
        log("folder link: folders as folders, preview, drop box upload through Uppy")

        page.reload()
        rows = page.locator(".rows")
        page.get_by_label("Select dropped.txt").check()
        page.get_by_role("button", name="Delete", exact=True).click()
        dialog_named(page, "Delete dropped.txt?").get_by_role("button", name="Delete").click()
        expect(page.get_by_text("Deleted.")).to_be_visible()
        expect(rows.locator('[data-key="dropped.txt"]')).to_have_count(0)
        log("deleted")

        # An upload interrupted by cutting its connection resumes to completion.
        upload_panel(page, True)
        before = proxy.patches
        proxy.cut_after(6 << 20)
        page.locator(".uppy-Dashboard-input").first.set_input_files([bigpath])
        wait_uploads_complete(page, 1)
        assert proxy.cuts == 1, proxy.cuts
        assert proxy.patches - before >= 2, ("PATCH requests", proxy.patches - before)
        st, data = api("GET", "/api/v1/buckets/" + BUCKET + "/files/big.bin", token=admin_token, raw=True)
        assert st == 200 and sha(data) == sha(big), (st, len(data))
        log("interrupted upload resumed:", proxy.patches - before, "PATCH requests")
        upload_panel(page, False)

        # A page reload mid-upload: the upload comes back by itself (Golden
        # Retriever: the file list and bytes from IndexedDB) and resumes
        # from the server's offset (HEAD, then PATCH; no new tus upload).
        # The proxy slows the upload to 1 MiB/s so it is still running.
        slow = os.urandom(8 << 20)
        slowpath = write(os.path.join(WORK, "in5", "slow.bin"), slow)
        upload_panel(page, True)
        creations, heads, patches = proxy.creations, proxy.heads, proxy.patches
        proxy.throttle(1 << 20)
        mark = proxy.sent
        page.locator(".uppy-Dashboard-input").first.set_input_files([slowpath])
        deadline = time.time() + 30
        while proxy.sent - mark < (2 << 20):
            assert time.time() < deadline, "the slow upload did not start"
            time.sleep(0.1)
        assert proxy.creations == creations + 1, (proxy.creations, creations)
        expect(page.locator(".upload-summary")).to_contain_text("left", timeout=10_000)
        log("upload summary mid-way:", page.locator(".upload-summary").inner_text())
        # What the browser keeps to resume holds no access token (the tus
        # upload URL is kept; PATCH and HEAD still need the token).
        state = stored_state(page)
        assert "slow.bin" in state and "/api/v1/tus/" in state, state[:2000]
        assert proxy.tokens, "no bearer token seen"
        assert not any(t in state for t in proxy.tokens), "an access token is stored in the browser"
        page.reload()
        expect(page.locator(".uppy-Dashboard-Item")).to_have_count(1, timeout=TIMEOUT)
        log("reloaded mid-upload; the upload is back:", page.locator(".uppy-Dashboard-Item").inner_text().replace("\n", " "))
        wait_uploads_complete(page, 1)
        proxy.throttle(None)
        assert proxy.creations == creations + 1, "the upload was created again instead of resumed"
        assert proxy.heads > heads and proxy.patches >= patches + 2, (proxy.heads - heads, proxy.patches - patches)
        st, data = api("GET", "/api/v1/buckets/" + BUCKET + "/files/slow.bin", token=admin_token, raw=True)
        assert st == 200 and sha(data) == sha(slow), (st, len(data))
        assert page.evaluate("() => localStorage.getItem('coffer.uploads-pending')") is None
        log("reload mid-upload resumed by itself:", proxy.heads - heads, "HEAD,", proxy.patches - patches, "PATCH")
        upload_panel(page, False)

        # Keys, account, admin pages (screenshots), a key's secret once.
        page.get_by_role("link", name="S3 keys").click()
        page.get_by_role("button", name="Create key").click()
        expect(page.get_by_label("Secret access key")).to_be_visible()
        shot(page, "keys")
        axe(page, "S3 keys")
        page.get_by_role("button", name="Done").click()
        # A scoped key: bucket, folder, read only, 30 days; the list shows
        # them; the API agrees. Then an app token of the same scope.
        page.get_by_label("Bucket (optional)").fill(BUCKET)
        page.get_by_label("Folder prefix (optional)").fill("in/")
        page.get_by_label("Access").select_option("read")
        page.get_by_label("Expires in days (optional)").fill("30")
        page.get_by_role("button", name="Create key").click()
        expect(page.get_by_label("Secret access key")).to_be_visible()
        scoped_id = page.get_by_label("Access key ID").input_value()
        page.get_by_role("button", name="Done").click()
        row = page.locator('tr[data-key-id="%s"]' % scoped_id)
        expect(row).to_contain_text("read %s/in/*" % BUCKET)
        expect(row.locator("td").nth(3)).not_to_have_text("never")  # Expires
        st, listed = api("GET", "/api/v1/keys", token=admin_token)
        k = [k for k in listed["keys"] if k["access_key_id"] == scoped_id][0]
        assert k["scope"] == {"bucket": BUCKET, "prefix": "in/", "access": "read"}, k
        left = calendar.timegm(time.strptime(k["expires_at"][:19], "%Y-%m-%dT%H:%M:%S")) - time.time()
        assert 29.9 * 86400 < left <= 30 * 86400, k
        page.get_by_label("Kind").select_option("tokens")
        page.get_by_label("Access").select_option("write")
        page.get_by_label("Bucket (optional)").fill(BUCKET)
        page.get_by_role("button", name="Create app token").click()
        token = page.get_by_label("App token", exact=True).input_value()
        assert token.startswith("coffer_"), token
        page.get_by_role("button", name="Done").click()
        expect(page.locator("table.tokens")).to_contain_text("write %s/*" % BUCKET)
        st, _ = api("GET", "/api/v1/buckets/" + BUCKET + "/files", token=token)
        assert st == 403, ("a write-only app token listed the bucket", st)
        shot(page, "keys-scoped")
        axe(page, "S3 keys with scopes")
        log("scoped key and app token made in the console:", scoped_id)
        page.get_by_role("link", name="Account").click()
        expect(page.get_by_text("used", exact=False).first).to_be_visible()
        # "Signed in since" is this session's start, not the account's.
        since = page.get_by_test_id("session-since").get_attribute("datetime")
        t = calendar.timegm(time.strptime(since[:19], "%Y-%m-%dT%H:%M:%S"))
        assert signed_in_at - 5 <= t <= time.time() + 5, (since, signed_in_at)
        shot(page, "account")
        axe(page, "account")
        page.get_by_role("link", name="Admin", exact=True).click()
        expect(page.get_by_role("heading", name="Users")).to_be_visible()
        # The users table (the audit log's table below names the user too).
        expect(page.locator("table:not(.audit)").get_by_text(user_email, exact=True).first).to_be_visible()
        shot(page, "admin")
        axe(page, "admin")
        # The audit log's recent events (the server runs with --audit-log):
        # sign-ins are there; filtered to share links, only theirs.
        expect(page.get_by_role("heading", name="Audit log")).to_be_visible()
        audit_rows = page.locator("table.audit tbody tr")
        expect(audit_rows.filter(has_text="auth.signin").first).to_be_visible()
        page.get_by_label("Action", exact=True).fill("share.")
        page.get_by_role("button", name="Filter", exact=True).click()
        expect(audit_rows.filter(has_text="auth.signin")).to_have_count(0)
        expect(audit_rows.filter(has_text="share.create").first).to_be_visible()
        assert audit_rows.count() == audit_rows.filter(has_text="share.").count(), "the audit log filtered to share."
        page.get_by_role("button", name="Set quota of " + user_email).click()
        dlg = dialog_named(page, "Quota of " + user_email)
        dlg.get_by_label("Quota in GiB (0 = unlimited)").fill("-1")
        expect(dlg.locator("#ask-problem")).to_contain_text("0 or more")
        page.keyboard.press("Escape")

        # 375 px: no table and no page is wider than the screen; the file
        # toolbar is one row of buttons and the filter.
        page.set_viewport_size({"width": 375, "height": 800})
        for path, ready, what in [
            ("/buckets", page.get_by_role("heading", name="Buckets"), "buckets"),
            ("/shares", page.get_by_role("heading", name="Share links"), "shares"),
            ("/keys", page.get_by_role("heading", name="S3 access keys"), "S3 keys"),
            ("/account", page.get_by_role("heading", name="Account"), "account"),
            ("/admin", page.get_by_role("heading", name="Users"), "admin"),
            ("/b/" + BUCKET + "/", page.locator('[data-key="notes.txt"]'), "file browser"),
        ]:
            page.goto(base + path)
            expect(ready).to_be_visible()
            page.wait_for_load_state("networkidle")
            no_overflow(page, "375 px, " + what)
        bar = page.locator(".toolbar").bounding_box()
        assert bar["height"] < 100, ("the file toolbar at 375 px", bar)
        axe(page, "file browser, 375 px")
        shot(page, "browser-mobile")
        page.get_by_role("button", name="More").click()
        expect(page.get_by_role("button", name="Share this folder")).to_be_visible()
        page.goto(base + "/buckets")
        expect(page.locator('tr[data-bucket="%s"] .show-s' % BUCKET)).to_contain_text("objects")
        shot(page, "buckets-mobile")

        page.set_viewport_size({"width": 1440, "height": 900})
        page.emulate_media(color_scheme="dark")
        page.goto(base + "/b/" + BUCKET + "/")
        expect(page.locator('[data-key="notes.txt"]')).to_be_visible()
        shot(page, "browser-dark")
        axe(page, "file browser, dark")
        page.emulate_media(color_scheme="light")

        # Sign out.
        page.get_by_role("button", name="Sign out").click()
        expect(page.get_by_role("heading", name="Sign in to Coffer")).to_be_visible()
        quiet_load(page, noise, base + "/", page.get_by_role("heading", name="Sign in to Coffer"), "after signing out")
        log("signed out (a reload stays signed out)")

        # A non-admin never sees the admin pages, and loads without noise
        # (no 403 from an admin route).
        uctx = browser.new_context(viewport={"width": 1440, "height": 900})
        up = uctx.new_page()
        unoise = Noise(up)
        sign_in(up, base, user_email, user_pw)
        quiet_load(up, unoise, base + "/buckets", up.get_by_role("link", name=local), "signed in, not an administrator")
        expect(up.get_by_role("link", name="Admin", exact=True)).to_have_count(0)
        # Over quota: the upload fails with the problem's title and detail.
        up.get_by_role("link", name=local).click()
        up.get_by_role("button", name="Upload").click()
        up.locator(".uppy-Dashboard-input").first.set_input_files([overquota])
        alert = up.locator(".upload .banner")
        expect(alert).to_contain_text("Insufficient Storage: storage quota exceeded", timeout=20_000)
        assert '"type"' not in alert.inner_text() and "{" not in alert.inner_text(), alert.inner_text()
        shot(up, "upload-error")
        log("over quota:", alert.inner_text())
        up.goto(base + "/admin")
        expect(up.get_by_text("Administrators only.")).to_be_visible()
        expect(up.get_by_role("heading", name="Users")).to_have_count(0)
        uctx.close()
        log("non-admin: no admin pages")

        versions_flow(browser, base)

        bad = [e for e in console_errors if "Failed to load resource" not in e and "net::ERR" not in e]
        assert not bad, bad
        browser.close()
    with open(os.path.join(WORK, "axe.json"), "w") as f:
        json.dump(AXE_REPORT, f, indent=1)
    log("OK")


@contextlib.contextmanager
def capture_failure():
    """At a failure, while Playwright still runs: each page's URL, a
    screenshot, and what its upload panel says (the items' states, the
    status bar, the error banner), so a failure in CI explains itself."""
    try:
        yield
    except BaseException:
        for i, p in enumerate(PAGES):
            try:
                log("page at failure:", p.url)
                path = os.path.join(SHOTS or WORK, "failure-%d.png" % i)
                p.screenshot(path=path)
                log("screenshot:", path)
                state = p.evaluate("""() => ({
                    items: [...document.querySelectorAll('.uppy-Dashboard-Item')].map(e => e.className + ' ' + (e.innerText || '').replace(/\\s+/g, ' ').slice(0, 200)),
                    status: [...document.querySelectorAll('.uppy-StatusBar')].map(e => e.className + ' ' + (e.innerText || '').replace(/\\s+/g, ' ').slice(0, 200)),
                    banner: [...document.querySelectorAll('.upload .banner, [role=alert]')].map(e => (e.innerText || '').slice(0, 300)),
                })""")
                log("upload panel at failure:", json.dumps(state))
            except Exception as e:  # noqa: BLE001 - best effort
                log("no capture:", e)
        raise


if __name__ == "__main__":
    main()
