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
pub enum ExitKind {
    Ok,
    Business,
    Parameter,
    Permission,
    System,
}

impl ExitKind {
    pub fn from_code(code: i32) -> Self {
        match code {
            0 => Self::Ok,
            1 => Self::Business,
            2 => Self::Parameter,
            3 => Self::Permission,
            _ => Self::System,
        }
    }

    pub fn as_str(self) -> &'static str {
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
pub struct ToolError {
    pub error_code: String,
    pub message: String,
    pub hint: Option<String>,
}

/// Find `{error_code, message, hint?}` in a tool's stderr.
pub fn parse_error(stderr: &[u8]) -> Option<ToolError> {
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
pub fn error_text(tool: &str, exit_code: i32, stderr: &[u8]) -> String {
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
pub enum OutputError {
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
pub fn check_output(tool: &str, schema: Option<&Value>, stdout: &[u8]) -> Result<Value, OutputError> {
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
