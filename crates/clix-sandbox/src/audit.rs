//! The audit log: one JSON line per OS execution (and one per hub call,
//! written by clix-hub with `kind: "hub"`), under the state folder, outside
//! the workspace the agent can write.

use std::io::Write;
use std::path::PathBuf;

use serde::Serialize;

use crate::env::is_secret_name;

/// What one OS execution did.
#[derive(Debug, Clone, Serialize)]
pub struct AuditRecord {
    /// When it ended, Unix milliseconds.
    pub ts_ms: u128,
    /// `os` for a sandboxed program.
    pub kind: String,
    /// The clix session (process or MCP connection) that ran it.
    pub session: String,
    /// Program and arguments, secret-looking values redacted.
    pub argv: Vec<String>,
    /// The working folder.
    pub cwd: String,
    /// Its exit code (-1 when cancelled).
    pub exit_code: i32,
    /// Wall time.
    pub duration_ms: u128,
    /// Bytes written to stdout, kept or not.
    pub stdout_bytes: u64,
    /// Bytes written to stderr, kept or not.
    pub stderr_bytes: u64,
    /// `exit`, `timeout`, or `cancelled` (the caller stopped waiting; exit_code is -1).
    pub ended: String,
    /// The sandbox mode: `bwrap`, or `host` when it ran unsandboxed by the person's choice.
    pub mode: String,
}

/// Appends records to a JSON-lines file.
#[derive(Debug, Clone)]
pub struct AuditLog {
    /// The file, under clix's state folder.
    pub path: PathBuf,
}

impl AuditLog {
    /// One `write` per line on an `O_APPEND` file, so concurrent clix
    /// processes never interleave inside a line.
    pub fn append(&self, record: &impl Serialize) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut line = serde_json::to_vec(record).map_err(std::io::Error::other)?;
        line.push(b'\n');
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&self.path)?;
        file.write_all(&line)
    }
}

/// Token shapes worth hiding wherever they appear.
const TOKEN_PREFIXES: &[&str] = &["sk-", "ghp_", "gho_", "github_pat_", "xoxb-", "xoxp-", "AKIA"];

/// `argv` with secret values replaced by `***`: `NAME=value` where NAME looks
/// secret, the value after `--token`/`--password`/…, and known token shapes.
pub fn redact_argv(argv: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut hide_next = false;
    for arg in argv {
        if std::mem::take(&mut hide_next) {
            out.push("***".to_string());
            continue;
        }
        let flag = arg.trim_start_matches('-');
        if let Some((key, _)) = arg.split_once('=')
            && is_secret_name(key.trim_start_matches('-'))
        {
            out.push(format!("{key}=***"));
        } else if arg.starts_with('-') && is_secret_name(flag) {
            hide_next = true;
            out.push(arg.clone());
        } else if TOKEN_PREFIXES.iter().any(|p| arg.starts_with(p) && arg.len() > p.len() + 8) {
            out.push("***".to_string());
        } else {
            out.push(arg.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_table() {
        let cases: [(&[&str], &[&str]); 5] = [
            (&["git", "status"], &["git", "status"]),
            (&["env", "API_KEY=abc", "x"], &["env", "API_KEY=***", "x"]),
            (&["tool", "--token", "abc", "--name", "n"], &["tool", "--token", "***", "--name", "n"]),
            (&["tool", "--password=pw"], &["tool", "--password=***"]),
            (&["curl", "sk-0123456789abcdef"], &["curl", "***"]),
        ];
        for (argv, want) in cases {
            let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
            assert_eq!(redact_argv(&argv), want);
        }
    }
}
