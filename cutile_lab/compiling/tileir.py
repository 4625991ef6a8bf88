"""Reading what the toolchain prints: Tile IR text with debug locations, and tileiras remarks.

The disassembler's ``-g`` output carries ``loc(#locN)`` on each operation; here they become a
clean text plus a map from Tile IR line to the user's source line, the link the report shows.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_LOC_REF = re.compile(r"\s*loc\((#loc\d*)\)\s*$")
_LOC_DEF = re.compile(r"^(#loc\d*)\s*=\s*(.*)$")
_FILE_LINE = re.compile(r'"([^"]*)":(\d+):(\d+)')
_ALIAS_REF = re.compile(r"#loc\d*")


@dataclass
class TileIRText:
    text: str
    line_map: list[tuple[int, int]]   # (Tile IR line, user source line), 1-based


def clean_tileir(raw: str) -> TileIRText:
    """Strip location annotations and definitions; keep where each op came from."""
    defs: dict[str, str] = {}
    body: list[str] = []
    for line in raw.splitlines():
        m = _LOC_DEF.match(line.strip())
        if m:
            defs[m.group(1)] = m.group(2)
            continue
        if line.startswith("#di_") or line.startswith("#loc"):
            continue
        body.append(line)

    def resolve(ref: str, depth: int = 0) -> int | None:
        text = defs.get(ref)
        if text is None or depth > 16 or "unknown" in text and "#loc" not in text:
            return None
        m = _FILE_LINE.search(text)
        if m:
            return int(m.group(2))
        for inner in _ALIAS_REF.findall(text):
            line = resolve(inner, depth + 1)
            if line is not None:
                return line
        return None

    out: list[str] = []
    line_map: list[tuple[int, int]] = []
    for line in body:
        m = _LOC_REF.search(line)
        if m:
            src_line = resolve(m.group(1))
            line = line[:m.start()].rstrip()
            if src_line:
                line_map.append((len(out) + 1, src_line))
        out.append(line.rstrip())
    return TileIRText("\n".join(out).rstrip() + "\n", line_map)


_REMARK_DOC = re.compile(r"^--- !(\w+)\s*$", re.M)
_LOWERED_LOC = re.compile(r'loc\("[^"]*":\d+:\d+\):\s*')


def parse_remarks(yaml_text: str) -> list[dict]:
    """The fields of tileiras' YAML remarks that the report shows (no YAML library needed)."""
    remarks = []
    starts = list(_REMARK_DOC.finditer(yaml_text))
    for i, m in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(yaml_text)
        doc = yaml_text[m.end():end]
        item: dict = {"kind": m.group(1)}
        for key in ("Pass", "Name", "Function"):
            km = re.search(rf"^{key}:\s*(.+)$", doc, re.M)
            if km:
                item[key.lower()] = km.group(1).strip().strip("'\"")
        lm = re.search(r"DebugLoc:\s*\{[^}]*Line:\s*(\d+)(?:,\s*Column:\s*(\d+))?", doc)
        if lm:
            item["line"] = int(lm.group(1))
            item["col"] = int(lm.group(2) or 0)
        details = re.findall(r"^\s*-\s*(\w+):\s*(.+)$", doc, re.M)
        parts: list[str] = []
        for key, value in details:
            if key == "RemarkId":
                continue
            for piece in value.strip().strip("'\"").split(";"):
                piece = _LOWERED_LOC.sub("", piece).strip()
                if piece and piece not in parts:
                    parts.append(piece)
        item["message"] = "; ".join(parts)
        remarks.append(item)
    # tileiras repeats a remark for each pass over the same op: keep one of each
    seen, unique = set(), []
    for r in remarks:
        key = (r.get("kind"), r.get("name"), r.get("line"), r.get("col"), r.get("message"))
        if key not in seen:
            seen.add(key)
            unique.append(r)
    return unique
