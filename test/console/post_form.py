"""A plain HTML form with a POST policy uploads a file in a real Chromium.

Run by post_form_test.go, which serves the form pages and checks storage:

  FORM_URL       the loopback origin serving /upload and /small (the forms)
  S3_URL         the S3 listener the forms post to
  FORM_CHROMIUM  the Chromium binary (Debian's chromium)
  FORM_WORK      a scratch folder: photo.txt (uploaded), big.bin (refused)
"""

import os
import sys
import urllib.parse

from playwright.sync_api import sync_playwright

FORM = os.environ["FORM_URL"].rstrip("/")
S3 = os.environ["S3_URL"].rstrip("/")
WORK = os.environ["FORM_WORK"]
TIMEOUT = 30_000


def main():
    photo = os.path.join(WORK, "photo.txt")
    with open(photo, "wb") as f:
        f.write(b"a photo, as a browser uploads it\n" * 100)
    big = os.path.join(WORK, "big.bin")
    with open(big, "wb") as f:
        f.write(os.urandom(64 * 1024))

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=os.environ["FORM_CHROMIUM"], args=["--no-sandbox"])
        page = browser.new_page()
        page.set_default_timeout(TIMEOUT)

        # The upload: the browser follows the 303 back to the app's page.
        page.goto(FORM + "/upload")
        page.set_input_files("#file", photo)
        with page.expect_navigation(url=FORM + "/done?*"):
            page.click("#send")
        u = urllib.parse.urlsplit(page.url)
        q = urllib.parse.parse_qs(u.query)
        assert q.get("key") == ["form/photo.txt"], page.url
        assert q.get("bucket") == ["post-form"], page.url
        assert len(q.get("etag", [""])[0].strip('"')) == 32, page.url
        assert "uploaded form/photo.txt" in page.inner_text("#done")
        print("uploaded:", page.url)

        # Too large for the policy's content-length-range: S3's error page.
        page.goto(FORM + "/small")
        page.set_input_files("#file", big)
        with page.expect_navigation(url=S3 + "/**") as nav:
            page.click("#send")
        resp = nav.value
        body = page.content()
        assert resp is not None and resp.status == 400, resp and resp.status
        assert "EntityTooLarge" in body, body[:2000]
        print("refused:", resp.status, "EntityTooLarge")
        browser.close()


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001 - the Go test shows the output
        print("FAILED:", repr(e))
        sys.exit(1)
