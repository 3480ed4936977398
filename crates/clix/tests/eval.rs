//! `clix eval` with a model, as a person runs it: against the scripted
//! model server over real HTTP, the output folder it leaves (results.json,
//! report.html, a trajectory and a replay page per attempt), `clix replay`
//! of an attempt, and `clix eval compare`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod common;
use clix_testkit::model_server as support;

use std::path::Path;
use std::process::Output;

use common::text;
use serde_json::{Value, json};
use support::{FnServer, Reply, openai_calls, openai_text};

/// A one-task suite: how many ERROR lines app.log has (2).
fn suite(dir: &Path) {
    let task = json!({
        "id": "count_errors", "category": "text", "description": "count errors",
        "prompt": "How many ERROR lines are in app.log? Answer with just the number.",
        "files": {"app.log": "INFO a\nERROR b\nERROR c\n"},
        "expectations": [{"check": "answer_regex:^2$"}, {"check": "stdout_contains:2"}],
    });
    std::fs::write(dir.join("suite.jsonl"), format!("{task}\n")).unwrap();
}

/// Counts with the run tool when it is offered, then answers; with any
/// other tool set it answers without looking (and is wrong).
fn model(body: &Value) -> Reply {
    let offers_run = body["tools"].as_array().unwrap().iter().any(|t| t["function"]["name"] == "run");
    let answered = body["messages"].as_array().unwrap().iter().any(|m| m["role"] == "tool");
    match (offers_run, answered) {
        (true, false) => openai_calls(&[("run", r#"{"command": "grep -c ERROR app.log"}"#)], 40, 4),
        (true, true) => openai_text("2", 60, 1),
        (false, _) => openai_text("5", 30, 1),
    }
}

async fn eval(server: &FnServer, home: &Path, ws: &Path, args: &[&str]) -> Output {
    let mut cmd = common::clix(home, ws, args);
    cmd.env("AGENT_BASE_URL", format!("{}/v1", server.url)).env("AGENT_MODEL", "scripted");
    tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn eval_with_a_model_leaves_results_a_report_and_replays() {
    let server = support::start_fn(model).await;
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    suite(ws.path());
    let out = ws.path().join("out");
    let o = eval(&server, home.path(), ws.path(), &["eval", "suite.jsonl", "--tools", "run", "--out", "out"]).await;
    assert_eq!(o.status.code(), Some(0), "{}{}", text(&o.stdout), text(&o.stderr));
    let tables = text(&o.stdout);
    assert!(tables.contains("model: scripted") && tables.contains("| run | 1 | 1/1 | 100% "), "{tables}");
    // Without a terminal, one line per attempt on stderr.
    assert!(text(&o.stderr).contains("PASS count_errors [run] r0: answered"), "{}", text(&o.stderr));

    let results: Value = serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert_eq!((results["schema_version"].clone(), results["mode"].clone()), (json!(2), json!("model")));
    let attempt = &results["attempts"][0];
    assert_eq!((attempt["input_tokens"].clone(), attempt["output_tokens"].clone()), (json!(100), json!(5)));
    let trajectory = attempt["trajectory"].as_str().unwrap();
    assert!(trajectory.ends_with("out/runs/count_errors-run-r0.jsonl"), "{trajectory}");

    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(report.contains("href=\"runs/count_errors-run-r0.html\""), "{report}");
    let replay = std::fs::read_to_string(out.join("runs/count_errors-run-r0.html")).unwrap();
    assert!(replay.contains("grep -c ERROR app.log") && replay.contains("path_map"), "{replay}");

    // `clix replay` of an attempt, by its file.
    let o = common::clix(home.path(), ws.path(), &["replay", trajectory]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("▸ run grep -c ERROR app.log"), "{}", text(&o.stdout));

    // The same suite with the bash design: the model guesses, and compare shows the flip.
    let o = eval(&server, home.path(), ws.path(), &["eval", "suite.jsonl", "--tools", "bash", "--out", "bash"]).await;
    assert_eq!(o.status.code(), Some(0), "a failing task is a result, not an error: {}", text(&o.stderr));
    let o = common::clix(home.path(), ws.path(), &["eval", "compare", "out", "bash/results.json"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let comparison = text(&o.stdout);
    assert!(comparison.contains("| run | 1/1 100% (21–100%) | – |"), "{comparison}");
    assert!(comparison.contains("| bash | – | 0/1 0% (0–79%) |"), "{comparison}");
}

#[tokio::test(flavor = "multi_thread")]
async fn eval_without_a_reachable_model_says_so_and_fails() {
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    suite(ws.path());
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut cmd = common::clix(home.path(), ws.path(), &["eval", "suite.jsonl", "--tools", "run"]);
    cmd.env("AGENT_BASE_URL", format!("http://127.0.0.1:{port}/v1")).env("AGENT_MODEL", "none");
    let o = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(err.contains("1 of 1 attempts could not run") && err.contains("127.0.0.1"), "{err}");
    // The results are still written where it says.
    assert!(err.contains("results.json"), "{err}");
}

/// The whole path with the real small model (Qwen2.5-Coder-1.5B on
/// xllamacpp, `clix_testkit::llm`): one task of the shipped suite in the
/// `run` design. Whatever the model does, the run must end with its
/// results and report written and no attempt in error.
#[tokio::test(flavor = "multi_thread")]
async fn eval_with_the_real_model_writes_results_and_a_report() {
    let test = "eval_with_the_real_model_writes_results_and_a_report";
    let Some(server) = tokio::task::spawn_blocking(move || clix_testkit::llm::serve(test)).await.unwrap() else {
        return;
    };
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../evals/core.jsonl");
    let out = ws.path().join("out");
    let args = [
        "eval",
        suite.to_str().unwrap(),
        "--filter",
        "^log_error_count$",
        "--tools",
        "run",
        "--max-steps",
        "4",
        "--out",
        out.to_str().unwrap(),
    ];
    let mut cmd = common::clix(home.path(), ws.path(), &args);
    cmd.env("AGENT_BASE_URL", &server.url)
        .env("AGENT_MODEL", "local")
        // 2 cores: a first call reads ~1,000 prompt tokens at 20–40 a second.
        .env("CLIX_AGENT_MODEL_CALL_SECS", "300")
        .env("CLIX_AGENT_MAX_OUTPUT_TOKENS", "300")
        .env("CLIX_AGENT_CONTEXT_WINDOW", "8192");
    let o = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    let said = format!("{}{}\nserver log:\n{}", text(&o.stdout), text(&o.stderr), server.log_tail());
    assert_eq!(o.status.code(), Some(0), "{said}");
    let results: Value = serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let attempt = &results["attempts"][0];
    assert_eq!(attempt["task"], "log_error_count", "{said}");
    assert!(!attempt["stop_reason"].as_str().unwrap().starts_with("error"), "{said}");
    assert!(attempt["input_tokens"].as_u64().unwrap() > 0, "usage from the server: {attempt}");
    assert!(std::fs::read_to_string(out.join("report.html")).unwrap().contains("log_error_count"));
    let replay = out.join("runs/log_error_count-run-r0.html");
    assert!(replay.is_file(), "{said}");
    eprintln!("real model on log_error_count: passed {} in {} steps", attempt["passed"], attempt["steps"]);
}
