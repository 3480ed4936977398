#!/usr/bin/env python3
"""Two `clix mcp --http` replicas on one PostgreSQL store behind nginx, driven
by the official Python MCP client (`pip install mcp`, 2.x).

    python3 tests/replicas/driver.py SCENARIO --url http://127.0.0.1:PORT/mcp --workspace WS

SCENARIO is memory, rate-limit, kill or store-restart. The Rust test
crates/clix/tests/replicas.rs starts PostgreSQL, the replicas (`--route r1`
and `--route r2`) and nginx, then runs each scenario. The bearer token comes
in CLIX_MCP_TOKEN.

The driver tells which replica holds a session by the suffix of its
Mcp-Session-Id (`.r1`, `.r2`). When it needs the test to act it prints a
line starting with `@` (`@kill r1`, `@stop-store`, `@start-store`) and
waits for `ok` on stdin. It prints one line per check and exits 1 at the
first that fails.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import time
import uuid
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

FOOTER = re.compile(r"\n?\[exit:(\d+) \| [0-9.]+m?s\]$")
# A safety net for one call on a busy machine, not a figure.
CALL_LIMIT = 60


def check(cond: bool, what: str) -> None:
    if not cond:
        raise AssertionError(what)


def say(line: str) -> None:
    print(line, flush=True)


async def ask(action: str) -> None:
    """Has the test do `action` (kill a replica, stop the store) and waits until it is done."""
    say(f"@{action}")
    answer = await anyio.to_thread.run_sync(sys.stdin.readline)
    check(answer.strip() == "ok", f"the test did not do {action}: {answer!r}")


class Session:
    """One MCP session through nginx. Keeps the id the answering replica
    issued and every HTTP error answer (status, body) it met."""

    def __init__(self, url: str, token: str):
        self.id: str | None = None
        self.errors: list[tuple[int, str]] = []

        async def on_response(response: httpx2.Response) -> None:
            sid = response.headers.get("mcp-session-id")
            if sid and self.id is None:
                self.id = sid
            if response.status_code >= 400:
                await response.aread()
                self.errors.append((response.status_code, response.text))

        self.http = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {token}"},
            event_hooks={"response": [on_response]},
            timeout=httpx2.Timeout(CALL_LIMIT, read=CALL_LIMIT),
        )
        self.client = Client(streamable_http_client(url, http_client=self.http), mode="legacy")

    @property
    def route(self) -> str:
        check(self.id is not None and "." in self.id, f"a session id that names its replica: {self.id!r}")
        return self.id.rsplit(".", 1)[1]

    # The client's task groups must be left in the order they were entered
    # (anyio): sessions are closed last-opened first (an AsyncExitStack).
    async def __aenter__(self) -> "Session":
        await self.client.__aenter__()
        return self

    async def __aexit__(self, *exc) -> None:
        try:
            await self.client.__aexit__(None, None, None)
        except Exception:
            pass  # a session whose replica is gone cannot be closed cleanly
        await self.http.aclose()

    async def run(self, command: str) -> tuple[int, str]:
        """The line's exit code and output (without the footer)."""
        with anyio.fail_after(CALL_LIMIT):
            result = await self.client.call_tool("run", {"command": command})
        text = result.content[0].text
        return result.structured_content["exit_code"], FOOTER.sub("", text)


async def open_session(args, stack: AsyncExitStack) -> Session:
    """A new session, closed with `stack`."""
    return await stack.enter_async_context(Session(args.url, args.token))


async def open_on(args, stack: AsyncExitStack, route: str, tries: int = 6) -> Session:
    """A session on replica `route`: nginx spreads new sessions over both."""
    for _ in range(tries):
        async with AsyncExitStack() as attempt:
            s = await open_session(args, attempt)
            if s.route == route:
                stack.push_async_exit(attempt.pop_all())
                return s
    raise AssertionError(f"{tries} new sessions and none landed on {route}")


async def recent_texts(s: Session, n: int) -> set[str]:
    code, out = await s.run(f"memory recent {n} --json")
    check(code == 0, f"memory recent: {out}")
    return {m["text"] for m in json.loads(out)}


# ---------------------------------------------------------------- scenarios


