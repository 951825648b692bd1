#!/usr/bin/env python3
"""Keeps the first whole packets of a strata CTF stream file, up to a size.

    fuzz/cut_stream.py STREAM OUT [MAX_BYTES]   (default 8192; at least one packet)

A packet's size in bits is the u64 at byte 56 (after the 32-byte header and
three u64 context fields: timestamp_begin, timestamp_end, content_size).
"""
import struct
import sys

if len(sys.argv) < 3:
    sys.exit(__doc__)
data = open(sys.argv[1], 'rb').read()
limit = int(sys.argv[3]) if len(sys.argv) > 3 else 8192
at = 0
while at + 64 <= len(data):
    size = struct.unpack_from('<Q', data, at + 56)[0] // 8
    if size == 0 or at + size > len(data) or (at > 0 and at + size > limit):
        break
    at += size
open(sys.argv[2], 'wb').write(data[:at])
print(f'{sys.argv[2]}: {at} bytes of {len(data)}')
