"""Draw a Textual SVG screenshot as a PNG on the exact character grid (with Pillow).

SVG converters such as rsvg-convert collapse the non-breaking spaces Textual writes and
misplace box-drawing glyphs; this reads the SVG's own rectangles and text runs and puts each
character in its cell. Usage: python screenshots/svg_to_png.py FILE.svg [...]
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import sys
from pathlib import Path

CELL_WIDTH = 12.2  # Textual's export: 20px font, 0.61em per cell
FONT_SIZE = 20
FONT_DIRS = ("/usr/share/fonts", "/usr/local/share/fonts", str(Path.home() / ".fonts"))
FONT_FILES = {
    (False, False): ("FiraCode-Regular.ttf", "DejaVuSansMono.ttf"),
    (True, False): ("FiraCode-Bold.ttf", "DejaVuSansMono-Bold.ttf"),
    (False, True): ("DejaVuSansMono-Oblique.ttf", "FiraCode-Regular.ttf"),
    (True, True): ("DejaVuSansMono-BoldOblique.ttf", "FiraCode-Bold.ttf"),
}
CLASS_RULE = re.compile(r"\.(terminal-(?:\d+-)?r\d+) \{([^}]*)\}")
RECT = re.compile(
    r'<rect fill="(#[0-9a-fA-F]{6})" x="([\d.]+)" y="([\d.]+)" '
    r'width="([\d.]+)" height="([\d.]+)" shape-rendering="crispEdges"/>'
)
TEXT = re.compile(
    r'<text class="(terminal-(?:\d+-)?r\d+)" x="([\d.]+)" y="([\d.]+)"[^>]*>'
    r"([^<]*)</text>"
)
TITLE = re.compile(
    r'<text class="terminal-(?:\d+-)?title"[^>]*x="([\d.]+)" y="([\d.]+)">'
    r"([^<]*)</text>"
)
VIEWBOX = re.compile(r'viewBox="0 0 ([\d.]+) ([\d.]+)"')
OFFSET = re.compile(r'<g transform="translate\((\d+), (\d+)\)" clip-path')


def find_font(names: tuple[str, ...]) -> Path | None:
    for name in names:
        for folder in FONT_DIRS:
            found = next(Path(folder).rglob(name), None) if Path(folder).is_dir() else None
            if found is not None:
                return found
    return None


def styles(svg: str) -> dict[str, tuple[str, bool, bool]]:
    """Each text class: (colour, bold, italic)."""
    found = {}
    for name, body in CLASS_RULE.findall(svg):
        colour = re.search(r"fill: (#[0-9a-fA-F]{6})", body)
        found[name] = (colour.group(1) if colour else "#c5c8c6", "bold" in body, "italic" in body)
    return found


def draw_png(svg_path: Path) -> Path:
    from PIL import Image, ImageDraw, ImageFont

    svg = svg_path.read_text(encoding="utf-8")
    size = VIEWBOX.search(svg)
    offset = OFFSET.search(svg)
    if size is None or offset is None:
        raise ValueError(f"{svg_path}: not a Textual screenshot")
    width, height = (round(float(v)) for v in size.groups())
    dx, dy = (int(v) for v in offset.groups())
    fonts = {}
    for key, names in FONT_FILES.items():
        path = find_font(names)
        fonts[key] = (
            ImageFont.truetype(str(path), FONT_SIZE) if path else ImageFont.load_default(FONT_SIZE)
        )
    image = Image.new("RGB", (width, height), "#292929")
    draw = ImageDraw.Draw(image)
    for index, colour in enumerate(("#ff5f57", "#febc2e", "#28c840")):
        x, y = 26 + 22 * index, 22
        draw.ellipse((x - 7, y - 7, x + 7, y + 7), fill=colour)
    title = TITLE.search(svg)
    if title is not None:
        draw.text(
            (float(title.group(1)), float(title.group(2))),
            html.unescape(title.group(3)),
            font=fonts[(True, False)],
            fill="#c5c8c6",
            anchor="ms",
        )
    for colour, x, y, w, h in RECT.findall(svg):
        left, top = round(dx + float(x)), round(dy + float(y))
        right, bottom = round(dx + float(x) + float(w)), round(dy + float(y) + float(h))
        if right > left and bottom > top:
            draw.rectangle((left, top, right - 1, bottom - 1), fill=colour)
    classes = styles(svg)
    for name, x, y, text in TEXT.findall(svg):
        colour, bold, italic = classes.get(name, ("#c5c8c6", False, False))
        font = fonts[(bold, italic)]
        for position, char in enumerate(html.unescape(text)):
            if char.strip():
                cell_x = dx + float(x) + position * CELL_WIDTH
                draw.text((cell_x, dy + float(y)), char, font=font, fill=colour, anchor="ls")
    target = svg_path.with_suffix(".png")
    image.save(target)
    return target


def convert(svg_path: Path) -> Path | None:
    """A PNG beside the SVG: drawn with Pillow, else by rsvg-convert, else None."""
    try:
        return draw_png(svg_path)
    except ImportError:
        converter = shutil.which("rsvg-convert")
        if converter is None:
            return None
        target = svg_path.with_suffix(".png")
        subprocess.run([converter, str(svg_path), "-o", str(target)], check=True)
        return target


if __name__ == "__main__":
    for argument in sys.argv[1:]:
        print(convert(Path(argument)) or f"{argument}: install Pillow or rsvg-convert for PNG")
