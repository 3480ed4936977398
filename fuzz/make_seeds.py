#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into fuzz/seeds/<target>/.

Seeds are realistic inputs: real command outputs, the example hub manifests
and the hub tests' ones, SSE bodies shaped like the agent tests' scripted
server, the differential suite's command lines. Deterministic; run it again
after changing a target's input layout:  python3 fuzz/make_seeds.py
"""

import json
import re
import struct
from pathlib import Path

FUZZ = Path(__file__).resolve().parent
ROOT = FUZZ.parent
SEEDS = FUZZ / "seeds"


def write(target, name, data):
    d = SEEDS / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data if isinstance(data, bytes) else data.encode())


# --- present: a 42-byte header (see fuzz_targets/present.rs), then stdout + stderr.
def present_seed(stdout, stderr=b"", *, code=0, ms=12, flags=0, repeat=0, cmd=255, path=255,
                 max_lines=200, max_bytes=50 * 1024, head=150, tail=50, preview=16 * 1024,
                 timeout_ms=0, cap=0, dropped=0):
    header = struct.pack("<BBHIHHIiIIIII", flags, repeat, max_lines, max_bytes, head, tail, preview,
                         code, ms, timeout_ms, len(stdout), cap, dropped) + bytes([cmd, path])
    assert len(header) == 42
    return header + stdout + stderr


LOG = "".join(f"2024-03-01 10:{i // 60:02}:{i % 60:02} {'ERROR' if i % 23 == 0 else 'INFO'} request {i}\n"
              for i in range(300)).encode()
PNG = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89"
present = {
    "hello": present_seed(b"hi\n"),
    "empty": present_seed(b""),
    "stderr_fail": present_seed(b"", b"cat: missing.txt: No such file or directory\n", code=1, cmd=0),
    "grep_usage": present_seed(b"", b"grep: usage: grep [OPTION]... PATTERNS [FILE]...\n", code=2, cmd=1),
    "error_line": present_seed(b"", b"[error] unknown command: foo\n", code=127),
    "log_overflow": present_seed(LOG),
    "log_small_limits": present_seed(LOG, max_lines=10, max_bytes=400, head=5, tail=3, preview=200),
    "long_line": present_seed(b"a" * 4000 + b"\n", repeat=15),
    "after_filler": present_seed(b"the end\n", repeat=0x80),
    "png_file": present_seed(PNG, cmd=0, path=0),
    "png_stream": present_seed(PNG),
    "zip": present_seed(b"PK\x03\x04\x14\0\0\0\x08\0\0\0!\0", cmd=0, path=1),
    "unicode": present_seed("日本語テキスト ✓ naïve café\n".encode() * 40, max_bytes=500, preview=300),
    "crlf": present_seed(b"alpha\r\nbeta\r\ngamma\r\n"),
    "ansi": present_seed(b"\x1b[31mred\x1b[0m normal text line\n" * 20),
    "timeout": present_seed(b"tick\n" * 30, code=124, ms=30004, flags=1 | 2 | 4, timeout_ms=30000,
                            cap=64 * 1024 * 1024, dropped=10),
    "capped": present_seed(b"y\n" * 1000, flags=2, cap=1 << 20),
    "spill_fails": present_seed(LOG, flags=8),
    "json": present_seed(json.dumps({"name": "demo", "port": 5432, "tags": ["web", "api"]}, indent=2).encode() + b"\n"),
    "both_big": present_seed(LOG, LOG, code=1),
}
for name, data in present.items():
    write("present", name, data)

# --- hub_manifest: byte 0 picks the format: 0 json, 1 toml, 2 yaml, 3 yml.
FORMAT = {"json": 0, "toml": 1, "yaml": 2, "yml": 3}
for manifest in sorted((ROOT / "examples" / "hub").glob("*/manifest.*")):
    fmt = manifest.suffix[1:]
    write("hub_manifest", f"example_{manifest.parent.name}", bytes([FORMAT[fmt]]) + manifest.read_bytes())
load_tests = (ROOT / "crates" / "clix-hub" / "tests" / "load.rs").read_text()
for name, fmt in [("JSON", "json"), ("TOML", "toml"), ("YAML", "yaml")]:
    m = re.search(r'const ' + name + r': &str = r#"(.*?)"#;', load_tests, re.S)
    if m:
        write("hub_manifest", f"load_test_{fmt}", bytes([FORMAT[fmt]]) + m.group(1).encode())
hub_more = {
    "minimal_json": (0, '{"name": "t", "version": "1", "description": "d", "command": "./t"}'),
    "params_yaml": (2, "name: t\nversion: \"1\"\ndescription: d\ncommand: ./t\nparameters:\n"
                       "  - {name: n, type: integer, default: 3}\n  - {name: mode, type: string, values: [a, b]}\n"
                       "  - {name: file, type: string, positional: true, required: true}\n"),
    "output_schema_toml": (1, "name = \"t\"\nversion = \"1\"\ndescription = \"d\"\ncommand = \"./t\"\n"
                              "timeout_ms = 5000\nrate_limit = 10\nserialize = true\n"
                              "[output]\nformat = \"json\"\nschema = { type = \"object\", required = [\"ok\"] }\n"
                              "[env]\nLANG = \"C\"\n"),
    "bad_types_json": (0, '{"name": 3, "version": [], "parameters": [{"name": "help", "type": "nope"}], "x": 1}'),
    "yaml_anchors": (3, "a: &a {name: t}\nb: *a\nname: t\nversion: '1'\ndescription: d\ncommand: t\n"),
}
for name, (fmt, text) in hub_more.items():
    write("hub_manifest", name, bytes([fmt]) + text.encode())


# --- sse: byte 0 = shape (bit 0 Anthropic, bit 1 OpenAI unstreamed, bits 2-4 status), then the body.
def data(v):
    return f"data: {json.dumps(v)}\n\n"


def event(name, v):
    return f"event: {name}\ndata: {json.dumps(v)}\n\n"


def openai_text(text):
    frames = [data({"choices": [{"index": 0, "delta": {"content": text[i:i + 5]}}]}) for i in range(0, len(text), 5)]
    frames.append(data({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
    frames.append(data({"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 3}}))
    return "".join(frames) + "data: [DONE]\n\n"


def openai_calls(calls):
    frames = []
    for i, (name, args) in enumerate(calls):
        frames.append(data({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": i, "id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": ""}}]}}]}))
        for j in range(0, len(args), 7):
            frames.append(data({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": i, "function": {"arguments": args[j:j + 7]}}]}}]}))
    frames.append(data({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}))
    return "".join(frames) + "data: [DONE]\n\n"


def anthropic(text, tools):
    frames = [event("message_start", {"type": "message_start", "message": {"id": "m", "role": "assistant",
                                                                           "content": [], "usage": {"input_tokens": 9, "output_tokens": 1}}})]
    index = 0
    if text:
        frames.append(event("content_block_start", {"type": "content_block_start", "index": 0,
                                                    "content_block": {"type": "text", "text": ""}}))
        for i in range(0, len(text), 4):
            frames.append(event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                        "delta": {"type": "text_delta", "text": text[i:i + 4]}}))
        frames.append(event("content_block_stop", {"type": "content_block_stop", "index": 0}))
        index = 1
    for tid, args in tools:
        frames.append(event("content_block_start", {"type": "content_block_start", "index": index,
                                                    "content_block": {"type": "tool_use", "id": tid, "name": "run", "input": {}}}))
        for i in range(0, len(args), 6):
            frames.append(event("content_block_delta", {"type": "content_block_delta", "index": index,
                                                        "delta": {"type": "input_json_delta", "partial_json": args[i:i + 6]}}))
        frames.append(event("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    frames.append(event("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use" if tools else "end_turn"},
                                          "usage": {"output_tokens": 7}}))
    frames.append(event("message_stop", {"type": "message_stop"}))
    return "".join(frames)


RAW_NEWLINE_ARGS = '{"command": "cat a\nwc -l a"}'  # a raw newline inside the string, as small models send
sse = {
    "openai_text": (0, openai_text("There are 42 ERROR lines.")),
    "openai_call": (0, openai_calls([("run", json.dumps({"command": "grep -c ERROR app.log"}))])),
    "openai_two_calls": (0, openai_calls([("run", json.dumps({"command": "ls"})),
                                          ("run", json.dumps({"command": "wc -l", "stdin": "a\nb\n"}))])),
    "openai_raw_newline": (0, openai_calls([("run", RAW_NEWLINE_ARGS)])),
    "openai_bad_tool": (0, openai_calls([("bash", '{"cmd": "ls"}')])),
    "openai_no_id": (0, data({"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "function": {"name": "run", "arguments": "{\"command\":\"pwd\"}"}}]}}]}) + "data: [DONE]\n\n"),
    "openai_stream_error": (0, data({"error": {"message": "overloaded"}})),
    "openai_empty_then_json": (0, "data: [DONE]\n\n"),
    "openai_unstreamed": (2, json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": "done",
                                                                          "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "run", "arguments": "{\"command\": \"ls\"}"}}]}}],
                                         "usage": {"prompt_tokens": 1, "completion_tokens": 1}})),
    "anthropic_text": (1, anthropic("The answer is 42.", [])),
    "anthropic_call": (1, anthropic("Let me look.", [("toolu_1", json.dumps({"command": "ls -la"}))])),
    "anthropic_raw_tab": (1, anthropic("", [("toolu_2", '{"command": "printf \'x\ty\'"}')])),
    "anthropic_no_args": (1, anthropic("", [("toolu_3", "")])),
    "anthropic_overloaded": (1, event("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})),
    "http_429_retry_after": (6 << 2, "2\n" + json.dumps({"error": {"message": "rate limited"}})),
    "http_500_quotes_key": (7 << 2, "\n" + json.dumps({"error": {"message": "bad key sk-fuzz-canary-5bd0e8a1c4"}})),
    "http_400_anthropic": ((5 << 2) | 1, "0.5\n" + json.dumps({"type": "error", "message": "invalid request"})),
}
for name, (shape, body) in sse.items():
    write("sse", name, bytes([shape]) + body.encode())

# --- tool_args: byte 0 = mask of escapes written raw, then the string.
tool_args = {
    "ls": (0xFF, "ls -la"),
    "multiline": (0xFF, "cat a\nwc -l a\n"),
    "tabs": (0x55, "printf 'x\ty'\r\n"),
    "controls": (0xAA, "a\u0001b\u001fc\u007fd\u0085e"),
    "json_args": (0x0F, '{"command": "grep -c ERROR app.log", "stdin": "x\\n"}'),
    "json_raw_newline": (0x01, RAW_NEWLINE_ARGS),
    "quotes": (0xFF, 'echo "a\nb" \\ \\\\ \\"'),
    "unicode": (0xFF, "日本語\n✓ naïve\u2028x"),
}
for name, (mask, s) in tool_args.items():
    write("tool_args", name, bytes([mask]) + s.encode())

# --- memory_query: what people and models search for.
queries = ["api key rotation", "how do I deploy a release?", '"quoted" AND -minus', "NEAR(a b)", "col:value",
           "日本語", "naïve café", "*", "a OR b NOT c", "the", "ops/rotate.sh v1.2.3", "^caret +plus", "tabs vs spaces",
           "résumé", "", "x" * 300]
for i, q in enumerate(queries):
    write("memory_query", f"q{i:02}", q)

# --- engine_line: the differential suite's lines, and lines aimed at the jail.
diff = (ROOT / "crates" / "clix" / "tests" / "differential.rs").read_text()
lines = []
for m in re.finditer(r'(?:same|known)\(\s*"((?:[^"\\]|\\.)*)"', diff):
    lines.append(json.loads('"' + m.group(1).replace("\\'", "'") + '"'))
attacks = [
    "echo pwned > ../canary.txt",
    "echo pwned > @PARENT@/canary.txt",
    "echo pwned >> @GRAND@/canary.txt",
    "echo pwned > canary-link",
    "echo pwned > up/canary.txt",
    "cat up/canary.txt",
    "ln -s .. out && echo x > out/escape.txt",
    "ln -s @PARENT@ p && write p/new.txt hello",
    "cd .. && echo x > escape.txt; ls",
    "cd / && ls && echo x > /escape.txt",
    "write ../escape.txt hi",
    "write @PARENT@/escape.txt hi",
    "cp notes.txt ../copy.txt",
    "mv notes.txt @GRAND@/moved.txt",
    "rm -rf .. ; ls @PARENT@",
    "mkdir -p ../newdir && touch ../newdir/f",
    "tar -cf ../x.tar . 2>&1; ls ..",
    "find .. -name canary.txt -exec rm {} \\;",
    "sed -i s/canary/pwned/ canary-link",
    "cat -b blob.bin",
    "see photo.png",
    "memory store the deploy key rotates every 90 days",
    "memory search deploy key",
    "memory recent 3",
    "help; help write",
    "for i in $(seq 1 100000); do echo $i; done | tail -1",
    "while true; do :; done",
    "sleep 5",
    "yes | head -c 100000 | wc -c",
    "seq 1 1000000",
    "printf '\\0\\1\\2' > bin && cat bin",
    "f() { f; }; f",
    "x=$(cat app.log); echo ${#x}",
    "awk -F, '{s+=$3} END {print s}' data.csv",
    "jq '.tags[]' config.json",
    "grep -r TODO . | sort",
    "cat <<EOF > out.txt\nhello\nEOF\ncat out.txt",
    "wc -l\0stdin bytes\nsecond line\n",  # a line, NUL, then its stdin
]
for i, line in enumerate(lines + attacks):
    write("engine_line", f"line{i:03}", line)
print(f"seeds: present {len(present)}, hub_manifest {len(list((SEEDS / 'hub_manifest').iterdir()))}, "
      f"sse {len(sse)}, tool_args {len(tool_args)}, memory_query {len(queries)}, engine_line {len(lines) + len(attacks)}")
