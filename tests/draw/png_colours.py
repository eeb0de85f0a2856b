#!/usr/bin/env python3
"""Where colours are in a PNG: for each colour asked for, how many pixels have it (within a
tolerance per channel) and their median x and y. Decodes the PNG with zlib alone (8-bit RGB or
RGBA, not interlaced: what Chromium writes), so the test needs no imaging library.

usage: png_colours.py FILE.png RRGGBB... ; prints "width height", then "count x y" per colour.
"""
import struct
import sys
import zlib

TOLERANCE = 3


def decode(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"{path}: not a PNG")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour_type, _, _, interlace = header
    if depth != 8 or colour_type not in (2, 6) or interlace:
        sys.exit(f"{path}: unsupported PNG (depth {depth}, colour type {colour_type})")
    channels = 3 if colour_type == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        rows.append(line)
        previous = line
    return width, height, channels, rows


def main():
    width, height, channels, rows = decode(sys.argv[1])
    wanted = [tuple(int(h[k:k + 2], 16) for k in (0, 2, 4)) for h in sys.argv[2:]]
    found = [([], []) for _ in wanted]
    for y, line in enumerate(rows):
        for x in range(width):
            pixel = line[x * channels:x * channels + 3]
            for k, colour in enumerate(wanted):
                if all(abs(pixel[c] - colour[c]) <= TOLERANCE for c in range(3)):
                    found[k][0].append(x)
                    found[k][1].append(y)
    print(width, height)
    for xs, ys in found:
        if not xs:
            print(0, -1, -1)
        else:
            print(len(xs), sorted(xs)[len(xs) // 2], sorted(ys)[len(ys) // 2])


if __name__ == "__main__":
    main()
