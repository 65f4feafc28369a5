#!/usr/bin/env python3
import re, sys, os
# N copies of one run's file-exporter output, each a run of its own: its run id, trace ids and times
# (60 s after the one before: a 1 GB job spans hours, and the replay's clock follows the spans).
src, dst, target = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = open(src).read()
tid = re.compile(r'"traceId":"[0-9a-f]{4}')
tim = re.compile(r'"((?:start|end)?[tT]imeUnixNano)":"(\d+)"')
n = -(-target // len(data))
with open(dst, 'w') as f:
    for i in range(n):
        off = i * 60 * 10**9
        s = data.replace('benchrun0000', 'benchrun%04d' % i)
        s = tid.sub('"traceId":"%04x' % i, s)
        s = tim.sub(lambda m: '"%s":"%d"' % (m.group(1), int(m.group(2)) + off), s)
        f.write(s)
print(n, "copies,", os.path.getsize(dst), "bytes")
