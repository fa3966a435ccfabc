#!/usr/bin/env python3
"""Independent reader of TensorBoard event files (TFRecord + tensorflow.Event), for tests.

Usage: tfevents_read.py EVENT_FILE

Verifies both masked CRC32Cs of every record and decodes the Event protobufs with a
hand-written wire-format parser (struct only; no TensorFlow, no protobuf library).
Prints one JSON line per event:
  {"file_version": "brain.Event:2"}                      for the file-version event
  {"step": 3, "tag": "loss", "value": 0.5}               per scalar summary value
Exits 1 with a message on stderr on any CRC mismatch, truncation or malformed proto.
"""
import json
import struct
import sys


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = _TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


class Bad(Exception):
    pass


def varint(buf, pos):
    result = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise Bad("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise Bad("varint too long")


def fields(buf):
    """Yields (field_number, wire_type, value) of a protobuf message."""
    pos = 0
    while pos < len(buf):
        key, pos = varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = varint(buf, pos)
        elif wire == 1:
            if pos + 8 > len(buf):
                raise Bad("truncated fixed64")
            value = buf[pos:pos + 8]
            pos += 8
        elif wire == 2:
            n, pos = varint(buf, pos)
            if pos + n > len(buf):
                raise Bad("truncated length-delimited field")
            value = buf[pos:pos + n]
            pos += n
        elif wire == 5:
            if pos + 4 > len(buf):
                raise Bad("truncated fixed32")
            value = buf[pos:pos + 4]
            pos += 4
        else:
            raise Bad("unsupported wire type %d" % wire)
        yield number, wire, value


def decode_event(data):
    out = []
    wall_time = None
    step = 0
    file_version = None
    summaries = []
    for number, wire, value in fields(data):
        if number == 1 and wire == 1:
            wall_time = struct.unpack("<d", value)[0]
        elif number == 2 and wire == 0:
            step = value - (1 << 64) if value >= (1 << 63) else value
        elif number == 3 and wire == 2:
            file_version = value.decode("utf-8")
        elif number == 5 and wire == 2:
            summaries.append(value)
        else:
            raise Bad("unexpected Event field %d (wire type %d)" % (number, wire))
    if wall_time is None or not wall_time > 1e9:
        raise Bad("event without a plausible wall_time: %r" % wall_time)
    if file_version is not None:
        out.append({"file_version": file_version})
    for summary in summaries:
        for number, wire, value in fields(summary):
            if number != 1 or wire != 2:
                raise Bad("unexpected Summary field %d" % number)
            tag = None
            simple = None
            for vnum, vwire, vval in fields(value):
                if vnum == 1 and vwire == 2:
                    tag = vval.decode("utf-8")
                elif vnum == 2 and vwire == 5:
                    simple = struct.unpack("<f", vval)[0]
                else:
                    raise Bad("unexpected Summary.Value field %d" % vnum)
            if tag is None or simple is None:
                raise Bad("Summary.Value without tag or simple_value")
            out.append({"step": step, "tag": tag, "value": simple})
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: tfevents_read.py EVENT_FILE")
    with open(sys.argv[1], "rb") as f:
        buf = f.read()
    pos = 0
    record = 0
    lines = []
    try:
        while pos < len(buf):
            if pos + 12 > len(buf):
                raise Bad("truncated record header")
            header = buf[pos:pos + 8]
            (length,) = struct.unpack("<Q", header)
            (length_crc,) = struct.unpack("<I", buf[pos + 8:pos + 12])
            if masked(crc32c(header)) != length_crc:
                raise Bad("length CRC mismatch")
            pos += 12
            if pos + length + 4 > len(buf):
                raise Bad("truncated record data")
            data = buf[pos:pos + length]
            (data_crc,) = struct.unpack("<I", buf[pos + length:pos + length + 4])
            if masked(crc32c(data)) != data_crc:
                raise Bad("data CRC mismatch")
            pos += length + 4
            lines.extend(decode_event(data))
            record += 1
    except Bad as e:
        sys.stderr.write("%s: record %d: %s\n" % (sys.argv[1], record, e))
        sys.exit(1)
    if not lines or "file_version" not in lines[0]:
        sys.stderr.write("%s: first event is not the file-version event\n" % sys.argv[1])
        sys.exit(1)
    for line in lines:
        print(json.dumps(line, sort_keys=True, separators=(",", ":")))


if __name__ == "__main__":
    main()
