#!/usr/bin/env python3
"""Round-trip time of `run echo hi` over stdio, from the official Python SDK client.

    python3 tests/mcp/bench.py --clix ~/.cache/clix-target/release/clix [--calls 3000]

Prints p50/p90/p99 per protocol mode. The client's own cost is included; the
rmcp client of crates/clix/tests/mcp_rmcp.rs `bench_stdio_round_trip` adds far
less of its own. See docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path

from mcp import Client, StdioServerParameters


def pct(sorted_times: list[float], p: float) -> float:
    return sorted_times[round((len(sorted_times) - 1) * p)]


async def bench(clix: str, mode: str, calls: int, root: Path) -> None:
    env = {"CLIX_HOME": str(root / "home"), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    params = StdioServerParameters(command=clix, args=["mcp", "--workspace", str(root / "ws")], env=env)
    async with Client(params, mode=mode) as c:
        for _ in range(200):
            await c.call_tool("run", {"command": "echo hi"})
        times = []
        for _ in range(calls):
            t = time.perf_counter()
            r = await c.call_tool("run", {"command": "echo hi"})
            times.append(time.perf_counter() - t)
            assert not r.is_error
        times.sort()
        ms = lambda s: f"{s * 1000:.3f}ms"  # noqa: E731
        print(
            f"python client, stdio, mode={mode} ({c.protocol_version}): run echo hi x{calls}: "
            f"p50 {ms(pct(times, 0.5))}, p90 {ms(pct(times, 0.9))}, p99 {ms(pct(times, 0.99))}"
        )


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clix", required=True)
    ap.add_argument("--calls", type=int, default=3000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="clix-mcp-bench-") as tmp:
        root = Path(tmp)
        (root / "home").mkdir()
        (root / "ws").mkdir()
        for mode in ("legacy", "auto"):
            await bench(args.clix, mode, args.calls, root)


if __name__ == "__main__":
    asyncio.run(main())
