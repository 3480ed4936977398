//! A failure inside a pipeline is not hidden (issue 31): the footer names a
//! failed stage other than the last (`[exit:0 | jq exit 5 | 4ms]`), and
//! the stage statuses behind it are bash's. Each line runs through
//! `Engine::run` (with the OS tier, so a real program can be killed) and
//! through GNU bash in a copy of the workspace.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::path::Path;
use std::process::Command;

use clix_engine::{Engine, EngineConfig, OsTier, SandboxSettings};

/// One line: what the footer names between the code and the time (`None`:
/// nothing), and whether the line's last pipeline has two stages or more,
/// so that the stages clix recorded for it can be held against bash's
/// `PIPESTATUS` (a line that ends with a single command leaves bash one
/// status, and clix records only pipelines).
struct Case {
    line: &'static str,
    named: Option<&'static str>,
    last_is_a_pipeline: bool,
}

const fn case(line: &'static str, named: Option<&'static str>, last_is_a_pipeline: bool) -> Case {
    Case { line, named, last_is_a_pipeline }
}

const JQ_AWK: &str = "jq '.amount' orders.json | awk '{s+=$1} END {print s}'";

fn cases() -> Vec<Case> {
    vec![
        case("false | true", Some("false exit 1"), true),
        case("true | false | true", Some("false exit 1"), true),
        // The issue's line: jq cannot index the array (5), awk prints an empty sum.
        case(JQ_AWK, Some("jq exit 5"), true),
        case("cat missing.txt | wc -l", Some("cat exit 1"), true),
        case("no-such-program | wc -l", Some("no-such-program exit 127"), true),
        // A real program killed by a signal, in the sandbox.
        case("python3 -c 'import os; os.kill(os.getpid(), 9)' | cat", Some("python3 killed by SIGKILL"), true),
        case("(exit 143) | cat", Some("(…) killed by SIGTERM"), true),
        case("(exit 3) | cat", Some("(…) exit 3"), true),
        // Every pipeline of the line counts; the first failure comes first.
        case("false | true; true | true", Some("false exit 1"), true),
        case("false | true && true | false", Some("false exit 1"), true),
        case("cat missing.txt | wc -l; no-such-program | wc -l", Some("cat exit 1, no-such-program exit 127"), true),
        case("! false | true", Some("false exit 1"), true),
        // Under pipefail the code is the stage's already: still named.
        case("set -o pipefail; false | true", Some("false exit 1"), true),
        case("set -o pipefail; jq '.amount' orders.json | awk '{s+=$1} END {print s}'", Some("jq exit 5"), true),
        // Inside a loop, a function, a group stage, a substitution.
        case("for f in missing.txt orders.json; do cat $f | wc -l; done", Some("cat exit 1"), true),
        case("for f in orders.json missing.txt; do cat $f | wc -l; done | sort", Some("cat exit 1"), true),
        case("f() { cat missing.txt | wc -l; }; f", Some("cat exit 1"), false),
        case("{ false | true; } | cat", Some("false exit 1"), true),
        case("x=$(cat missing.txt | wc -l); echo \"[$x]\"", Some("cat exit 1"), false),
        // Nothing failed, or a single command: no segment.
        case("seq 3 | wc -l", None, true),
        case("for f in a b c; do echo $f; done | head -1", None, true),
        case("cat orders.json | jq length | cat", None, true),
        case("echo hi", None, false),
        case("false", None, false),
        case("cat missing.txt", None, false),
        // A writer whose reader stopped early (SIGPIPE, 141) did not fail.
        case("yes | head -1", None, true),
        case("seq 1 100000 | head -1", None, true),
    ]
}

fn fixture_files(dir: &Path) {
    std::fs::write(dir.join("orders.json"), r#"[{"amount": 3}, {"amount": 4}]"#).unwrap();
}

/// Appended to a line: `PIPESTATUS` and the line's exit code, both read
/// before `echo` runs.
const STATUSES: &str = "\necho \"PIPESTATUS=${PIPESTATUS[*]}:$?\"";

/// bash's stdout, exit code and `PIPESTATUS` after the line.
fn bash(dir: &Path, line: &str) -> (String, i32, String) {
    let script = format!("{line}{STATUSES} >&3");
    let status_file = dir.join(".pipestatus");
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!("exec 3>{}; {script}", status_file.display()))
        .current_dir(dir)
        .env("LC_ALL", "C")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let statuses = std::fs::read_to_string(&status_file).unwrap();
    std::fs::remove_file(&status_file).unwrap();
    let (statuses, code) = statuses.trim().strip_prefix("PIPESTATUS=").unwrap().split_once(':').unwrap();
    (String::from_utf8_lossy(&out.stdout).into_owned(), code.parse().unwrap(), statuses.to_string())
}

