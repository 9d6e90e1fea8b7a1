#!/usr/bin/env python3
"""The chat page at / in headless Chromium (Debian's chromium and chromium-driver, driven through
selenium): a question typed and sent with Enter, a streamed answer appears with a tokens/s figure,
and a screenshot is saved as a CI artifact.

Usage: test_webui.py --brasa PATH_TO_brasa --model SMOLLM2_GGUF --screenshot FILE.png
"""
import argparse
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import Checks  # noqa: E402
from serverproc import Server  # noqa: E402

CHECKS = Checks("web page")
expect = CHECKS.expect


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brasa", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--screenshot", required=True)
    ap.add_argument("--ctx", type=int, default=1024, help="context per slot (a small one ends a rambling answer sooner)")
    args = ap.parse_args()
    browser = shutil.which("chromium")
    driver_path = shutil.which("chromedriver")
    if not os.path.exists(args.model) or not browser or not driver_path:
        print("SKIP: needs the model, chromium and chromium-driver (apt-get install chromium chromium-driver)")
        return 77
    from selenium import webdriver
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.chrome.service import Service

    srv = Server(args.brasa, args.model, "--parallel", "2", "--ctx", str(args.ctx))
    if not expect("server starts", srv.port is not None, srv.stderr()):
        return CHECKS.finish()
    opts = webdriver.ChromeOptions()
    opts.binary_location = browser
    for a in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
              "--disable-dev-shm-usage", "--window-size=1000,700"):
        opts.add_argument(a)
    d = webdriver.Chrome(options=opts, service=Service(driver_path))
    try:
        d.get(srv.base + "/")
        expect("page title", d.title == "brasa chat", d.title)
        box = d.find_element(By.ID, "q")
        box.send_keys("What is the capital of France?")
        box.send_keys(Keys.ENTER)
        deadline = time.time() + 120
        seen_partial = False
        answer = None
        while time.time() < deadline:
            replies = d.find_elements(By.CSS_SELECTOR, ".msg.assistant")
            if replies:
                text = replies[-1].text
                if text and not replies[-1].get_attribute("data-done"):
                    seen_partial = True
                if replies[-1].get_attribute("data-done"):
                    answer = text
                    break
            if d.find_elements(By.CSS_SELECTOR, ".msg.error"):
                break
            time.sleep(0.02)
        user = [e.text for e in d.find_elements(By.CSS_SELECTOR, ".msg.user")]
        expect("the question shows", user == ["What is the capital of France?"], repr(user))
        expect("a streamed answer appears", answer is not None and len(answer.strip()) > 0, repr(answer))
        expect("the answer grew while streaming", seen_partial, "only seen whole")
        stats = d.find_element(By.ID, "stats").text
        expect("tokens/s is shown", "tokens/s" in stats, repr(stats))
        os.makedirs(os.path.dirname(os.path.abspath(args.screenshot)), exist_ok=True)
        expect("screenshot saved", d.save_screenshot(args.screenshot) and os.path.getsize(args.screenshot) > 1000,
               args.screenshot)
        print(f"screenshot: {args.screenshot}")
    finally:
        d.quit()
        code = srv.stop()
    expect("server exits 0", code == 0, srv.stderr()[-1000:])
    return CHECKS.finish()


if __name__ == "__main__":
    sys.exit(main())
