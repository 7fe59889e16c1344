#!/usr/bin/env python3
"""The HTML reports in a real browser: headless Chromium loads `run --html` and
`search --html` pages, and this script asserts on the DOM the browser produced.

For each page: the page's own script ran to the end (body data-ready="1") and counted
no error (data-errors="0"); Chromium logged no console message at all (an uncaught
exception is one); the sections are there. For the run page the timeline holds one
rect per span of the Chrome trace written by the same run (every slice but the
critical-path track's), and the script counted the same. A screenshot of each page is
written beside them, and its path printed (.ci/run lists it in the log).

usage: html_browser.py LAYOUTSIM SCENARIOS_DIR OUT_DIR CHROMIUM   (CHROMIUM "" -> skip, 77)
"""
import html.parser
import json
import os
import subprocess
import sys

SKIP = 77


class Dom(html.parser.HTMLParser):
    """The dumped DOM: body attributes, element ids, and counts of classed elements."""

    def __init__(self):
        super().__init__()
        self.body = {}
        self.ids = set()
        self.classes = {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body = a
        if "id" in a:
            self.ids.add(a["id"])
        for c in (a.get("class") or "").split():
            key = f"{tag}.{c}"
            self.classes[key] = self.classes.get(key, 0) + 1


def chromium(browser, out, *args):
    cmd = [browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           f"--user-data-dir={os.path.join(out, 'profile')}", "--enable-logging=stderr", "--v=0", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180)


def load(browser, out, page):
    """The page's DOM after its script ran, and the console lines Chromium logged."""
    p = chromium(browser, out, "--dump-dom", "file://" + os.path.abspath(page))
    if p.returncode != 0:
        sys.exit(f"chromium failed on {page} (exit {p.returncode}):\n{p.stderr[-2000:]}")
    dom = Dom()
    dom.feed(p.stdout)
    console = [line for line in p.stderr.splitlines() if ":CONSOLE" in line]
    return dom, console


def screenshot(browser, out, page, png, height):
    p = chromium(browser, out, f"--screenshot={png}", f"--window-size=1400,{height}", "file://" + os.path.abspath(page))
    if p.returncode != 0 or not os.path.exists(png):
        sys.exit(f"chromium wrote no screenshot of {page}:\n{p.stderr[-2000:]}")
    with open(png, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"{png} is not a PNG")
    width, h = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    print(f"screenshot: {png} ({width}x{h}, {os.path.getsize(png)} bytes)")


def trace_span_count(trace_path):
    """X slices of the Chrome trace, leaving out the critical-path track (drawn from the
    path's segments, not from spans)."""
    with open(trace_path) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
    return sum(1 for e in events if e.get("ph") == "X" and not names.get((e["pid"], e["tid"]), "").startswith("critical path"))


def check_page(label, dom, console, ids):
    failures = []
    if dom.body.get("data-ready") != "1":
        failures.append(f"{label}: the page's script did not finish (body data-ready={dom.body.get('data-ready')!r})")
    if dom.body.get("data-errors") != "0":
        failures.append(f"{label}: the page counted {dom.body.get('data-errors')} error(s)")
    if console:
        failures.append(f"{label}: console messages:\n  " + "\n  ".join(console))
    missing = [i for i in ids if i not in dom.ids]
    if missing:
        failures.append(f"{label}: elements missing: {', '.join(missing)}")
    return failures


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    layoutsim, scenarios, out, browser = sys.argv[1:]
    if not browser or not os.path.exists(browser):
        print("html_browser: no Chromium (Debian package chromium); skipped")
        return SKIP
    os.makedirs(out, exist_ok=True)
    run_html, trace = os.path.join(out, "run.html"), os.path.join(out, "run.trace.json")
    subprocess.run([layoutsim, "run", os.path.join(scenarios, "straggler.yaml"), "-q", "--html", run_html, "--trace", trace], check=True)
    search_html, search_json = os.path.join(out, "search.html"), os.path.join(out, "search.json")
    subprocess.run([layoutsim, "search", os.path.join(scenarios, "search-llama3-70b-64xh100.yaml"), "--fix", "tp=8", "--vary",
                    "zero=1,2", "--simulate-top", "8", "-q", "--html", search_html, "--json", search_json], check=True,
                   stdout=subprocess.DEVNULL)
    with open(search_json) as f:
        simulated = json.load(f)["counts"]["simulated"]

    failures = []
    dom, console = load(browser, out, run_html)
    failures += check_page("run", dom, console, ["summary", "timeline", "timeline-svg", "stages", "memory", "memory-svg", "links",
                                                 "link-groups", "bottleneck", "warnings", "layoutsim-data"])
    spans, expected = dom.classes.get("rect.span", 0), trace_span_count(trace)
    if spans != expected:
        failures.append(f"run: the timeline draws {spans} spans, the trace holds {expected}")
    if dom.body.get("data-spans") != str(expected):
        failures.append(f"run: the page's script counted {dom.body.get('data-spans')} spans, the trace holds {expected}")
    if dom.classes.get("rect.straggler-mark", 0) != 1:
        failures.append("run: the straggler (node0.gpu4, 1.5x) is not marked once on the timeline")
    if dom.classes.get("div.warning", 0) < 1:
        failures.append("run: no warning shown (the straggler scenario has two)")
    print(f"run page: {spans} spans (trace: {expected}), {dom.classes.get('rect.bubble', 0)} idle intervals, "
          f"{dom.classes.get('div.warning', 0)} warnings")

    dom, console = load(browser, out, search_html)
    failures += check_page("search", dom, console, ["ranking", "explanation", "pareto-svg", "counts", "layoutsim-data"])
    points = dom.classes.get("circle.candidate", 0)
    if points != simulated:
        failures.append(f"search: {points} candidates plotted, {simulated} simulated")
    print(f"search page: {points} simulated candidates plotted")

    screenshot(browser, out, run_html, os.path.join(out, "run.png"), 2400)
    screenshot(browser, out, search_html, os.path.join(out, "search.png"), 1500)
    if failures:
        print("\n".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
