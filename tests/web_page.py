#!/usr/bin/env python3
"""Opens the page example_export_fashion_mnist writes (index.html beside the exported modules) in
headless Chromium, through WebGPU and through WebAssembly (?backend=wasm), and checks that the
labels the page shows for each model are the ones tg computed (samples.js). Writes a screenshot of
each run beside the page (screenshot-webgpu.png, screenshot-wasm.png).

Usage: web_page.py PAGE_DIR. Chromium: TG_CHROMIUM, else Debian's /usr/lib/chromium/chromium, else
chromium on PATH. Exit status 0 when both runs show tg's labels, 1 otherwise, 77 (skipped) when
Chromium or the page is missing, which under CI=true is a failure instead."""
import base64
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

IN_CI = os.environ.get("CI") == "true"


def skip(why):
    print(f"skipped: {why}")
    sys.exit(1 if IN_CI else 77)


def chromium():
    for c in (os.environ.get("TG_CHROMIUM"), "/usr/lib/chromium/chromium", shutil.which("chromium")):
        if c and os.access(c, os.X_OK):
            return c
    return None


class DevTools:
    """Chromium's DevTools protocol over --remote-debugging-pipe: JSON messages ended by NUL, read
    by the browser from its fd 3 and written to its fd 4."""

    def __init__(self, to_browser, from_browser):
        self.w, self.r, self.next, self.buf = to_browser, from_browser, 0, b""

    def call(self, method, params=None, session=None):
        self.next += 1
        msg = {"id": self.next, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        while True:
            while b"\0" not in self.buf:
                chunk = os.read(self.r, 1 << 20)
                if not chunk:
                    raise RuntimeError("Chromium closed the DevTools pipe")
                self.buf += chunk
            text, self.buf = self.buf.split(b"\0", 1)
            reply = json.loads(text)
            if reply.get("id") == self.next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]


def run(browser, url, shot, timeout, after=None):
    """Runs Chromium on url until the page logs "tg-web done" or "tg-web error", then takes a
    screenshot of the whole page into `shot` and calls after(tools, session) if given (the
    DevTools connection and the page's session); the page's tg-web lines."""
    to_r, to_w = os.pipe()
    from_r, from_w = os.pipe()

    def pipes():  # the browser's fds 3 and 4
        os.dup2(to_r, 3)
        os.dup2(from_w, 4)

    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        args = [browser, "--headless=new", "--no-sandbox", "--enable-unsafe-webgpu",
                "--allow-file-access-from-files", f"--user-data-dir={profile}",
                "--remote-debugging-pipe", "--window-size=1300,1500", "--enable-logging=stderr",
                "--v=0", url]
        p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             preexec_fn=pipes, pass_fds=(3, 4), start_new_session=True)
        os.close(to_r)
        os.close(from_w)
        lines, end = [], time.monotonic() + timeout
        try:
            for line in p.stderr:
                m = re.search(r'"(tg-web [^"]*)"', line)
                if m:
                    lines.append(m.group(1))
                    if m.group(1).startswith(("tg-web done", "tg-web error")):
                        break
                if time.monotonic() > end:
                    lines.append("tg-web error: no result in %d s" % timeout)
                    break
            tools = DevTools(to_w, from_r)
            page = next(t for t in tools.call("Target.getTargets")["targetInfos"]
                        if t["type"] == "page")
            session = tools.call("Target.attachToTarget",
                                 {"targetId": page["targetId"], "flatten": True})["sessionId"]
            png = tools.call("Page.captureScreenshot",
                             {"format": "png", "captureBeyondViewport": True}, session)["data"]
            with open(shot, "wb") as f:
                f.write(base64.b64decode(png))
            if after:
                after(tools, session)
        except (RuntimeError, StopIteration, OSError) as e:
            print(f"no screenshot: {e}")
        finally:
            os.killpg(p.pid, signal.SIGKILL)  # the browser and its GPU and renderer processes
            p.wait()
            os.close(to_w)
            os.close(from_r)
        return lines


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    page = os.path.abspath(sys.argv[1])
    if not os.path.exists(os.path.join(page, "index.html")):
        skip(f"no page in {page} (example_export_fashion_mnist writes it)")
    browser = chromium()
    if not browser:
        skip("no Chromium (Debian: chromium; or set TG_CHROMIUM)")
    samples = open(os.path.join(page, "samples.js")).read()
    want = {m: re.search(m + r": \[([0-9, ]*)\]", samples).group(1).replace(" ", "")
            for m in ("mlp", "cnn")}
    ok = True
    for backend in ("webgpu", "wasm"):
        url = "file://" + os.path.join(page, "index.html") + ("?backend=wasm" if backend == "wasm" else "")
        shot = os.path.join(page, f"screenshot-{backend}.png")
        lines = run(browser, url, shot, 180)
        print(f"{backend}:", *lines, sep="\n  ")
        for model, labels in want.items():
            got = [line.split() for line in lines if line.startswith(f"tg-web {model} ")]
            if not got:
                print(f"FAIL {backend}: the page showed no result of {model}")
                ok = False
            elif got[0][2] != backend:
                print(f"FAIL {backend}: {model} ran on {got[0][2]}, not {backend}")
                ok = False
            elif got[0][3] != labels:
                print(f"FAIL {backend}: {model} labels {got[0][3]}, tg's {labels}")
                ok = False
        if os.path.exists(shot):
            print(f"screenshot: {shot}")
    print("ok: the page shows tg's labels through WebGPU and WebAssembly" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
