#!/usr/bin/env python3
"""Prints a --filter regex for a stratified subset of an eval suite.

    python3 scripts/eval-subset.py evals/core.jsonl 20

Takes tasks round-robin over the categories (the largest category first,
ties in the order they appear), each category's tasks in file order, until
N are taken: every category is represented before any gets a second task,
and the subset is the same every time.
"""

import json
import re
import sys

suite, n = sys.argv[1], int(sys.argv[2])
by_category = {}
for line in open(suite, encoding="utf-8"):
    if line.strip():
        task = json.loads(line)
        by_category.setdefault(task["category"], []).append(task["id"])
order = sorted(by_category, key=lambda c: -len(by_category[c]))  # stable: ties keep file order
chosen = []
depth = 0
while len(chosen) < n and any(len(ids) > depth for ids in by_category.values()):
    for category in order:
        ids = by_category[category]
        if depth < len(ids) and len(chosen) < n:
            chosen.append(ids[depth])
    depth += 1
print("^(" + "|".join(re.escape(i) for i in chosen) + ")$")
