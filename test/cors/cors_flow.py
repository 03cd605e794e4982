"""Drives testdata/app.html in Chromium for test/cors: the page is served
from another origin than Coffer's; for each page named in the config it
calls window.run(cfg) and prints what happened as JSON."""
import json
import os
import sys

from playwright.sync_api import sync_playwright


def main():
    with open(os.environ["CORS_CONFIG"]) as f:
        cfg = json.load(f)
    out = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=os.environ["CORS_CHROMIUM"], args=["--no-sandbox"])
        try:
            for name, page_cfg in cfg.items():
                page = browser.new_page()
                console = []
                page.on("console", lambda m, c=console: c.append(m.text))
                page.goto(page_cfg["page"])
                res = page.evaluate("cfg => window.run(cfg)", page_cfg)
                res["console"] = console
                out[name] = res
                page.close()
        finally:
            browser.close()
    json.dump(out, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
