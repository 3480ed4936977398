#!/usr/bin/env python3
"""clix's MCP server, driven by the official Python SDK client (`pip install mcp`, 2.x).

    python3 tests/mcp/suite.py --clix target/debug/clix --transport stdio --mode legacy
    python3 tests/mcp/suite.py --clix target/debug/clix --transport http --mode auto

Each run uses a fresh workspace and CLIX_HOME under a temporary folder (or
--home/--workspace), never the real home. It prints one line per check and
exits 1 if any failed. The Rust test crates/clix/tests/mcp.rs runs it for
both transports in both protocol modes.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import traceback
import zlib
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

FOOTER = re.compile(r"\n?\[exit:(\d+) \| [0-9.]+m?s\]$")


def text_of(result) -> str:
    return result.content[0].text


def check(cond: bool, what: str) -> None:
    if not cond:
        raise AssertionError(what)


class Server:
    """How to reach one clix MCP server: a new stdio child per client, or one HTTP server."""

    def __init__(self, args, home: Path, workspace: Path):
        self.args = args
        self.home = home
        self.workspace = workspace
        self.env = {"CLIX_HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        self.proc: subprocess.Popen | None = None
        self.url: str | None = None
        self.token: str | None = None

    def start_http(self, token: str | None = None) -> None:
        """Serves with CLIX_MCP_TOKEN=token, or with the token clix makes and prints."""
        argv = [self.args.clix, "mcp", "--workspace", str(self.workspace), "--http", "127.0.0.1:0"]
        env = dict(self.env, HOME=str(self.home))
        if token:
            env["CLIX_MCP_TOKEN"] = token
        self.token = token
        self.proc = subprocess.Popen(
            argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                raise RuntimeError(f"clix mcp --http exited early ({self.proc.wait()})")
            m = re.search(r"serving (http://\S+/mcp)", line)
            if m:
                self.url = m.group(1)
                told = self.proc.stderr.readline()
                if not token:
                    made = re.search(r"Bearer ([0-9a-f]{64})`", told)
                    if not made:
                        raise RuntimeError(f"clix mcp --http did not print the token it made: {told!r}")
                    self.token = made.group(1)
                return
        raise RuntimeError("clix mcp --http did not report its address")

    def stop(self) -> None:
        if self.proc:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.proc = None

    def client(self, **kw) -> Client:
        mode = self.args.mode
        if self.args.transport == "stdio":
            params = StdioServerParameters(
                command=self.args.clix, args=["mcp", "--workspace", str(self.workspace)], env=self.env
            )
            return Client(params, mode=mode, **kw)
        if self.token:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {self.token}"})
            return Client(streamable_http_client(self.url, http_client=http), mode=mode, **kw)
        return Client(self.url, mode=mode, **kw)


def tiny_png(width: int = 3, height: int = 2) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


# ---------------------------------------------------------------- the checks


async def t_list_tools(c: Client, srv: Server) -> None:
    tools = (await c.list_tools()).tools
    check([t.name for t in tools] == ["run"], f"exactly one tool named run, got {[t.name for t in tools]}")
    run = tools[0]
    schema = run.input_schema
    check(set(schema["properties"]) == {"command", "stdin", "timeout_ms"}, f"input properties: {schema}")
    check(schema["required"] == ["command"], "command is the only required argument")
    check(schema["properties"]["timeout_ms"]["type"] == "integer", "timeout_ms is an integer")
    check("Agent commands:" in run.description and "help" in run.description, "the engine's description")
    a = run.annotations
    check(a.read_only_hint is False and a.destructive_hint is True, f"annotations: {a}")
    check(a.open_world_hint is False, "no network by default, so not open world")
    out = run.output_schema
    check(out is not None, "an output schema is declared")
    # One RunReport type: `clix run --json` fills the streams too (a binary stdout as stdout_base64);
    # MCP leaves them out (the text shows them).
    # failed_stages: the pipeline stages that failed where the exit code does not say so;
    # changed: what the call changed in the workspace (`clix diff`, `clix undo`).
    want = {"exit_code", "duration_ms", "truncated", "spill_path", "stdout_bytes", "stderr_bytes", "stdout",
            "stdout_base64", "stderr", "failed_stages", "changed"}
    check(set(out["properties"]) == want, f"output schema properties: {sorted(out['properties'])}")
    check(all(out["properties"][p].get("description") for p in want), "every output field is documented")
    check(not {"stdout", "stdout_base64", "stderr"} & set(out.get("required", [])), "the streams are optional")
    # auto negotiates the 2026-07-28 era over stdio; over HTTP the server
    # offers only the handshake era (sessions), so auto falls back to it.
    version = c.protocol_version
    if srv.args.mode == "legacy" or srv.args.transport == "http":
        check(version < "2026-07-28", f"handshake-era protocol, got {version}")
    else:
        check(version >= "2026-07-28", f"server/discover era, got {version}")
    info = c.server_info
    if info is not None or srv.args.mode == "legacy":
        check(info.name == "clix", f"serverInfo.name is clix, got {info}")


async def t_echo(c: Client, srv: Server) -> None:
    r = await c.call_tool("run", {"command": "echo hi"})
    text = text_of(r)
    check(re.fullmatch(r"hi\n\[exit:0 \| \d+ms\]", text) is not None, f"text is the presentation: {text!r}")
    check(r.is_error is False, "isError false on exit 0")
    s = r.structured_content
    check(s["exit_code"] == 0 and s["stdout_bytes"] == 3 and s["stderr_bytes"] == 0, f"structured: {s}")
    check(s["truncated"] is False and s["spill_path"] is None, f"structured: {s}")
    check("stdout" not in s and "stderr" not in s, f"the streams are in the text, not repeated: {s}")


async def t_pipeline(c: Client, srv: Server) -> None:
    r = await c.call_tool("run", {"command": "printf 'pear\\napple\\nfig\\napple\\n' | sort | uniq -c | sort -rn | head -2"})
    lines = FOOTER.sub("", text_of(r)).splitlines()
    check([l.split() for l in lines] == [["2", "apple"], ["1", "pear"]] or [l.split() for l in lines][0] == ["2", "apple"],
          f"pipeline output: {lines}")
    r = await c.call_tool("run", {"command": "wc -l", "stdin": "a\nb\nc\n"})
    check(FOOTER.sub("", text_of(r)).strip() == "3", f"stdin feeds the line: {text_of(r)!r}")


async def t_failure(c: Client, srv: Server) -> None:
    r = await c.call_tool("run", {"command": "echo partial; echo 'boom: it broke' >&2; exit 3"})
    text = text_of(r)
    check(r.is_error is True, "isError true on a non-zero exit")
    check("partial" in text and "[stderr] boom: it broke" in text, f"stderr shown: {text!r}")
    check(FOOTER.search(text).group(1) == "3", f"footer exit code: {text!r}")
    check(r.structured_content["exit_code"] == 3 and r.structured_content["stderr_bytes"] > 0, "structured exit")
    r = await c.call_tool("run", {"command": "gerp foo"})
    check(r.is_error is True and "unknown command" in text_of(r), f"unknown command navigates: {text_of(r)!r}")


async def t_big_output(c: Client, srv: Server) -> None:
    r = await c.call_tool("run", {"command": "seq 1 5000"})
    text = text_of(r)
    s = r.structured_content
    check(s["truncated"] is True and s["stdout_bytes"] == 23893, f"structured: {s}")
    check("--- output truncated: 5000 lines" in text, "the overflow marker")
    check(text.startswith("1\n2\n3\n") and "\n5000\n" in text, "head and tail of the preview")
    check(s["spill_path"] and s["spill_path"] in text, f"spill path shown: {s['spill_path']}")
    check(len(text) < 16 * 1024 + 1024, f"the preview is bounded: {len(text)} chars")
    r = await c.call_tool("run", {"command": f"wc -l < {s['spill_path']}"})
    check(FOOTER.sub("", text_of(r)).strip() == "5000", f"the spill file holds everything: {text_of(r)!r}")


async def t_cd_persists(c: Client, srv: Server) -> None:
    await c.call_tool("run", {"command": "mkdir -p sub/deeper && cd sub && GREETING=hello"})
    r = await c.call_tool("run", {"command": "pwd; echo $GREETING"})
    lines = FOOTER.sub("", text_of(r)).splitlines()
    check(lines[0].endswith("/sub") and lines[1] == "hello", f"cd and variables persist: {lines}")
    await c.call_tool("run", {"command": "cd deeper"})
    r = await c.call_tool("run", {"command": "pwd"})
    check(FOOTER.sub("", text_of(r)).strip().endswith("/sub/deeper"), f"cd again: {text_of(r)!r}")
    await c.call_tool("run", {"command": f"cd {srv.workspace.resolve()}"})


async def t_separate_sessions(c: Client, srv: Server) -> None:
    await c.call_tool("run", {"command": "mkdir -p mine && cd mine && SECRET_ONE=1"})
    async with srv.client() as other:
        r = await other.call_tool("run", {"command": "pwd; echo \"[$SECRET_ONE]\""})
        lines = FOOTER.sub("", text_of(r)).splitlines()
        check(lines == [str(srv.workspace.resolve()), "[]"], f"another connection starts fresh: {lines}")
    r = await c.call_tool("run", {"command": "pwd"})
    check(FOOTER.sub("", text_of(r)).strip().endswith("/mine"), "the first connection kept its cwd")
    await c.call_tool("run", {"command": "cd .."})


async def t_timeout_ms(c: Client, srv: Server) -> None:
    started = time.monotonic()
    r = await c.call_tool("run", {"command": "sleep 5", "timeout_ms": 300})
    took = time.monotonic() - started
    check(took < 3, f"timeout_ms stops the line early ({took:.1f}s)")
    check(r.is_error is True and r.structured_content["exit_code"] == 124, f"timed out: {text_of(r)!r}")
    r = await c.call_tool("run", {"command": "echo", "bogus": 1})
    check(r.is_error is True and "invalid arguments" in text_of(r), f"unknown arguments are refused: {text_of(r)!r}")


async def t_cancel(c: Client, srv: Server) -> None:
    started = time.monotonic()
    with anyio.move_on_after(1.0) as scope:
        await c.call_tool("run", {"command": "sleep 30"})
    check(scope.cancelled_caught, "the call was still running when cancelled")
    # Calls of one connection run in order: this answers only once sleep 30 is gone.
    r = await c.call_tool("run", {"command": "echo after"})
    took = time.monotonic() - started
    check(FOOTER.sub("", text_of(r)).strip() == "after", f"the next call runs: {text_of(r)!r}")
    check(took < 5, f"cancellation returns promptly ({took:.1f}s)")


async def t_cancel_sandboxed(c: Client, srv: Server) -> None:
    if not shutil.which("bwrap") or not shutil.which("python3"):
        print("    (skipped: no bwrap or python3 for the OS tier)")
        return
    probe = await c.call_tool("run", {"command": "python3 -c 'print(7*6)'"})
    if "42" not in text_of(probe):
        print(f"    (skipped: the sandbox does not run here: {text_of(probe)!r})")
        return
    marker = srv.workspace / "cancel-marker.txt"
    script = "import time, pathlib; time.sleep(3); pathlib.Path('cancel-marker.txt').write_text('late')"
    started = time.monotonic()
    with anyio.move_on_after(1.0):
        await c.call_tool("run", {"command": f"python3 -c \"{script}\""})
    r = await c.call_tool("run", {"command": "echo after"})
    check(time.monotonic() - started < 3, "the sandboxed program is stopped promptly")
    check("after" in text_of(r), "the next call runs")
    await asyncio.sleep(3)
    check(not marker.exists(), "the sandboxed program was killed, not left running")


async def t_progress(c: Client, srv: Server) -> None:
    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    r = await c.call_tool("run", {"command": "sleep 2.5; echo done"}, progress_callback=on_progress)
    check(FOOTER.sub("", text_of(r)).strip() == "done", "the long call finishes")
    check(len(seen) >= 1, f"progress notifications arrived: {seen}")
    check(all(m and m.startswith("running for") for _, m in seen), f"progress messages: {seen}")


async def t_image(c: Client, srv: Server) -> None:
    (srv.workspace / "dot.png").write_bytes(tiny_png())
    r = await c.call_tool("run", {"command": "see dot.png"})
    kinds = [b.type for b in r.content]
    check(kinds == ["text", "image"], f"text then image content: {kinds} {text_of(r)!r}")
    check(r.content[1].mime_type == "image/png" and len(r.content[1].data) > 0, "image content")


async def t_undo(c: Client, srv: Server) -> None:
    """An MCP session's calls are a run of their own: `clix undo last` takes them back, whoever wrote."""
    ws = srv.workspace.resolve()
    (ws / "keep.txt").write_text("kept\n")
    await c.call_tool("run", {"command": f"cd {ws}"})
    r = await c.call_tool("run", {"command": f"cd {ws} && echo made > made.txt && rm keep.txt && "
                                             "python3 -c \"open('py.txt','w').write('py')\""})
    changed = r.structured_content.get("changed", "")
    check("changed 3 files: +2 ~0 \u22121" in changed, f"structuredContent says what changed: {r.structured_content}")
    env = dict(srv.env, HOME=str(srv.home))
    diff = subprocess.run([srv.args.clix, "diff", "last", "--workspace", str(ws)], env=env,
                          capture_output=True, text=True)
    check(diff.returncode == 0 and "+++ b/made.txt" in diff.stdout and "+++ b/py.txt" in diff.stdout, diff.stdout + diff.stderr)
    undo = subprocess.run([srv.args.clix, "undo", "last", "--workspace", str(ws)], env=env,
                          capture_output=True, text=True)
    check(undo.returncode == 0, f"undo: {undo.stdout}{undo.stderr}")
    check((ws / "keep.txt").read_text() == "kept\n", "keep.txt is back")
    check(not (ws / "made.txt").exists() and not (ws / "py.txt").exists(), "made.txt and py.txt are gone")


