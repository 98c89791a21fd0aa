"""A small MessagePack reader: the amdhsa metadata note is msgpack (AMDGPUUsage, code object v3+)."""
import struct


def unpack(data: bytes):
    value, _ = read(data, 0)
    return value


def read(data: bytes, at: int):
    tag = data[at]
    at += 1
    if tag <= 0x7f:
        return tag, at
    if tag >= 0xe0:
        return tag - 0x100, at
    if 0xa0 <= tag <= 0xbf:
        return text(data, at, tag & 0x1f)
    if 0x90 <= tag <= 0x9f:
        return array(data, at, tag & 0x0f)
    if 0x80 <= tag <= 0x8f:
        return mapping(data, at, tag & 0x0f)
    if tag in FIXED:
        code, size = FIXED[tag]
        return struct.unpack_from(code, data, at)[0], at + size
    if tag in LENGTHS:
        code, size, reader = LENGTHS[tag]
        length = struct.unpack_from(code, data, at)[0]
        return reader(data, at + size, length)
    if tag in (0xc0, 0xc2, 0xc3):
        return {0xc0: None, 0xc2: False, 0xc3: True}[tag], at
    raise ValueError(f"msgpack tag 0x{tag:x} not read")


def text(data, at, length):
    return data[at:at + length].decode(), at + length


def raw(data, at, length):
    return bytes(data[at:at + length]), at + length


def array(data, at, length):
    items = []
    for _ in range(length):
        item, at = read(data, at)
        items.append(item)
    return items, at


def mapping(data, at, length):
    items = {}
    for _ in range(length):
        key, at = read(data, at)
        items[key], at = read(data, at)
    return items, at


FIXED = {0xcc: (">B", 1), 0xcd: (">H", 2), 0xce: (">I", 4), 0xcf: (">Q", 8),
         0xd0: (">b", 1), 0xd1: (">h", 2), 0xd2: (">i", 4), 0xd3: (">q", 8),
         0xca: (">f", 4), 0xcb: (">d", 8)}
LENGTHS = {0xd9: (">B", 1, text), 0xda: (">H", 2, text), 0xdb: (">I", 4, text),
           0xc4: (">B", 1, raw), 0xc5: (">H", 2, raw), 0xc6: (">I", 4, raw),
           0xdc: (">H", 2, array), 0xdd: (">I", 4, array),
           0xde: (">H", 2, mapping), 0xdf: (">I", 4, mapping)}
