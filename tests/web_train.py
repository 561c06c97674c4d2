#!/usr/bin/env python3
"""Opens train.html, the page example_export_fashion_mnist writes beside the MLP's exported
training step, in headless Chromium (WebGPU on its software adapter) with ?steps=N, and checks
that the page trained the model: its accuracy on the held-out test images at the end is at least
75%, and the labels its `classify` method gave them are the ones tg computes on the weights the
page's "download weights" button saves (example_export_fashion_mnist --check-trained). Keeps a
screenshot with the loss curve beside the page (screenshot-train.png) and the downloaded weights
(fashion_mnist_mlp_trained.safetensors).

Usage: web_train.py PAGE_DIR EXAMPLE [STEPS] (EXAMPLE: the example_export_fashion_mnist binary;
STEPS: 100). Exit status as tests/web_page.py's: 0, 1, or 77 (skipped; a failure under CI=true)."""
import os
import subprocess
import sys
import time

from web_page import chromium, run, skip

WEIGHTS = "fashion_mnist_mlp_trained.safetensors"


def download(page):
    """The `after` of web_page.run: clicks "download weights" and waits for the file."""
    target = os.path.join(page, WEIGHTS)

    def after(tools, session):
        tools.call("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": page})
        tools.call("Runtime.evaluate", {"expression": "document.getElementById('download').click()",
                                        "userGesture": True}, session)
        end = time.monotonic() + 30
        while time.monotonic() < end:
            if os.path.exists(target) and not os.path.exists(target + ".crdownload"):
                time.sleep(0.5)  # (the last bytes)
                return
            time.sleep(0.2)
    return after


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__)
        return 2
    page, example = os.path.abspath(sys.argv[1]), sys.argv[2]
    steps = int(sys.argv[3]) if len(sys.argv) == 4 else 100
    if not os.path.exists(os.path.join(page, "train.html")):
        skip(f"no page in {page} (example_export_fashion_mnist writes it)")
    browser = chromium()
    if not browser:
        skip("no Chromium (Debian: chromium; or set TG_CHROMIUM)")
    weights = os.path.join(page, WEIGHTS)
    if os.path.exists(weights):
        os.remove(weights)
    shot = os.path.join(page, "screenshot-train.png")
    url = "file://" + os.path.join(page, "train.html") + f"?steps={steps}"
    lines = run(browser, url, shot, 240, download(page))
    for line in lines:
        print(" ", line if len(line) < 200 else line[:200] + "...")
    ok = True
    done = [line.split() for line in lines if line.startswith("tg-web done ")]
    accuracy = [float(line.split()[3]) for line in lines if line.startswith("tg-web accuracy ")]
    labels = [line.split()[2] for line in lines if line.startswith("tg-web labels ")]
    if not done:
        print("FAIL: the page did not finish training")
        return 1
    if done[0][2] != "webgpu":
        print(f"FAIL: the page trained on {done[0][2]}, not webgpu")
        ok = False
    print(f"{done[0][3]} steps on {done[0][2]}: {done[0][4]} ms a step; test accuracy "
          + " ".join(f"{a:.3f}" for a in accuracy))
    if not accuracy or accuracy[-1] < 0.75:
        print("FAIL: the test accuracy at the end is below 75%")
        ok = False
    if not os.path.exists(weights):
        print("FAIL: no weights downloaded")
        return 1
    with open(os.path.join(page, "page-labels.txt"), "w") as f:
        f.write(labels[0] if labels else "")
    check = subprocess.run([example, "--out", page, "--check-trained", weights,
                            os.path.join(page, "page-labels.txt")], capture_output=True, text=True)
    print(check.stdout + check.stderr, end="")
    if check.returncode != 0:
        print("FAIL: the page's labels are not tg's on the weights it saved")
        ok = False
    if os.path.exists(shot):
        print(f"screenshot: {shot}")
    print("ok: the page trained the MLP through WebGPU, and tg agrees with its weights" if ok
          else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
