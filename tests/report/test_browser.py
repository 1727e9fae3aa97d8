"""The HTML report in a real headless browser: it renders (a 1280x900, non-blank screenshot), its
DOM holds the tables and the inline SVG charts, and the console shows no error.

Needs chromium: skipped only when it is missing and CI is unset (CI installs it with
`apt-get install -y chromium`, see scripts/setup). The PNG decoder used to check the screenshot
is pure Python and is itself tested here without a browser."""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from loomc.eval.receipt import EvalReceipt
from loomc.report.render import render

WIDTH, HEIGHT = 1280, 900
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def chromium() -> str:
    found = next(
        (
            p
            for p in (
                "/usr/bin/chromium",
                shutil.which("chromium"),
                shutil.which("chromium-browser"),
            )
            if p and os.path.exists(p)
        ),
        None,
    )
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is required in CI (apt-get install -y chromium)")
        pytest.skip("chromium not installed (CI installs it)")
    return found


# --- a small PNG reader ------------------------------------------------------------------------


def png_chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    assert data[:8] == PNG_MAGIC, "not a PNG (bad magic)"
    out, pos = [], 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert zlib.crc32(kind + body) == crc, f"bad CRC in {kind!r}"
        out.append((kind, body))
        pos += 12 + length
        if kind == b"IEND":
            break
    return out


def png_size(data: bytes) -> tuple[int, int]:
    kind, body = png_chunks(data)[0]
    assert kind == b"IHDR"
    w, h = struct.unpack(">II", body[:8])
    return w, h


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def png_pixels(data: bytes) -> tuple[int, int, int, list[bytes]]:
    """Decode an 8-bit, non-interlaced PNG into raw rows: (width, height, bytes/pixel, rows)."""
    chunks = png_chunks(data)
    ihdr = chunks[0][1]
    w, h, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", ihdr)
    assert depth == 8 and interlace == 0, "only 8-bit non-interlaced PNGs are decoded here"
    bpp = {0: 1, 2: 3, 4: 2, 6: 4}[colour]
    raw = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    stride = w * bpp
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(h):
        base = y * (stride + 1)
        ftype = raw[base]
        line = bytearray(raw[base + 1 : base + 1 + stride])
        if ftype == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif ftype == 2:
            line = bytearray((x + p) & 0xFF for x, p in zip(line, prev, strict=True))
        elif ftype == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif ftype == 4:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                up_left = prev[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + _paeth(left, prev[i], up_left)) & 0xFF
        else:
            assert ftype == 0, f"bad filter type {ftype}"
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def luminance_stats(data: bytes) -> tuple[float, int]:
    """Variance of the first channel over a pixel grid, and how many distinct values it has."""
    w, h, bpp, rows = png_pixels(data)
    samples = [rows[y][x * bpp] for y in range(0, h, 3) for x in range(0, w, 3)]
    mean = sum(samples) / len(samples)
    return sum((s - mean) ** 2 for s in samples) / len(samples), len(set(samples))


