//! The pipelines of a line in its `RawResult` (bashkit's `take_pipelines`,
//! docs/bashkit-patches.md): each stage's command and status, which ones
//! are kept, and that they belong to the line that ran them. Their
//! statuses against GNU bash's `PIPESTATUS`, and the footer made of them,
//! are in clix-engine's `tests/pipelines.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::time::Duration;

use clix_shell::{CommandRegistry, RawResult, Shell, ShellConfig, ShellLimits, Workspace};

async fn session(ws: &std::path::Path) -> Shell {
    Shell::new(ShellConfig {
        workspace: Workspace::open(ws).unwrap(),
        limits: ShellLimits::default(),
        commands: CommandRegistry::new(),
        resolver: None,
        gate: None,
        start_in: None,
    })
    .await
    .unwrap()
}

/// Each recorded pipeline as `command:code` words.
fn stages(raw: &RawResult) -> Vec<String> {
    raw.pipelines
        .iter()
        .map(|p| p.stages.iter().map(|s| format!("{}:{}", s.command, s.exit_code)).collect::<Vec<_>>().join(" "))
        .collect()
}

#[tokio::test]
async fn each_stage_is_named_by_its_command_or_its_form() {
    let ws = tempfile::tempdir().unwrap();
    let mut shell = session(ws.path()).await;
    let line = "(exit 1) | { false; } | for x in 1; do false; done | while false; do :; done \
                | if false; then :; fi | case x in y) ;; esac | [[ -z x ]] | (( 0 )) | jq -n 1 | cat";
    let raw = shell.exec(line, None).await;
    assert_eq!(
        stages(&raw),
        ["(…):1 {…}:1 for:1 while:0 if:0 case:0 [[…]]:1 ((…)):1 jq:0 cat:0"],
        "{}",
        String::from_utf8_lossy(&raw.stderr)
    );
}

#[tokio::test]
async fn the_first_sixteen_that_hide_a_failure_and_the_last_are_kept() {
    let ws = tempfile::tempdir().unwrap();
    let mut shell = session(ws.path()).await;
    let raw = shell.exec("for i in $(seq 1 40); do (exit $i) | true; true | true; done; echo a | cat", None).await;
    let mut want: Vec<String> = (1..=16).map(|i| format!("(…):{i} true:0")).collect();
    want.push("echo:0 cat:0".into());
    assert_eq!(stages(&raw), want);
}

#[tokio::test]
async fn the_pipelines_are_the_lines_own() {
    let ws = tempfile::tempdir().unwrap();
    let mut shell = session(ws.path()).await;
    // A line stopped by its time limit still ran its first pipeline.
    let raw = shell.exec_within("false | true; sleep 5", None, Some(Duration::from_millis(300))).await;
    assert_eq!((raw.exit_code, stages(&raw)), (124, vec!["false:1 true:0".to_string()]));
    // The next line has its own: none for a single command.
    let raw = shell.exec("false", None).await;
    assert_eq!((raw.exit_code, stages(&raw)), (1, Vec::<String>::new()));
    // A background job's pipeline belongs to the line that started it.
    let raw = shell.exec("{ false | true; } & wait; true | true", None).await;
    assert_eq!(stages(&raw), ["false:1 true:0", "true:0 true:0"]);
}