async def memory(args) -> None:
    """A memory stored through a session on r1 is found by one on r2, and back;
    every request of a session reaches the replica that issued its id."""
    async with AsyncExitStack() as stack:
        s1, s2 = await open_on(args, stack, "r1"), await open_on(args, stack, "r2")
        say(f"ok sessions {s1.id} and {s2.id}")
        for s in (s1, s2):
            # A shell's cd holds only on the replica that holds the session.
            await s.run(f"mkdir -p here-{s.route} && cd here-{s.route}")
            for _ in range(3):
                code, out = await s.run("pwd")
                check(code == 0 and out.strip().endswith(f"/here-{s.route}"), f"{s.route}'s cwd kept: {out!r}")
            check(s.errors == [], f"no request of {s.id} was refused: {s.errors}")
        say("ok each session's requests reach its own replica (cwd kept, no 404)")

        for writer, reader in ((s1, s2), (s2, s1)):
            text = f"the staging database moved to host zq{uuid.uuid4().hex[:10]}"
            code, out = await writer.run(f"memory store '{text}'")
            check(code == 0 and out.startswith("stored #"), f"stored on {writer.route}: {out!r}")
            code, out = await reader.run(f"memory search {text.split()[-1]} --json")
            check(code == 0 and [m["text"] for m in json.loads(out)] == [text],
                  f"stored on {writer.route}, searched on {reader.route}: {out!r}")
            say(f"ok stored through {writer.route}, found through {reader.route}")


async def rate_limit(args) -> None:
    """12 concurrent callers over both replicas; `tick` allows 5 calls a minute."""
    async with AsyncExitStack() as stack:
        callers = [await open_session(args, stack) for _ in range(12)]
        by_route = {r: sum(s.route == r for s in callers) for r in ("r1", "r2")}
        check(min(by_route.values()) >= 3, f"callers spread over both replicas: {by_route}")
        results = await asyncio.gather(*(s.run("tick") for s in callers))
        ran = [s.route for s, (code, _) in zip(callers, results) if code == 0]
        limited = [(code, out) for code, out in results if code == 75 and "RATE_LIMITED" in out]
        log = Path(args.workspace) / "executions.log"
        executions = len(log.read_text().splitlines()) if log.exists() else 0
        say(f"ok {len(results)} calls from {by_route}: {len(ran)} ran (r1 {ran.count('r1')}, r2 {ran.count('r2')}), "
            f"{len(limited)} rate-limited, {executions} executions")
        check(executions == len(ran), f"every exit 0 was a real run: {executions} executions, {len(ran)} exit 0")
        others = [r for r in results if r[0] != 0 and r not in limited]
        check(others == [], f"every other call got the rate-limit exit (75, RATE_LIMITED): {others}")
        check(len(ran) == 5, f"rate_limit 5 held across both replicas: {len(ran)} ran "
              f"(r1 {ran.count('r1')}, r2 {ran.count('r2')})")


async def kill(args) -> None:
    """SIGKILL of r1 while its session stores memories."""
    async with AsyncExitStack() as stack:
        doomed, survivor = await open_on(args, stack, "r1"), await open_on(args, stack, "r2")
        await survivor.run("mkdir -p keep && cd keep")
        tag = f"kq{uuid.uuid4().hex[:8]}"
        acked: list[str] = []
        failure: list[str] = []

        async def store_until_it_fails() -> None:
            n = 0
            while True:
                n += 1
                text = f"note {n} of the doomed replica {tag}n{n:04d}"
                try:
                    code, out = await doomed.run(f"memory store '{text}'")
                except Exception as e:  # the replica died under the call
                    failure.append(f"{type(e).__name__}: {e}")
                    return
                if code != 0:
                    failure.append(out)
                    return
                acked.append(text)

        async with anyio.create_task_group() as tg:
            tg.start_soon(store_until_it_fails)
            with anyio.fail_after(CALL_LIMIT):
                while len(acked) < 5 and not failure:
                    await anyio.sleep(0.01)
            check(not failure, f"stores before the kill: {failure}")
            await ask("kill r1")
        say(f"ok r1 killed after {len(acked)} acknowledged stores; the call in flight failed: {failure[0][:120]}")

        # The killed replica's session: nginx sends its id to r2, which never issued it.
        doomed.errors.clear()
        try:
            await doomed.run("echo still there")
            refused = None
        except Exception as e:
            refused = e
        check(refused is not None, "a call on the killed replica's session succeeded")
        check("Session terminated" in str(refused), f"the client's error for a 404: {refused}")
        check(any(code == 404 and "Session not found" in body for code, body in doomed.errors),
              f"HTTP 404 Session not found: {doomed.errors}")
        say("ok the killed replica's session gets 404 Session not found")

        code, out = await survivor.run("pwd")
        check(code == 0 and out.strip().endswith("/keep") and survivor.errors == [],
              f"the other replica's session carries on with its cwd: {out!r} {survivor.errors}")
        say("ok the session on r2 carries on")

        async with AsyncExitStack() as own:
            again = await open_session(args, own)
            check(again.route == "r2", f"a new session lands on the live replica: {again.id}")
            code, out = await again.run("echo started again")
            check(code == 0 and out.strip() == "started again", f"the new session works: {out!r}")
        say("ok a new session starts on r2 and works")

        stored = await recent_texts(survivor, len(acked) + 50)
        missing = [t for t in acked if t not in stored]
        check(missing == [], f"every acknowledged memory is in the store: {len(missing)} missing: {missing[:3]}")
        say(f"ok all {len(acked)} acknowledged memories are in the store")