CHECKS = [
    t_list_tools,
    t_echo,
    t_pipeline,
    t_failure,
    t_big_output,
    t_cd_persists,
    t_separate_sessions,
    t_timeout_ms,
    t_cancel,
    t_cancel_sandboxed,
    t_progress,
    t_image,
    # Last: it undoes the session's run, every check's calls before it too.
    t_undo,
]


async def t_http_token(srv: Server) -> None:
    """CLIX_MCP_TOKEN: a request without the bearer token is refused; with it, the suite's client works."""
    import httpx2

    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}
    headers = {"Accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient() as http:
        r = await http.post(srv.url, json=body, headers=headers)
        check(r.status_code == 401, f"no token: {r.status_code}")
        r = await http.post(srv.url, json=body, headers=dict(headers, Authorization="Bearer wrong"))
        check(r.status_code == 401, f"wrong token: {r.status_code}")
    async with srv.client() as c:
        r = await c.call_tool("run", {"command": "echo authorized"})
        check("authorized" in text_of(r), "the token lets the client in")


async def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clix", required=True)
    ap.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    ap.add_argument("--mode", default="legacy")
    ap.add_argument("--only", default="")
    args = ap.parse_args()

    root = Path(tempfile.mkdtemp(prefix="clix-mcp-suite-"))
    home, workspace = root / "home", root / "ws"
    home.mkdir()
    workspace.mkdir()
    srv = Server(args, home, workspace)
    failed = 0
    label = f"{args.transport}/{args.mode}"
    try:
        if args.transport == "http":
            srv.start_http()
        async with srv.client() as c:
            for t in CHECKS:
                if args.only and args.only not in t.__name__:
                    continue
                started = time.monotonic()
                try:
                    await t(c, srv)
                    print(f"ok   {label} {t.__name__} ({time.monotonic() - started:.2f}s)", flush=True)
                    if t is t_list_tools:
                        print(f"     protocol {c.protocol_version}", flush=True)
                except Exception:
                    failed += 1
                    print(f"FAIL {label} {t.__name__}", flush=True)
                    traceback.print_exc()
        if args.transport == "http" and not args.only:
            srv.stop()
            srv.start_http(token="suite-token")
            try:
                await t_http_token(srv)
                print(f"ok   {label} t_http_token", flush=True)
            except Exception:
                failed += 1
                print(f"FAIL {label} t_http_token", flush=True)
                traceback.print_exc()
    finally:
        srv.stop()
        shutil.rmtree(root, ignore_errors=True)
    print(f"{label}: {len(CHECKS) - failed if not args.only else '-'} ok, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
