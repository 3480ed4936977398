//! The agent loop's parser of `run` call arguments, and its repair of raw
//! control characters inside JSON strings (a slip of small models: a
//! literal newline or tab where `\n` or `\t` belongs).
//!
//! Input: byte 0 is a bit mask, the rest a string `s` (lossy UTF-8).
//! Two checks per input:
//! 1. Round trip: `{"command": "x", "stdin": s}` serialized as JSON, then
//!    some of its escaped control characters (`\n`, `\t`, `\u0001`…,
//!    chosen by the mask bits in turn) written raw, as a small model
//!    would, must still parse, and give back `s` exactly as stdin.
//! 2. The input's string as the arguments themselves: the parser never
//!    panics; it gives a non-empty, trimmed command, or an `[error] …`
//!    text that says what to send instead; and any text that is valid
//!    JSON parses exactly as JSON says (the repair never changes a
//!    well-formed call).

#![no_main]

use clix_agent::ToolCall;
use clix_agent::fuzzing::parse_run_call;
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

fn call(arguments: String) -> ToolCall {
    ToolCall { id: "call_0".into(), name: "run".into(), arguments }
}

/// `json` with the escapes of control characters picked by `mask` (bit i
/// for the i-th such escape, cycling) replaced by the raw characters.
fn unescape_some(json: &str, mask: u8) -> String {
    let mut out = String::with_capacity(json.len());
    let mut chars = json.chars().peekable();
    let mut nth = 0u32;
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(next) = chars.next() else {
            out.push(c);
            break;
        };
        let raw = match next {
            'n' => Some('\n'),
            't' => Some('\t'),
            'r' => Some('\r'),
            'b' => Some('\u{8}'),
            'f' => Some('\u{c}'),
            'u' => {
                let hex: String = chars.clone().take(4).collect();
                u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32).filter(|c| c.is_control())
            }
            _ => None,
        };
        match raw {
            Some(raw) => {
                let pick = mask & (1 << (nth % 8)) != 0;
                nth += 1;
                if pick {
                    out.push(raw);
                    if next == 'u' {
                        chars.nth(3);
                    }
                } else {
                    out.push('\\');
                    out.push(next);
                }
            }
            None => {
                out.push('\\');
                out.push(next);
            }
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&mask, rest)) = data.split_first() else { return };
    let s = String::from_utf8_lossy(rest).into_owned();

    let arguments = unescape_some(&json!({"command": "x", "stdin": s}).to_string(), mask);
    match parse_run_call(&call(arguments.clone())) {
        Ok((command, stdin)) => {
            assert_eq!(command, "x", "from {arguments:?}");
            assert_eq!(stdin.as_deref(), Some(s.as_str()), "stdin changed by the repair of {arguments:?}");
        }
        Err(e) => panic!("{arguments:?} (raw control characters only) was refused: {e}"),
    }

    let parsed = parse_run_call(&call(s.clone()));
    match &parsed {
        Ok((command, _)) => assert!(!command.is_empty() && command.trim() == command, "command {command:?}"),
        Err(message) => assert!(message.starts_with("[error] "), "the model gets {message:?}"),
    }
    if let Ok(value) = serde_json::from_str::<Value>(&s) {
        let command = value.get("command").and_then(Value::as_str).map(str::trim).filter(|c| !c.is_empty());
        let stdin = value.get("stdin").and_then(Value::as_str);
        match (command, &parsed) {
            (Some(command), Ok((got, got_stdin))) => {
                assert_eq!((command, stdin), (got.as_str(), got_stdin.as_deref()), "{s:?} parsed otherwise");
            }
            (None, Err(_)) => {}
            (want, got) => panic!("{s:?}: JSON says command {want:?}, the parser {got:?}"),
        }
    }
});