async def store_restart(args) -> None:
    """PostgreSQL stopped and started again while both replicas store."""
    tag = f"sq{uuid.uuid4().hex[:8]}"
    acked: list[str] = []
    # Per replica: the outputs of failed calls, and stores after the restart.
    failed: dict[str, list[str]] = {"r1": [], "r2": []}
    after: dict[str, int] = {"r1": 0, "r2": 0}
    phase = {"now": "before"}
    stop = anyio.Event()

    async def load(s: Session) -> None:
        n = 0
        while not stop.is_set():
            n += 1
            text = f"note {n} from {s.route} under load {tag}{s.route}n{n:04d}"
            try:
                code, out = await s.run(f"memory store '{text}'")
            except Exception as e:
                code, out = -1, f"{type(e).__name__}: {e}"
            if code == 0:
                acked.append(text)
                if phase["now"] == "after":
                    after[s.route] += 1
            elif phase["now"] == "before":
                raise AssertionError(f"a store failed before the store was stopped: {out}")
            else:
                failed[s.route].append(out)
                await anyio.sleep(0.05)

    async def wait_for(cond, what: str, limit: float) -> None:
        deadline = time.monotonic() + limit
        while not cond():
            check(time.monotonic() < deadline, f"waited {limit} s for {what}")
            await anyio.sleep(0.02)

    async with AsyncExitStack() as stack:
        sessions = [await open_on(args, stack, "r1"), await open_on(args, stack, "r2")]
        async with anyio.create_task_group() as tg:
            for s in sessions:
                tg.start_soon(load, s)
            await wait_for(lambda: len(acked) >= 6, "stores before the stop", CALL_LIMIT)
            phase["now"] = "down"
            await ask("stop-store")
            await wait_for(lambda: all(failed.values()), "a failed store on each replica", 30)
            code, out = await sessions[0].run("echo the shell still answers")
            check(code == 0 and "still answers" in out, f"lines without the memory run while it is down: {out!r}")
            phase["now"] = "after"
            await ask("start-store")
            await wait_for(lambda: all(after.values()), "a store on each replica after the restart", 30)
            stop.set()
        errors = [e for outs in failed.values() for e in outs]
        kinds = sorted({re.sub(r"postgres://\S+", "URL", e) for e in errors})
        say(f"ok {len(errors)} calls failed while the store was down, {len(kinds)} kinds: {kinds}")
        say(f"ok stores work again on both replicas ({after})")
        stored = await recent_texts(sessions[1], len(acked) + 50)
        missing = [t for t in acked if t not in stored]
        check(missing == [], f"nothing acknowledged is lost: {len(missing)} of {len(acked)} missing: {missing[:3]}")
        say(f"ok all {len(acked)} acknowledged memories are in the store")
        for e in errors:
            check(re.search(r"postgres", e, re.I) is not None, f"the error names the store: {e!r}")
            check(re.search(r"\b(check|start|retry|try again|make sure|is it running)\b", e, re.I) is not None,
                  f"the error says what to do: {e!r}")
        say("ok every error names the store and says what to do")


SCENARIOS = {"memory": memory, "rate-limit": rate_limit, "kill": kill, "store-restart": store_restart}


async def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    ap.add_argument("--url", required=True)
    ap.add_argument("--workspace", required=True)
    args = ap.parse_args()
    args.token = os.environ["CLIX_MCP_TOKEN"]
    started = time.monotonic()
    try:
        await SCENARIOS[args.scenario](args)
    except (AssertionError, ExceptionGroup) as e:
        # A check that failed inside a task group arrives wrapped.
        while isinstance(e, ExceptionGroup) and len(e.exceptions) == 1:
            e = e.exceptions[0]
        if not isinstance(e, AssertionError):
            raise
        say(f"FAIL {args.scenario}: {e}")
        return 1
    say(f"passed {args.scenario} in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
