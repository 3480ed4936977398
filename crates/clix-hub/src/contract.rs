//! Reading a tool's result by seed 001's execution contract, as pure
//! functions of what the sandbox captured (nothing is run here):
//!
//! - on success stdout is pure JSON, checked against `output.schema`;
//! - on failure stderr may hold `{error_code, message, hint}` (the whole of
//!   stderr, or its last non-empty line, since logs also go to stderr);
//! - exit codes: 0 ok, 1 business error, 2 parameter error, 3 permission
//!   error, anything else a system error.

use std::fmt;

use serde_json::Value;

/// What a non-zero exit code means in the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExitKind {
    Ok,
    Business,
    Parameter,
    Permission,
    System,
}

impl ExitKind {
    pub(crate) fn from_code(code: i32) -> Self {
        match code {
            0 => Self::Ok,
            1 => Self::Business,
            2 => Self::Parameter,
            3 => Self::Permission,
            _ => Self::System,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Business => "business error",
            Self::Parameter => "parameter error",
            Self::Permission => "permission error",
            Self::System => "system error",
        }
    }
}

/// A structured error a tool wrote on stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolError {
    pub error_code: String,
    pub message: String,
    pub hint: Option<String>,
}

/// Find `{error_code, message, hint?}` in a tool's stderr.
pub(crate) fn parse_error(stderr: &[u8]) -> Option<ToolError> {
    let text = crate::encoding::decode_output(stderr).text;
    let whole = text.trim();
    let last = whole.lines().rev().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    [whole, last].into_iter().find_map(|candidate| {
        let v: Value = serde_json::from_str(candidate).ok()?;
        let obj = v.as_object()?;
        let error_code = obj.get("error_code")?.as_str()?.to_string();
        let message = obj.get("message").and_then(Value::as_str).unwrap_or("").to_string();
        let hint = obj.get("hint").and_then(Value::as_str).filter(|h| !h.trim().is_empty()).map(str::to_string);
        Some(ToolError { error_code, message, hint })
    })
}

/// The lines shown for a failed call: `[error] tool: CODE: message` and
/// `hint: …`, or, without a structured error, the kind of the exit code.
pub(crate) fn error_text(tool: &str, exit_code: i32, stderr: &[u8]) -> String {
    match parse_error(stderr) {
        Some(e) => {
            let mut s = format!("[error] {tool}: {}: {}", e.error_code, e.message);
            if let Some(h) = e.hint {
                s.push_str(&format!("\nhint: {h}"));
            }
            s
        }
        None => format!("[error] {tool}: exit {exit_code} ({})", ExitKind::from_code(exit_code).as_str()),
    }
}

/// Why a successful call's stdout breaks the contract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum OutputError {
    /// stdout is not one JSON document.
    NotJson { tool: String, detail: String, start: String },
    /// stdout is JSON but breaks `output.schema`: `(instance path, message)` pairs.
    Schema { tool: String, violations: Vec<(String, String)> },
}

impl fmt::Display for OutputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotJson { tool, detail, start } if start.is_empty() => {
                write!(f, "{tool}: stdout is not JSON ({detail})")
            }
            Self::NotJson { tool, detail, start } => {
                write!(f, "{tool}: stdout is not JSON ({detail}); it starts with `{start}`")
            }
            Self::Schema { tool, violations } => {
                write!(f, "{tool}: output breaks its schema:")?;
                for (at, msg) in violations {
                    let at = if at.is_empty() { "(root)" } else { at };
                    write!(f, "\n  at {at}: {msg}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for OutputError {}

/// At most this many schema violations are listed.
const MAX_VIOLATIONS: usize = 5;

/// Parse a successful call's stdout as JSON (converted first when it is not
/// UTF-8) and check it against `schema`.
/// The schema was checked at load; one that cannot compile here is reported
/// as a violation at the root rather than a panic.
pub(crate) fn check_output(tool: &str, schema: Option<&Value>, stdout: &[u8]) -> Result<Value, OutputError> {
    let text = crate::encoding::decode_output(stdout).text;
    let value: Value = serde_json::from_str(&text).map_err(|e| {
        let start: String = text.trim_start().chars().take(40).collect();
        let detail = if text.trim().is_empty() { "it is empty".to_string() } else { e.to_string() };
        OutputError::NotJson { tool: tool.to_string(), detail, start: start.replace('\n', "\\n") }
    })?;
    let Some(schema) = schema else { return Ok(value) };
    let validator = jsonschema::validator_for(schema).map_err(|e| OutputError::Schema {
        tool: tool.to_string(),
        violations: vec![(String::new(), format!("the schema cannot be used: {e}"))],
    })?;
    let violations: Vec<(String, String)> = validator
        .iter_errors(&value)
        .take(MAX_VIOLATIONS)
        .map(|e| (e.instance_path().to_string(), e.to_string()))
        .collect();
    if violations.is_empty() { Ok(value) } else { Err(OutputError::Schema { tool: tool.to_string(), violations }) }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn gbk(text: &str) -> Vec<u8> {
        let (bytes, _, unmappable) = encoding_rs::GBK.encode(text);
        assert!(!unmappable);
        bytes.into_owned()
    }

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
            (
                serde_json::to_string_pretty(&serde_json::from_str::<serde_json::Value>(full).unwrap()).unwrap(),
                Some(want),
            ),
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
            (
                b"{} {}",
                "log-search: stdout is not JSON (trailing characters at line 1 column 4); it starts with `{} {}`",
            ),
        ];
        for (stdout, want) in cases {
            let err = check_output("log-search", None, stdout).unwrap_err();
            assert_eq!(err.to_string(), want, "{:?}", String::from_utf8_lossy(stdout));
        }
    }

    #[test]
    fn gbk_json_and_gbk_errors_are_read() {
        let stdout = gbk(r#"[{"message": "连接超时，请检查网络配置后重试", "count": 32}]"#);
        let v = check_output("log-search", Some(&json!({"type": "array"})), &stdout).unwrap();
        assert_eq!(v, json!([{"message": "连接超时，请检查网络配置后重试", "count": 32}]));
        let stderr =
            gbk(r#"{"error_code": "RANGE_TOO_LARGE", "message": "时间范围超过三十天", "hint": "请缩小时间范围"}"#);
        let e = parse_error(&stderr).unwrap();
        assert_eq!((e.message.as_str(), e.hint.as_deref()), ("时间范围超过三十天", Some("请缩小时间范围")));
    }
}
