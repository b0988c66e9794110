"""The dashboard as on-call sees it, drawn from a recorded fault: `make dashboard-picture`
(python -m tests.support.dashboard_picture [RELEASE SCENARIO OUT.svg]).

No Grafana runs here, so the picture is the dashboard's own queries (infra/plan/monitoring/
dashboard.py, the variables at "All") answered by a real Prometheus over a recording of the
runtime tier (tests/support/recordings.py), laid out on the dashboard's grid: a recording becomes
a TSDB block (`promtool tsdb create-blocks-from openmetrics`, the scrapes at their real spacing),
Prometheus serves it, and each panel's query is asked over the recording's span (`query_range`;
stats and tables at its end, as Grafana asks them). The drawing is plain SVG: lines, their last
values and legends, no axes beyond each chart's range: text a reviewer can diff.
"""

from __future__ import annotations

import html
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra.plan.monitoring.dashboard import ALL_VALUES, PANELS, VARIABLES, Panel, dashboard
from infra.tools.rehearsal import keeper
from tests.support import recordings
from tests.support.stacks import ROOT

# The recording the docs show, and where (docs/operations.md#dashboard).
PICTURED = ("strimzi-1.2.0", "task-failed")
OUT = ROOT / "docs" / "images" / "dashboard-task-failed.svg"
T0 = 1_767_225_600  # 2026-01-01T00:00:00Z: the recording's first scrape (what it shows is relative)
PROMETHEUS_CACHE = Path.home() / ".cache" / "kafka-replication" / "promtool" / "usr" / "bin"


class PictureError(RuntimeError):
    pass


def openmetrics(recording: dict[str, Any]) -> str:
    """The recording as OpenMetrics text with timestamps: each series' samples in time order, a
    missing scrape left out (what Prometheus stores of a scrape that failed)."""
    every = float(recording["every_seconds"])
    lines = []
    for s in sorted(recording["input_series"], key=lambda s: s["series"]):
        name = s["series"].replace('", ', '",')  # OpenMetrics has no space between labels
        for i, value in enumerate(recordings.decode(s["values"])):
            if value is not None:
                lines.append(f"{name} {recordings.number(value)} {T0 + i * every:.3f}")
    return "\n".join(lines + ["# EOF", ""])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Prometheus:
    """A Prometheus serving one recording's block, on loopback, for the queries only."""
    url: str
    process: subprocess.Popen[bytes]

    def ask(self, path: str, **params: str) -> Any:
        query = urllib.parse.urlencode(params)
        with urllib.request.urlopen(f"{self.url}/api/v1/{path}?{query}", timeout=30) as resp:
            body = json.load(resp)
        if body.get("status") != "success":
            raise PictureError(f"Prometheus refused {params.get('query')!r}: {body}")
        return body["data"]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        keeper.release(self.process.pid)