def _encode_png(w: int, h: int, pixels: list[list[tuple[int, int, int]]]) -> bytes:
    """A test encoder that cycles every filter type, to check the decoder without a browser."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    bpp, stride, out = 3, w * 3, bytearray()
    prev = bytes(stride)
    for y, row in enumerate(pixels):
        line = bytes(c for px in row for c in px)
        ftype = y % 5
        filt = bytearray(stride)
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], (prev[i - bpp] if i >= bpp else 0)
            pred = (0, a, b, (a + b) >> 1, _paeth(a, b, c))[ftype]
            filt[i] = (line[i] - pred) & 0xFF
        out += bytes([ftype]) + filt
        prev = line
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return (
        PNG_MAGIC
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(bytes(out)))
        + chunk(b"IEND", b"")
    )


def test_png_decoder_round_trips_every_filter() -> None:
    px = [
        [((x * 7 + y) % 256, (x * y) % 256, (255 - x) % 256) for x in range(13)] for y in range(11)
    ]
    data = _encode_png(13, 11, px)
    assert png_size(data) == (13, 11)
    _, _, _, rows = png_pixels(data)
    assert [list(zip(r[0::3], r[1::3], r[2::3], strict=True)) for r in rows] == px
    blank = _encode_png(8, 8, [[(255, 255, 255)] * 8 for _ in range(8)])
    assert luminance_stats(blank) == (0.0, 1)


# --- the browser -------------------------------------------------------------------------------


def _chromium(exe: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [
        exe,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        f"--user-data-dir={profile}",
        f"--window-size={WIDTH},{HEIGHT}",
        "--hide-scrollbars",
        "--enable-logging=stderr",
        "--v=0",
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


def _console_errors(stderr: str) -> list[str]:
    bad = ("uncaught", "failed to load resource", "refused to", "syntaxerror", "typeerror")
    return [
        line
        for line in stderr.splitlines()
        if "CONSOLE" in line and any(b in line.lower() for b in bad)
    ]


def test_report_renders_in_headless_chromium(tmp_path: Path, demo_receipt: EvalReceipt) -> None:
    exe = chromium()
    page = render(demo_receipt, tmp_path / "report.html")
    url = page.resolve().as_uri()

    shot = tmp_path / "out.png"
    run = _chromium(exe, tmp_path / "profile-shot", f"--screenshot={shot}", url)
    assert shot.exists(), f"no screenshot (exit {run.returncode}): {run.stderr[-2000:]}"
    assert not _console_errors(run.stderr), _console_errors(run.stderr)
    data = shot.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert png_size(data) == (WIDTH, HEIGHT)

    blank_page = tmp_path / "blank.html"
    blank_page.write_text("<!DOCTYPE html><html><body></body></html>", encoding="utf-8")
    blank_shot = tmp_path / "blank.png"
    _chromium(exe, tmp_path / "profile-blank", f"--screenshot={blank_shot}", blank_page.as_uri())
    variance, distinct = luminance_stats(data)
    assert variance > 50 and distinct > 8, f"screenshot looks blank ({variance=}, {distinct=})"
    if blank_shot.exists():
        assert luminance_stats(blank_shot.read_bytes())[0] < variance

    dom = _chromium(exe, tmp_path / "profile-dom", "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert '<table id="strategies"' in html and '<table id="cases"' in html
    assert html.count("<svg") >= 2 and "<circle" in html and "<rect" in html
    for strategy in ("baseline", "lean", "balanced", "strict", "fixed"):
        assert f"<td>{strategy}</td>" in html
    assert not _console_errors(dom.stderr), _console_errors(dom.stderr)


def _pixel(data: bytes, x: int, y: int) -> tuple[int, ...]:
    _, _, bpp, rows = png_pixels(data)
    return tuple(rows[y][x * bpp : x * bpp + 3])


def test_dashboard_is_dark_self_contained_and_escapes_model_text(
    tmp_path: Path, demo_receipt: EvalReceipt
) -> None:
    """The designed dashboard: dark, one card per strategy, the scripted-answers note, inline
    SVG only (no script, no external resource), and model text shown as text, never markup.
    LOOMC_SCREENSHOT_DIR=DIR keeps the screenshots for a person to look at."""
    exe = chromium()
    hostile = '<img src=x onerror="document.title=1"><b>bold</b>'
    demo_receipt.runs[0].answer = hostile
    page = render(demo_receipt, tmp_path / "dash.html")
    source = page.read_text(encoding="utf-8")
    assert "<script" not in source and "<link" not in source and "@import" not in source
    assert "https://" not in source and "http://" not in source.replace("http://www.w3.org", "")
    assert "&lt;img src=x" in source and hostile not in source

    shot = tmp_path / "dash.png"
    _chromium(
        exe,
        tmp_path / "profile-dash",
        "--window-size=1280,1800",
        f"--screenshot={shot}",
        page.resolve().as_uri(),
    )
    data = shot.read_bytes()
    assert png_size(data) == (1280, 1800)
    assert max(_pixel(data, 5, 5)) < 40, "the page background is not dark"
    variance, distinct = luminance_stats(data)
    assert variance > 50 and distinct > 8

    dom = _chromium(exe, tmp_path / "profile-dash-dom", "--dump-dom", page.resolve().as_uri())
    html = dom.stdout
    assert len(re.findall(r'class="card(?: top)?"', html)) == len(demo_receipt.metrics)
    assert 'id="answers-note"' in html and "scripted" in html
    assert "<img" not in html and "<b>bold" not in html and "&lt;b&gt;bold" in html
    assert html.count("<svg") >= 2 and 'id="strategies"' in html and 'id="deltas"' in html
    assert not _console_errors(dom.stderr), _console_errors(dom.stderr)

    card = render(demo_receipt, tmp_path / "card.svg")
    card_shot = tmp_path / "card.png"
    _chromium(
        exe,
        tmp_path / "profile-card",
        "--window-size=1216,470",
        f"--screenshot={card_shot}",
        card.resolve().as_uri(),
    )
    card_data = card_shot.read_bytes()
    assert max(_pixel(card_data, 5, 5)) < 40
    assert luminance_stats(card_data)[1] > 8
    keep = os.environ.get("LOOMC_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / "dashboard-fixture.png")
        shutil.copy(card_shot, Path(keep) / "card-fixture.png")
