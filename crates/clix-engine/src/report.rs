//! The facts of one finished command line as data: what `clix run --json`
//! prints and what an MCP result carries as `structuredContent`, one type
//! so the two can never drift apart.

use base64::Engine as _;
use clix_present::StageExit;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::RunOutput;

/// One finished command line, the raw facts behind the presentation text.
///
/// The streams themselves are filled only where nothing else carries them
/// (`clix run --json`); an MCP result already shows them in its text, and a
/// second copy would cost the model's context twice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunReport {
    /// Exit code of the command line: 0 ok, 1 error, 2 usage, 124 timed out,
    /// 126 cannot run, 127 unknown command, 130 cancelled, or the program's own.
    pub exit_code: i32,
    /// Wall time of the command line in milliseconds.
    pub duration_ms: u64,
    /// Whether the presentation shows only part of the output: a preview of
    /// a long one, or output past the capture cap (`limits.max_memory_bytes`).
    pub truncated: bool,
    /// The file holding the full output when it was too long to show, as the
    /// next command line can open it: relative to the workspace when the
    /// shell is at its root, absolute otherwise. `null` when nothing spilled.
    pub spill_path: Option<String>,
    /// Bytes the command line wrote to stdout (up to the capture cap).
    pub stdout_bytes: u64,
    /// Bytes the command line wrote to stderr (up to the capture cap).
    pub stderr_bytes: u64,
    /// Stages of the line's pipelines that failed while the exit code shows
    /// another's (a pipeline's code is its last stage's): each stage other
    /// than a pipeline's last that exited non-zero (141, a writer whose
    /// reader stopped early, is not a failure), first failure first, as the
    /// footer names them (`[exit:0 | jq exit 5 | 4ms]`). Left out when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_stages: Vec<StageExit>,
    /// The whole stdout as text (bytes that are not UTF-8 become U+FFFD);
    /// only `clix run --json` includes it, and not when it is binary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout: Option<String>,
    /// The whole stdout as base64 when it is binary (what the presentation
    /// withholds), in place of `stdout`; only `clix run --json` includes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout_base64: Option<String>,
    /// The whole stderr as text, as `stdout`; only `clix run --json` includes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr: Option<String>,
    /// What the line changed in the workspace, in one line
    /// (`changed 2 files: +1 ~1 −0 (clix diff RUN --step 3)`); left out
    /// when it changed nothing or no checkpoint is kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed: Option<String>,
}

impl RunOutput {
    /// The facts of this run, without the streams (MCP's `structuredContent`).
    pub fn report(&self) -> RunReport {
        let raw = &self.raw;
        RunReport {
            exit_code: self.exit_code,
            duration_ms: u64::try_from(raw.duration.as_millis()).unwrap_or(u64::MAX),
            truncated: self.truncated,
            spill_path: self.spill_path.clone(),
            stdout_bytes: raw.stdout.len() as u64,
            stderr_bytes: raw.stderr.len() as u64,
            failed_stages: self.failed_stages.clone(),
            stdout: None,
            stdout_base64: None,
            stderr: None,
            changed: self.changes.set.as_ref().and_then(clix_checkpoint::ChangeSet::summary),
        }
    }

    /// The facts of this run with both streams (`clix run --json`): as
    /// text, or stdout as base64 when it is binary, so no byte is mangled.
    pub fn report_with_streams(&self) -> RunReport {
        let stdout = &self.raw.stdout;
        let binary = clix_present::classify(stdout).is_some();
        RunReport {
            stdout: (!binary).then(|| String::from_utf8_lossy(stdout).into_owned()),
            stdout_base64: binary.then(|| base64::engine::general_purpose::STANDARD.encode(stdout)),
            stderr: Some(String::from_utf8_lossy(&self.raw.stderr).into_owned()),
            ..self.report()
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Duration;

    use super::*;
    use crate::RawResult;

    fn output() -> RunOutput {
        RunOutput {
            text: "shown".into(),
            images: Vec::new(),
            raw: RawResult {
                stdout: b"ok\n".to_vec(),
                stderr: b"warn\n".to_vec(),
                exit_code: 3,
                duration: Duration::from_micros(12_900),
                timed_out: None,
                capped: false,
                pipelines: Vec::new(),
            },
            truncated: true,
            spill_path: Some(".clix/out/cmd-1.txt".into()),
            exit_code: 3,
            failed_stages: Vec::new(),
            changes: Default::default(),
        }
    }

    #[test]
    fn both_shapes_are_one_type_and_the_streams_only_when_asked() {
        let facts = serde_json::to_value(output().report()).unwrap();
        assert_eq!(
            facts,
            serde_json::json!({"exit_code": 3, "duration_ms": 12, "truncated": true,
                               "spill_path": ".clix/out/cmd-1.txt", "stdout_bytes": 3, "stderr_bytes": 5})
        );
        let full = serde_json::to_value(output().report_with_streams()).unwrap();
        assert_eq!((full["stdout"].as_str(), full["stderr"].as_str()), (Some("ok\n"), Some("warn\n")));
        let back: RunReport = serde_json::from_value(full).unwrap();
        assert_eq!(back, output().report_with_streams());
    }

    /// The stages the footer names are in both shapes, as data.
    #[test]
    fn failed_stages_are_reported() {
        let mut out = output();
        out.failed_stages = vec![StageExit { command: "jq".into(), exit_code: 5 }];
        let facts = serde_json::to_value(out.report()).unwrap();
        assert_eq!(facts["failed_stages"], serde_json::json!([{"command": "jq", "exit_code": 5}]));
        let back: RunReport = serde_json::from_value(serde_json::to_value(out.report_with_streams()).unwrap()).unwrap();
        assert_eq!(back.failed_stages, out.failed_stages);
    }

    #[test]
    fn the_schema_documents_every_field() {
        let schema = serde_json::to_value(schemars::schema_for!(RunReport)).unwrap();
        let properties = schema["properties"].as_object().unwrap();
        for (name, property) in properties {
            assert!(property["description"].as_str().is_some_and(|d| d.len() > 20), "{name}: {property}");
        }
        let required: Vec<&str> = schema["required"].as_array().unwrap().iter().filter_map(|v| v.as_str()).collect();
        assert!(!required.contains(&"stdout") && required.contains(&"exit_code"), "{required:?}");
    }

    /// Binary stdout is withheld from the model (exit 1 when the line's was
    /// 0) and given whole, as base64, to `clix run --json`.
    #[test]
    fn binary_stdout_is_base64_in_the_streams_report() {
        let mut out = output();
        out.raw.stdout = b"\x00\x01\x02binary".to_vec();
        let full = serde_json::to_value(out.report_with_streams()).unwrap();
        assert_eq!(full["stdout_base64"], "AAECYmluYXJ5");
        assert!(full.get("stdout").is_none(), "{full}");
    }
}
