"""The yardstick of docs/performance.md's off-policy evaluation: Python's
own json module parsing a JSON-lines log, one json.loads a line (what
any Python evaluation of the log must do first). Prints the records.

Run: python3 bench/evaluate/pyjson.py LOG
"""
import json
import sys

n = 0
with open(sys.argv[1]) as f:
    for line in f:
        json.loads(line)
        n += 1
print(n)
