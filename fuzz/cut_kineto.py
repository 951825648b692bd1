#!/usr/bin/env python3
"""Cuts a PyTorch-profiler (Kineto) trace down to a fuzz seed of a few KB.

    fuzz/cut_kineto.py TRACE.json[.gz] OUT.json [EVENTS] [--gzip]

Keeps the file's top-level members (deviceProperties, distributedInfo, ...),
its metadata ("M") events, and a window of EVENTS events (default 40) in time
order starting where the events are most varied, so that a launch keeps its
kernel, a flow its two ends and a step its ops. Written with the trace's own
layout (one event per line); --gzip compresses it as the profiler does.
"""
import gzip
import json
import sys


def load(path):
    with open(path, 'rb') as f:
        data = f.read()
    if data[:2] == b'\x1f\x8b':
        data = gzip.decompress(data)
    return json.loads(data)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith('--')]
    if len(args) < 2:
        sys.exit(__doc__)
    src, out = args[0], args[1]
    n = int(args[2]) if len(args) > 2 else 40
    doc = load(src)
    events = doc['traceEvents'] if isinstance(doc, dict) else doc
    meta = [e for e in events if e.get('ph') == 'M'][:8]
    timed = sorted((e for e in events if e.get('ph') != 'M' and isinstance(e.get('ts'), (int, float))),
                   key=lambda e: e['ts'])
    # The window with the most distinct (phase, category) pairs.
    best, best_at = -1, 0
    for at in range(0, max(1, len(timed) - n + 1), max(1, n // 4)):
        kinds = {(e.get('ph'), e.get('cat')) for e in timed[at:at + n]}
        if len(kinds) > best:
            best, best_at = len(kinds), at
    window = timed[best_at:best_at + n]
    kept = meta + window
    if isinstance(doc, dict):
        top = {k: v for k, v in doc.items() if k != 'traceEvents'}
        body = '{\n' + ''.join(f'  {json.dumps(k)}: {json.dumps(v)},\n' for k, v in top.items())
        body += '  "traceEvents": [\n' + ',\n'.join('  ' + json.dumps(e) for e in kept) + '\n  ]\n}\n'
    else:
        body = '[\n' + ',\n'.join(json.dumps(e) for e in kept) + '\n]\n'
    data = body.encode()
    if '--gzip' in sys.argv:
        data = gzip.compress(data, mtime=0)
    with open(out, 'wb') as f:
        f.write(data)
    print(f'{out}: {len(kept)} events, {len(data)} bytes')


if __name__ == '__main__':
    main()
