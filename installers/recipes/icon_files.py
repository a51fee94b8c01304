"""Write the Windows .ico and the macOS .icns containers from PNG images (pure bytes).

Both formats hold PNG data as is, so each size can be rendered from the SVG at its own
resolution instead of being scaled down from one large image. Qt's own writers cannot do
that: its ico plugin writes one image per file, its icns plugin scales one image down.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

# The sizes Windows asks for, from the 16 px of a list view to the 256 px of a tile.
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)

# The ICNS element types that hold PNG data: (type, pixel size). The @2x types of the
# Retina displays carry the next size up; 16 px as icp4 is still read by Finder's lists.
ICNS_TYPES = (
    (b"icp4", 16),
    (b"icp5", 32),
    (b"icp6", 64),
    (b"ic07", 128),
    (b"ic08", 256),
    (b"ic09", 512),
    (b"ic10", 1024),  # 512@2x
    (b"ic11", 32),  # 16@2x
    (b"ic12", 64),  # 32@2x
    (b"ic13", 256),  # 128@2x
    (b"ic14", 512),  # 256@2x
)
ICNS_SIZES = tuple(sorted({size for _, size in ICNS_TYPES}))

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _check_png(size: int, data: bytes) -> None:
    if not data.startswith(PNG_SIGNATURE):
        raise ValueError(f"the {size} px image is not PNG data")
    # IHDR is the first chunk: width and height, big-endian, after its length and type.
    width, height = struct.unpack(">II", data[16:24])
    if (width, height) != (size, size):
        raise ValueError(f"the {size} px image is {width}x{height}")


def ico_bytes(pngs: Mapping[int, bytes], sizes: tuple[int, ...] = ICO_SIZES) -> bytes:
    """An .ico holding one PNG per size (PNG entries: Windows Vista and later)."""
    header = struct.pack("<HHH", 0, 1, len(sizes))  # reserved, type 1 = icon, count
    offset = len(header) + 16 * len(sizes)
    entries = []
    for size in sizes:
        data = pngs[size]
        _check_png(size, data)
        # A width or height of 0 means 256 in the directory entry.
        dim = 0 if size >= 256 else size
        # width, height, palette colours, reserved, colour planes, bits per pixel, size, offset
        entries.append(struct.pack("<BBBBHHII", dim, dim, 0, 0, 1, 32, len(data), offset))
        offset += len(data)
    return header + b"".join(entries) + b"".join(pngs[size] for size in sizes)


def icns_bytes(pngs: Mapping[int, bytes]) -> bytes:
    """An .icns holding a PNG element for each type of ICNS_TYPES."""
    elements = []
    for kind, size in ICNS_TYPES:
        data = pngs[size]
        _check_png(size, data)
        # Each element: its type, then its length counting this 8-byte header, big-endian.
        elements.append(kind + struct.pack(">I", 8 + len(data)) + data)
    body = b"".join(elements)
    return b"icns" + struct.pack(">I", 8 + len(body)) + body
