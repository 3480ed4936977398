//! `hub stats`: per-tool calls, success rate, latency percentiles and the
//! distribution of error codes, read back from the audit log (seed 001's
//! "keep per-tool success rate, average latency and error distribution").
//! An MCP server's tool calls are governed calls too: their `kind: "mcp"`
//! line is defined here ([`McpCallRecord`], written by clix-engine), and
//! each counts as the tool `SERVER TOOL`.

use std::collections::BTreeMap;

use clix_audit::{AuditLog, Record};
use serde::{Deserialize, Serialize};

/// One hub call as the audit log records it, a `kind: "hub"` line (the
/// envelope is clix-audit's).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct CallRecord {
    pub tool: String,
    /// The call's arguments, secret-looking names redacted.
    pub params: serde_json::Map<String, serde_json::Value>,
    pub exit_code: i32,
    /// The tool's `error_code`, or clix's own (`TIMEOUT`, `BAD_OUTPUT`, …); absent on success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    pub duration_ms: u64,
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
}

impl Record for CallRecord {
    const KIND: &'static str = "hub";
}

/// A hub or MCP call line whose call was dropped before its result (the
/// line, the agent or the connection ended): no exit code, `CANCELLED`,
/// and the time it ran. The two lines share these fields.
macro_rules! cancellable_call {
    ($($record:ty),*) => {$(
        impl clix_audit::Cancellable for $record {
            fn cancel(&mut self) {
                self.exit_code = clix_common::exit::NO_CODE;
                self.error_code = Some(clix_audit::CANCELLED.into());
            }

            fn took(&mut self, elapsed: std::time::Duration) {
                self.duration_ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
            }
        }
    )*};
}

cancellable_call!(CallRecord, McpCallRecord);

/// One call of an MCP server's tool, a `kind: "mcp"` line: clix-engine
/// writes it between the call's check and its result; `hub stats` counts
/// it as the tool `SERVER TOOL`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct McpCallRecord {
    /// The server (the command).
    pub server: String,
    /// The tool (the subcommand).
    pub tool: String,
    /// The arguments sent, secret-looking names and token-shaped values redacted.
    pub arguments: serde_json::Map<String, serde_json::Value>,
    /// 0; 1 for a tool's error or a failed server; 124 past the line's time.
    pub exit_code: i32,
    /// clix's word for a failure (`TOOL_ERROR`, `SERVER_FAILED`, `TIMEOUT`,
    /// `CANCELLED`); absent on success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// From the call's start to its result.
    pub duration_ms: u64,
    /// Bytes of the result's stdout.
    pub stdout_bytes: u64,
    /// Bytes of the result's stderr.
    pub stderr_bytes: u64,
    /// Images the result carried.
    #[serde(default)]
    pub images: u64,
}

impl Record for McpCallRecord {
    const KIND: &'static str = "mcp";
}

impl McpCallRecord {
    /// The call as `hub stats` counts it.
    fn as_call(&self) -> CallRecord {
        CallRecord {
            tool: format!("{} {}", self.server, self.tool),
            params: serde_json::Map::new(),
            exit_code: self.exit_code,
            error_code: self.error_code.clone(),
            duration_ms: self.duration_ms,
            stdout_bytes: self.stdout_bytes,
            stderr_bytes: self.stderr_bytes,
        }
    }
}

/// The figures of one tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolStats {
    /// The tool's name.
    pub tool: String,
    /// Calls in the audit log, refused and cancelled ones included.
    pub calls: u64,
    /// Calls that exited 0.
    pub ok: u64,
    /// `ok / calls`, 0..=1.
    pub success_rate: f64,
    /// Median call duration in milliseconds (nearest rank).
    pub p50_ms: u64,
    /// 95th percentile call duration in milliseconds (nearest rank).
    pub p95_ms: u64,
    /// Error code → calls that ended with it.
    pub errors: BTreeMap<String, u64>,
}

/// Figures per tool (sorted by name) from the hub and MCP lines of an
/// audit log; `tool` keeps only that one (`SERVER TOOL` for an MCP tool).
/// A missing log means no calls yet; the log's other kinds and lines that
/// do not parse (a torn write) are skipped.
pub(crate) fn stats(audit_log: &AuditLog, tool: Option<&str>) -> std::io::Result<Vec<ToolStats>> {
    let mut per_tool: BTreeMap<String, Vec<CallRecord>> = BTreeMap::new();
    let hub = audit_log.read::<CallRecord>()?.into_iter().map(|e| e.record);
    let mcp = audit_log.read::<McpCallRecord>()?.into_iter().map(|e| e.record.as_call());
    for call in hub.chain(mcp) {
        if tool.is_none_or(|t| t == call.tool) {
            per_tool.entry(call.tool.clone()).or_default().push(call);
        }
    }
    Ok(per_tool.into_iter().map(|(tool, calls)| summarize(tool, &calls)).collect())
}

fn summarize(tool: String, calls: &[CallRecord]) -> ToolStats {
    let mut durations: Vec<u64> = calls.iter().map(|c| c.duration_ms).collect();
    durations.sort_unstable();
    let ok = calls.iter().filter(|c| c.exit_code == 0).count() as u64;
    let mut errors = BTreeMap::new();
    for c in calls.iter().filter(|c| c.exit_code != 0) {
        let code = c.error_code.clone().unwrap_or_else(|| format!("exit {}", c.exit_code));
        *errors.entry(code).or_default() += 1;
    }
    ToolStats {
        tool,
        calls: calls.len() as u64,
        ok,
        success_rate: if calls.is_empty() { 0.0 } else { ok as f64 / calls.len() as f64 },
        p50_ms: percentile(&durations, 50),
        p95_ms: percentile(&durations, 95),
        errors,
    }
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[u64], p: usize) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    sorted[rank - 1]
}

#[cfg(test)]
mod tests {
    use super::percentile;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u64> = (1..=20).collect();
        assert_eq!((percentile(&v, 50), percentile(&v, 95)), (10, 19));
        assert_eq!((percentile(&[7], 50), percentile(&[7], 95)), (7, 7));
        assert_eq!(percentile(&[], 50), 0);
    }
}
