//! Reading results by the contract: JSON stdout and its schema, structured
//! stderr errors with their hint, exit-code kinds.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use clix_hub::{ExitKind, OutputError, ToolError, check_output, error_text, parse_error};
use serde_json::json;

#[test]
fn exit_kinds() {
    let cases = [
        (0, ExitKind::Ok),
        (1, ExitKind::Business),
        (2, ExitKind::Parameter),
        (3, ExitKind::Permission),
        (4, ExitKind::System),
        (124, ExitKind::System),
        (-1, ExitKind::System),
    ];
    for (code, kind) in cases {
        assert_eq!(ExitKind::from_code(code), kind, "{code}");
    }
}

#[test]
fn structured_errors_on_stderr() {
    let full = r#"{"error_code": "RANGE_TOO_LARGE", "message": "more than 30 days", "hint": "narrow --since"}"#;
    let want = ToolError {
        error_code: "RANGE_TOO_LARGE".into(),
        message: "more than 30 days".into(),
        hint: Some("narrow --since".into()),
    };
    let cases: Vec<(String, Option<ToolError>)> = vec![
        (full.to_string(), Some(want.clone())),
        (format!("  {full}\n"), Some(want.clone())),
        // logs first, the error on the last line
        (format!("scanning 3 files\nwarning: slow disk\n{full}\n\n"), Some(want.clone())),
        // pretty-printed over several lines
        (serde_json::to_string_pretty(&serde_json::from_str::<serde_json::Value>(full).unwrap()).unwrap(), Some(want)),
        (
            r#"{"error_code": "X", "message": "m"}"#.into(),
            Some(ToolError { error_code: "X".into(), message: "m".into(), hint: None }),
        ),
        (
            r#"{"error_code": "X", "message": "m", "hint": " "}"#.into(),
            Some(ToolError { error_code: "X".into(), message: "m".into(), hint: None }),
        ),
        (r#"{"message": "no code"}"#.into(), None),
        (r#"{"error_code": 5, "message": "m"}"#.into(), None),
        ("Traceback (most recent call last):\n  boom".into(), None),
        (String::new(), None),
    ];
    for (stderr, want) in cases {
        assert_eq!(parse_error(stderr.as_bytes()), want, "{stderr:?}");
    }
}

#[test]
fn error_lines() {
    let stderr = br#"{"error_code": "RANGE_TOO_LARGE", "message": "more than 30 days", "hint": "narrow --since"}"#;
    assert_eq!(
        error_text("log-search", 1, stderr),
        "[error] log-search: RANGE_TOO_LARGE: more than 30 days\nhint: narrow --since"
    );
    assert_eq!(error_text("log-search", 3, b"denied"), "[error] log-search: exit 3 (permission error)");
    assert_eq!(error_text("log-search", 2, b""), "[error] log-search: exit 2 (parameter error)");
    assert_eq!(error_text("log-search", 139, b"segfault"), "[error] log-search: exit 139 (system error)");
}

#[test]
fn json_output_is_parsed_and_checked() {
    let schema = json!({"type": "array", "items": {"type": "object", "required": ["line"],
                        "properties": {"line": {"type": "integer"}}}});
    let ok = check_output("log-search", Some(&schema), b"[{\"line\": 3}]\n").unwrap();
    assert_eq!(ok, json!([{"line": 3}]));
    assert_eq!(check_output("t", None, b" {\"a\": 1} ").unwrap(), json!({"a": 1}));

    let err = check_output("log-search", Some(&schema), br#"[{"line": "3"}, {}]"#).unwrap_err();
    let OutputError::Schema { violations, .. } = &err else { panic!("{err:?}") };
    let paths: Vec<&str> = violations.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(paths, vec!["/0/line", "/1"]);
    let text = err.to_string();
    assert!(text.starts_with("log-search: output breaks its schema:\n  at /0/line: "), "{text}");
    assert!(text.contains("\"line\" is a required property"), "{text}");

    let err = check_output("log-search", Some(&schema), b"{}").unwrap_err();
    assert!(err.to_string().contains("at (root): "), "{err}");
}

#[test]
fn output_that_is_not_json() {
    let cases: Vec<(&[u8], &str)> = vec![
        (
            b"scanning 3 files\n",
            "log-search: stdout is not JSON (expected value at line 1 column 1); it starts with `scanning 3 files\\n`",
        ),
        (b"", "log-search: stdout is not JSON (it is empty)"),
        (b"  \n", "log-search: stdout is not JSON (it is empty)"),
        (
            b"[1, 2",
            "log-search: stdout is not JSON (EOF while parsing a list at line 1 column 5); it starts with `[1, 2`",
        ),
        (b"{} {}", "log-search: stdout is not JSON (trailing characters at line 1 column 4); it starts with `{} {}`"),
    ];
    for (stdout, want) in cases {
        let err = check_output("log-search", None, stdout).unwrap_err();
        assert_eq!(err.to_string(), want, "{:?}", String::from_utf8_lossy(stdout));
    }
}