def serve(recording: dict[str, Any], work: Path, binaries: Path = PROMETHEUS_CACHE) -> Prometheus:
    promtool, prometheus = binaries / "promtool", binaries / "prometheus"
    if not prometheus.exists():
        raise PictureError(f"no Prometheus at {prometheus}: run `make promtool` (Debian's prometheus package)")
    (work / "series.om").write_text(openmetrics(recording))
    data = work / "data"
    done = subprocess.run([str(promtool), "tsdb", "create-blocks-from", "openmetrics", str(work / "series.om"),
                           str(data)], capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise PictureError(f"promtool could not make a block of the recording: {done.stderr[-2000:]}")
    (work / "prometheus.yml").write_text("global: {}\n")
    port = _free_port()
    process = subprocess.Popen([str(prometheus), f"--config.file={work / 'prometheus.yml'}",
                                f"--storage.tsdb.path={data}", "--storage.tsdb.retention.time=100y",
                                # A backfilled block has no staleness markers (Prometheus writes
                                # them when a scraped series disappears): without them a series
                                # would look present for the default 5 minutes after its last
                                # scrape. Two scrape intervals stand in for them.
                                f"--query.lookback-delta={2 * float(recording['every_seconds']):.0f}s",
                                f"--web.listen-address=127.0.0.1:{port}"],
                               stdout=subprocess.DEVNULL, stderr=(work / "prometheus.log").open("wb"),
                               start_new_session=True)
    keeper.guard(process.pid)  # ends with the run, however it ends
    server = Prometheus(f"http://127.0.0.1:{port}", process)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise PictureError(f"Prometheus exited: {(work / 'prometheus.log').read_text()[-2000:]}")
        try:
            urllib.request.urlopen(f"{server.url}/-/ready", timeout=2).close()
            return server
        except OSError:
            time.sleep(0.3)
    server.stop()
    raise PictureError("Prometheus did not become ready within 60 s")


def expr(panel: Panel) -> str:
    """The panel's query as Grafana sends it with every variable at All."""
    text = panel.query
    for name in VARIABLES:
        text = text.replace(f"${name}", ALL_VALUES)
    return text


def legend(fmt: str, labels: dict[str, str]) -> str:
    if not fmt:
        return ", ".join(f"{k}={v}" for k, v in sorted(labels.items()) if k != "__name__") or "value"
    out = fmt
    for key, value in labels.items():
        out = out.replace("{{" + key + "}}", value)
    return out


@dataclass
class Answer:
    panel: Panel
    series: list[tuple[str, list[tuple[float, float]]]]   # (legend, [(t, value)])


def answers(server: Prometheus, recording: dict[str, Any]) -> list[Answer]:
    every = float(recording["every_seconds"])
    end = T0 + (recording["scrapes"] - 1) * every
    out = []
    for panel in PANELS:
        query = expr(panel)
        if panel.kind == "timeseries":
            data = server.ask("query_range", query=query, start=str(T0), end=str(end), step=str(every))
            series = [(legend(panel.legend, r["metric"]), [(float(t), float(v)) for t, v in r["values"]])
                      for r in data["result"]]
        else:
            data = server.ask("query", query=query, time=str(end))
            series = [(legend(panel.legend, r["metric"]), [(float(r["value"][0]), float(r["value"][1]))])
                      for r in data["result"]]
        out.append(Answer(panel, sorted(series)))
    return out


# ----------------------------------------------------------------- drawing

UNIT_PX, ROW_PX = 52, 26           # a dashboard grid column's width, a grid unit's height
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")


def _number(value: float, unit: str) -> str:
    if value != value:  # NaN
        return "NaN"
    if unit == "percentunit":
        return f"{value * 100:.1f}%"
    if unit == "bytes":
        for size, name in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
            if abs(value) >= size:
                return f"{value / size:.1f} {name}"
    if unit == "ms":
        return f"{value:.0f} ms"
    if unit == "s":
        return f"{value:.0f} s"
    return f"{value:.3g}"


def _panel(answer: Answer, x: float, y: float, w: float, h: float, span: tuple[float, float],
           marks: list[float]) -> list[str]:
    p, esc = answer.panel, html.escape
    out = [f'<rect x="{x + 2}" y="{y + 2}" width="{w - 4}" height="{h - 4}" fill="#ffffff" stroke="#c7d0d9"/>',
           f'<text x="{x + 10}" y="{y + 18}" class="t">{esc(p.title)}</text>']
    if not answer.series:
        out.append(f'<text x="{x + w / 2}" y="{y + h / 2 + 6}" class="n" text-anchor="middle">No data</text>')
        return out
    if p.kind == "stat":
        total = sum(v for _, points in answer.series for _, v in points[-1:] if v == v)
        out.append(f'<text x="{x + w / 2}" y="{y + h / 2 + 16}" class="s" text-anchor="middle">'
                   f'{esc(_number(total, p.unit))}</text>')
        return out
    if p.kind == "table":
        for i, (name, points) in enumerate(answer.series[:int((h - 30) // 14)]):
            out.append(f'<text x="{x + 10}" y="{y + 36 + i * 14}" class="l">{esc(name)}: '
                       f'{esc(_number(points[-1][1], p.unit))}</text>')
        return out
    # A chart: the lines over the recording's span, each chart's own range, legends below.
    shown = answer.series[:6]
    values = [v for _, points in shown for _, v in points if v == v]
    low, high = min(values), max(values)
    if high == low:
        low, high = low - 1, high + 1
    left, top, right, bottom = x + 10, y + 28, x + w - 10, y + h - 16 - 12 * len(shown)
    for i, t in enumerate(marks, 1):  # where each phase of the scenario begins (the title names them)
        at = left + (t - span[0]) / (span[1] - span[0]) * (right - left)
        out.append(f'<line x1="{at:.1f}" y1="{top}" x2="{at:.1f}" y2="{bottom}" stroke="#999" stroke-dasharray="3,3"/>')
        out.append(f'<text x="{at + 2:.1f}" y="{top + 8}" class="a">{i}</text>')
    out.append(f'<text x="{left}" y="{top + 8}" class="a">{esc(_number(high, p.unit))}</text>')
    out.append(f'<text x="{left}" y="{bottom}" class="a">{esc(_number(low, p.unit))}</text>')
    for i, (name, points) in enumerate(shown):
        colour = COLOURS[i % len(COLOURS)]
        path = " ".join(f"{left + (t - span[0]) / (span[1] - span[0]) * (right - left):.1f},"
                        f"{bottom - (v - low) / (high - low) * (bottom - top):.1f}" for t, v in points if v == v)
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{path}"/>')
        out.append(f'<text x="{left}" y="{bottom + 14 + i * 12}" class="l" fill="{colour}">{esc(name)} '
                   f'({esc(_number(points[-1][1], p.unit))})</text>')
    if len(answer.series) > len(shown):
        out.append(f'<text x="{right}" y="{y + 18}" class="l" text-anchor="end">'
                   f'+{len(answer.series) - len(shown)} more</text>')
    return out


def svg(found: list[Answer], recording: dict[str, Any]) -> str:
    """The dashboard's grid (dashdashboard()'s gridPos) with each panel's answer."""
    by_title = {a.panel.title: a for a in found}
    every = float(recording["every_seconds"])
    span = (float(T0), T0 + (recording["scrapes"] - 1) * every)
    body: list[str] = []
    marks = [T0 + p[0] * every for p in recording["phases"][1:]]
    bottom = 0.0
    header = 52
    for item in dashboard()["panels"]:
        pos = item["gridPos"]
        x, y, w, h = pos["x"] * UNIT_PX, header + pos["y"] * ROW_PX, pos["w"] * UNIT_PX, pos["h"] * ROW_PX
        bottom = max(bottom, y + h)
        if item["type"] == "row":
            body.append(f'<text x="{x + 6}" y="{y + 19}" class="r">{html.escape(item["title"])}</text>')
        else:
            body += _panel(by_title[item["title"]], x, y, w, h, span, marks)
    phases = "; ".join(f"{i or 'from'} {p[1]} at {p[0] * every:.0f} s" for i, p in enumerate(recording["phases"]))
    lines = [f"{recording['release']} {recording['scenario']}: {recording['what']}",
             f"{phases}; {recording['scrapes']} scrapes every {every:.0f} s (the dashed lines)"]
    width, height = 24 * UNIT_PX, bottom + 8
    style = ("<style>text{font-family:sans-serif;fill:#333}.t{font-size:12px;font-weight:bold}"
             ".r{font-size:15px;font-weight:bold}.s{font-size:34px}.n{font-size:13px;fill:#999}"
             ".l{font-size:10px}.a{font-size:9px;fill:#777}.h{font-size:12px}</style>")
    return "\n".join([f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height:.0f}" '
                      f'viewBox="0 0 {width} {height:.0f}">', style,
                      f'<rect width="{width}" height="{height:.0f}" fill="#f4f5f5"/>',
                      *(f'<text x="8" y="{20 + 16 * i}" class="h">{html.escape(line)}</text>'
                        for i, line in enumerate(lines)), *body, "</svg>", ""])


def picture(release: str, scenario: str, out: Path) -> list[Answer]:
    (recording,) = [r for r in recordings.load_all() if (r["release"], r["scenario"]) == (release, scenario)]
    with tempfile.TemporaryDirectory() as work:
        server = serve(recording, Path(work))
        try:
            found = answers(server, recording)
        finally:
            server.stop()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(svg(found, recording))
    return found


def main(argv: list[str]) -> int:
    release, scenario, out = (argv[0], argv[1], Path(argv[2])) if len(argv) == 3 else (*PICTURED, OUT)
    try:
        found = picture(release, scenario, out)
    except (PictureError, ValueError) as exc:
        print(f"dashboard picture: {exc}", file=sys.stderr)
        return 2
    empty = [a.panel.title for a in found if not a.series]
    print(f"{out}: {len(found)} panels, {len(found) - len(empty)} with data" +
          (f"; no data: {', '.join(empty)}" if empty else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
