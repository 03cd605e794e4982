"""Browser test of Coffer's web console in a real Chromium (Playwright).

Run by console_test.go against a real `coffer serve`; reads its setup from
the environment:

  CONSOLE_URL       the file API listener (the console is at /)
  CONSOLE_ADMIN     email:password of an administrator
  CONSOLE_CHROMIUM  the Chromium binary (Debian's chromium)
  CONSOLE_SHOTS     folder for the screenshots (docs/console), optional
  CONSOLE_WORK      a scratch folder

The browser reaches the server through a TCP proxy in this script, so a
test can cut the connections of an upload in flight.
"""

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

    # The non-admin account, signed up through the API.
    user_email, user_pw = "console-user-%d@example.com" % int(time.time()), "user password 1"
    st, signup = api("POST", "/api/v1/auth/signup", {"email": user_email, "password": user_pw})
    assert st == 201, st
    user_token = login(user_email, user_pw)
    st, body = api("GET", "/api/v1/admin/server", token=user_token)
    assert st == 403, ("non-admin GET /admin/server", st, body)
    admin_token = login(ADMIN_EMAIL, ADMIN_PW)
    st, _ = api("PUT", "/api/v1/admin/users/%s/quota" % signup["user"]["id"], {"quota_bytes": 1000}, token=admin_token)
    assert st == 200, st
    overquota = write(os.path.join(WORK, "in4", "too-big.bin"), os.urandom(4096))

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        ctx = browser.new_context(viewport={"width": 1440, "height": 900}, accept_downloads=True)
        ctx.set_default_timeout(TIMEOUT)
        ctx.add_init_script(BLOB_HOOK)
        page = ctx.new_page()
        PAGES.append(page)
        console_errors = []
        page.on("console", lambda m: m.type == "error" and console_errors.append(m.text))
        page.on("console", lambda m: os.environ.get("CONSOLE_DEBUG") and log("browser:", m.type, m.text))
        page.on("pageerror", lambda e: console_errors.append(str(e)))

        # Sign in (the page before is the login form).
        page.goto(base + "/")
        expect(page.get_by_role("heading", name="Sign in to Coffer")).to_be_visible()
        shot(page, "login")
        sign_in(page, base, ADMIN_EMAIL, ADMIN_PW)
        log("signed in")

        # The session survives a reload: the refresh cookie, silently.
        page.reload()
        expect(page.get_by_role("heading", name="Buckets")).to_be_visible()
        expect(page.get_by_role("link", name="Admin")).to_be_visible()
        log("reload kept the session (cookie refresh)")

        # Create a bucket.
        page.get_by_label("Name").fill(BUCKET)
        page.get_by_role("button", name="Create bucket").click()
        expect(page.get_by_role("link", name=BUCKET)).to_be_visible()
        shot(page, "buckets")
        page.get_by_role("link", name=BUCKET).click()
        expect(page.get_by_role("navigation", name="Breadcrumbs")).to_contain_text(BUCKET)

        # Upload two files through the file input and a folder through
        # the folder input (webkitdirectory), then one by drag and drop.
        page.get_by_role("button", name="Upload").click()
        page.locator(".uppy-Dashboard-input").first.set_input_files(paths)
        wait_uploads_complete(page, 2)
        page.get_by_role("button", name="Add more").click()
        page.locator(".uppy-Dashboard-input[webkitdirectory]").set_input_files(folder)
        wait_uploads_complete(page, 4)
        page.get_by_role("button", name="Add more").click()
        dt = page.evaluate_handle("""() => { const dt = new DataTransfer();
            dt.items.add(new File(['dropped by drag and drop\\n'], 'dropped.txt', {type: 'text/plain'})); return dt; }""")
        page.locator(".uppy-Dashboard-AddFiles").dispatch_event("dragover", {"dataTransfer": dt})
        page.locator(".uppy-Dashboard").first.dispatch_event("drop", {"dataTransfer": dt})
        wait_uploads_complete(page, 5)
        shot(page, "upload")
        rows = page.locator(".rows")
        for name in ["notes.txt", "photo.png", "album/", "dropped.txt"]:
            expect(rows.locator('[data-key="%s"]' % name)).to_be_visible()
        log("uploaded: two files, a folder, a dropped file")
        page.get_by_role("button", name="Upload").click()  # close the panel
        shot(page, "browser")

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
        page.get_by_role("button", name="Close preview").click()
        log("image preview")

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
        # Streamed by the browser's download manager from a short-lived
        # share link, not saved from a blob: held in memory.
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

        # An uploaded HTML file, previewed, runs no script.
        upload_panel(page, True)
        page.locator(".uppy-Dashboard-input").first.set_input_files([evil])
        wait_uploads_complete(page, 1)
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
              b"<a href=\"#\" onclick=\"document.body.dataset.pwned='click'\">click</a>\n")
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
        assert mdbox.locator("[onerror], [onclick]").count() == 0
        for href in mdbox.locator("a").evaluate_all("as => as.map(a => a.getAttribute('href') || '')"):
            assert not href.lower().startswith("javascript:"), href
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

        # Video: streamed with Range from a short-lived share link,
        # revoked when the preview closes.
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
        st, shares = api("GET", "/api/v1/shares", token=admin_token)
        previews = [x for x in shares["shares"] if x.get("note") == "console preview" and x.get("key") == "clip.mp4"]
        assert previews and all(x["state"] == "revoked" for x in previews), previews

        # Share the file; open the link in a fresh context without credentials.
        page.get_by_label("Select notes.txt").check()
        page.get_by_role("button", name="Share", exact=True).click()
        page.get_by_role("button", name="Create link").click()
        link = page.locator("#share-url").input_value()
        assert "/share#" in link, link
        shot(page, "share-dialog")
        page.keyboard.press("Escape")
        page.get_by_label("Select notes.txt").uncheck()
        anon = browser.new_context(viewport={"width": 375, "height": 800}, accept_downloads=True)
        ap = anon.new_page()
        ap.goto(link)
        expect(ap.get_by_role("heading", name="notes.txt")).to_be_visible()
        shot(ap, "share-page-mobile")
        with ap.expect_download() as d:
            ap.get_by_role("link", name="Download").click()
        assert sha(open(d.value.path(), "rb").read()) == sha(files["notes.txt"])
        log("share link opened without credentials")

        # Revoke it: the link fails.
        page.get_by_role("link", name="Shares").click()
        expect(page.get_by_role("heading", name="Share links")).to_be_visible()
        shot(page, "shares")
        page.once("dialog", lambda dl: dl.accept())
        page.get_by_role("button", name="Revoke link to notes.txt").first.click()
        expect(page.get_by_text("Link revoked.")).to_be_visible()
        ap.goto(link.replace("/share#", "/share?again#"))
        expect(ap.get_by_role("alert")).to_contain_text("no longer available")
        anon.close()
        log("revoked link fails")

        # Delete with confirmation.
        page.go_back()
        page.goto(base + "/b/" + BUCKET + "/")
        rows = page.locator(".rows")

        # Copy and rename (move into a folder), each through a prompt.
        page.get_by_label("Select notes.txt").check()
        page.once("dialog", lambda dl: dl.accept("notes copy.txt"))
        page.get_by_role("button", name="Copy", exact=True).click()
        expect(rows.locator('[data-key="notes copy.txt"]')).to_be_visible()
        page.get_by_label("Select notes copy.txt").check()
        page.once("dialog", lambda dl: dl.accept("moved/notes copy.txt"))
        page.get_by_role("button", name="Rename/move").click()
        expect(rows.locator('[data-key="moved/"]')).to_be_visible()
        expect(rows.locator('[data-key="notes copy.txt"]')).to_have_count(0)
        st, data = api("GET", "/api/v1/buckets/" + BUCKET + "/files/moved/notes%20copy.txt", token=admin_token, raw=True)
        assert st == 200 and data == files["notes.txt"], st
        log("copy and rename")

        # A drop box: a folder link that takes uploads, used anonymously.
        st, box = api("POST", "/api/v1/shares", {"bucket": BUCKET, "prefix": "inbox/", "allow_upload": True}, token=admin_token)
        assert st == 201, (st, box)
        anon = browser.new_context(viewport={"width": 1440, "height": 900})
        ap = anon.new_page()
        ap.goto(base + "/share#" + box["token"])
        expect(ap.get_by_role("heading", name="Drop files here")).to_be_visible()
        ap.get_by_label("or choose files").set_input_files([paths[0]])
        expect(ap.get_by_role("link", name="notes.txt")).to_be_visible()
        anon.close()
        st, data = api("GET", "/api/v1/buckets/" + BUCKET + "/files/inbox/notes.txt", token=admin_token, raw=True)
        assert st == 200 and data == files["notes.txt"], st
        log("drop box upload")
        page.get_by_label("Select dropped.txt").check()
        page.once("dialog", lambda dl: dl.accept())
        page.get_by_role("button", name="Delete").click()
        expect(page.get_by_text("Deleted.")).to_be_visible()
        expect(rows.locator('[data-key="dropped.txt"]')).to_have_count(0)
        log("deleted")

        # An upload interrupted by cutting its connection resumes to completion.
        page.get_by_role("button", name="Upload").click()
        before = proxy.patches
        proxy.cut_after(6 << 20)
        page.locator(".uppy-Dashboard-input").first.set_input_files([bigpath])
        wait_uploads_complete(page, 1)
        assert proxy.cuts == 1, proxy.cuts
        assert proxy.patches - before >= 2, ("PATCH requests", proxy.patches - before)
        st, data = api("GET", "/api/v1/buckets/" + BUCKET + "/files/big.bin", token=admin_token, raw=True)
        assert st == 200 and sha(data) == sha(big), (st, len(data))
        log("interrupted upload resumed:", proxy.patches - before, "PATCH requests")
        page.get_by_role("button", name="Upload").click()

        # A page reload mid-upload: the upload comes back by itself (Golden
        # Retriever: the file list and bytes from IndexedDB) and resumes
        # from the server's offset (HEAD, then PATCH; no new tus upload).
        # The proxy slows the upload to 1 MiB/s so it is still running.
        slow = os.urandom(8 << 20)
        slowpath = write(os.path.join(WORK, "in5", "slow.bin"), slow)
        page.get_by_role("button", name="Upload").click()
        creations, heads, patches = proxy.creations, proxy.heads, proxy.patches
        proxy.throttle(1 << 20)
        mark = proxy.sent
        page.locator(".uppy-Dashboard-input").first.set_input_files([slowpath])
        deadline = time.time() + 30
        while proxy.sent - mark < (2 << 20):
            assert time.time() < deadline, "the slow upload did not start"
            time.sleep(0.1)
        assert proxy.creations == creations + 1, (proxy.creations, creations)
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
        page.get_by_role("button", name="Upload").click()

        # Keys, account, admin pages (screenshots), a key's secret once.
        page.get_by_role("link", name="S3 keys").click()
        page.get_by_role("button", name="Create key").click()
        expect(page.get_by_label("Secret access key")).to_be_visible()
        shot(page, "keys")
        page.get_by_role("button", name="Done").click()
        page.get_by_role("link", name="Account").click()
        expect(page.get_by_text("used", exact=False).first).to_be_visible()
        shot(page, "account")
        page.get_by_role("link", name="Admin").click()
        expect(page.get_by_role("heading", name="Users")).to_be_visible()
        expect(page.get_by_text(user_email)).to_be_visible()
        shot(page, "admin")
        page.set_viewport_size({"width": 375, "height": 800})
        page.goto(base + "/b/" + BUCKET + "/")
        expect(page.locator('[data-key="notes.txt"]')).to_be_visible()
        shot(page, "browser-mobile")

        page.set_viewport_size({"width": 1440, "height": 900})
        page.emulate_media(color_scheme="dark")
        page.goto(base + "/b/" + BUCKET + "/")
        expect(page.locator('[data-key="notes.txt"]')).to_be_visible()
        shot(page, "browser-dark")
        page.emulate_media(color_scheme="light")

        # Sign out.
        page.get_by_role("button", name="Sign out").click()
        expect(page.get_by_role("heading", name="Sign in to Coffer")).to_be_visible()
        page.reload()
        expect(page.get_by_role("heading", name="Sign in to Coffer")).to_be_visible()
        log("signed out (a reload stays signed out)")

        # A non-admin never sees the admin pages.
        uctx = browser.new_context(viewport={"width": 1440, "height": 900})
        up = uctx.new_page()
        sign_in(up, base, user_email, user_pw)
        expect(up.get_by_role("link", name="Account")).to_be_visible()
        up.wait_for_timeout(500)
        expect(up.get_by_role("link", name="Admin")).to_have_count(0)
        # Over quota: the upload fails with the problem's title and detail.
        up.get_by_role("link", name=signup["bucket"]["name"]).click()
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

        bad = [e for e in console_errors if "Failed to load resource" not in e and "net::ERR" not in e]
        assert not bad, bad
        browser.close()
    log("OK")


if __name__ == "__main__":
    try:
        main()
    except Exception:
        for p in PAGES:
            try:
                log("page at failure:", p.url)
                p.screenshot(path=os.path.join(WORK, "failure-%d.png" % PAGES.index(p)))
            except Exception as e:  # noqa: BLE001 - best effort
                log("no screenshot:", e)
        raise