#[tokio::test]
async fn a_failed_stage_is_named_and_its_status_is_bashs() {
    let ws = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let reference = tempfile::tempdir().unwrap();
    fixture_files(ws.path());
    fixture_files(reference.path());
    let mut engine = Engine::new(EngineConfig {
        os: Some(OsTier {
            settings: SandboxSettings::default(),
            clix_config_dir: None,
            audit_log: Some(clix_audit::AuditLog::new(state.path().join("audit.jsonl"))),
            session_id: "pipelines-test".into(),
            env: Vec::new(),
        }),
        ..EngineConfig::new(ws.path())
    })
    .await
    .unwrap();

    let mut wrong = Vec::new();
    for Case { line, named, last_is_a_pipeline } in cases() {
        let (bash_out, bash_code, bash_statuses) = bash(reference.path(), line);
        let out = engine.run(line, None).await;
        // The model's text: the footer, with the segment or without one.
        let footer = &out.text[out.text.rfind("[exit:").unwrap()..];
        let want_start = match named {
            Some(named) => format!("[exit:{bash_code} | {named} | "),
            None => format!("[exit:{bash_code} | "),
        };
        let segments = footer.matches(" | ").count();
        let footer_right = footer.starts_with(&want_start) && segments == 1 + usize::from(named.is_some());
        // The line's own answer is bash's.
        let stdout = String::from_utf8_lossy(&out.raw.stdout).into_owned();
        // The statuses clix recorded for the line's last pipeline are bash's PIPESTATUS.
        let recorded = out
            .raw
            .pipelines
            .last()
            .map(|p| p.stages.iter().map(|s| s.exit_code.to_string()).collect::<Vec<_>>().join(" "));
        let recorded_right = !last_is_a_pipeline || recorded.as_deref() == Some(bash_statuses.as_str());
        // bashkit's own PIPESTATUS after the line is bash's.
        let shell = engine.run_raw(&format!("{line}{STATUSES}"), None).await;
        let shell_out = String::from_utf8_lossy(&shell.stdout);
        let shell_statuses = shell_out.lines().last().and_then(|l| l.strip_prefix("PIPESTATUS=")).unwrap_or("?");
        let shell_statuses = shell_statuses.split(':').next().unwrap_or_default();
        if !footer_right
            || stdout != bash_out
            || out.raw.exit_code != bash_code
            || !recorded_right
            || shell_statuses != bash_statuses
        {
            wrong.push(format!(
                "{line}\n  footer {footer:?}, want it to start {want_start:?}\n  stdout {stdout:?} exit {} (bash {bash_out:?} exit {bash_code})\n  recorded {recorded:?}, bashkit's PIPESTATUS {shell_statuses:?}, bash's {bash_statuses:?}",
                out.raw.exit_code
            ));
        }
    }
    assert!(wrong.is_empty(), "{} of {} lines differ:\n{}", wrong.len(), cases().len(), wrong.join("\n"));
}

/// `clix run --json` and MCP's structured result carry the named stages,
/// and the code the model is told is the line's own.
#[tokio::test]
async fn the_report_carries_the_failed_stages() {
    let ws = tempfile::tempdir().unwrap();
    fixture_files(ws.path());
    let mut engine = Engine::new(EngineConfig::new(ws.path())).await.unwrap();
    let out = engine.run(JQ_AWK, None).await;
    assert_eq!(out.exit_code, 0, "the code is not faked: {}", out.text);
    let report = serde_json::to_value(out.report()).unwrap();
    assert_eq!(report["failed_stages"], serde_json::json!([{"command": "jq", "exit_code": 5}]), "{report}");
    let out = engine.run("seq 3 | wc -l", None).await;
    let report = serde_json::to_value(out.report()).unwrap();
    assert!(report.get("failed_stages").is_none(), "left out when none: {report}");
}
