//! The event stream between agents (`clix ask --jsonl`, `--input jsonl`):
//! every line held to `docs/events.schema.json`, `result` last, exit codes,
//! and pipes of two and three agents against scripted model servers.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod common;
use clix_testkit::model_server as support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::text;
use serde_json::Value;
use support::{openai_calls, openai_text, run_call, start};

use common::agent_home::AgentHome as Home;

impl Home {
    fn new() -> Self {
        Home::with_files(&[("app.log", b"ok\nERROR a\nERROR b\n")])
    }
}

fn schema() -> jsonschema::Validator {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/events.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

/// Every line valid, `seq` strictly increasing from 1, one agent, and
/// exactly one `result`, the last line.
fn checked_stream(stdout: &[u8]) -> Vec<Value> {
    let schema = schema();
    let lines: Vec<Value> = text(stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(!lines.is_empty(), "no lines");
    for (i, line) in lines.iter().enumerate() {
        let errors: Vec<String> = schema.iter_errors(line).map(|e| format!("{} at {}", e, e.instance_path())).collect();
        assert!(errors.is_empty(), "line {}: {line}: {errors:?}", i + 1);
        assert_eq!(line["metadata"]["seq"], i as u64 + 1, "{line}");
        assert_eq!(line["metadata"]["agent_id"], lines[0]["metadata"]["agent_id"]);
    }
    let results = lines.iter().filter(|l| l["type"] == "result").count();
    assert_eq!((results, lines.last().unwrap()["type"].as_str()), (1, Some("result")));
    lines
}

fn kinds(lines: &[Value]) -> Vec<&str> {
    lines.iter().map(|l| l["type"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn a_finished_run_ends_with_its_result_and_every_line_fits_the_schema() {
    let server = start(vec![
        openai_calls(&[("run", &run_call("grep -c ERROR app.log > count.txt; cat count.txt"))], 10, 5),
        openai_text("2 errors", 20, 9),
    ])
    .await;
    let h = Home::new();
    let o = h.output_with_stdin(Some(&server), &["ask", "--jsonl", "count the errors"], b"").await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let lines = checked_stream(&o.stdout);
    assert_eq!(kinds(&lines)[0], "start");
    assert!(kinds(&lines).contains(&"tool_result"), "{:?}", kinds(&lines));
    let result = &lines.last().unwrap()["content"];
    assert_eq!((result["is_error"].as_bool(), result["answer"].as_str()), (Some(false), Some("2 errors")));
    assert_eq!((result["steps"].as_u64(), result["usage"]["input_tokens"].as_u64()), (Some(2), Some(30)));
    assert_eq!(result["artifacts"], serde_json::json!([{"path": "count.txt", "change": "created", "bytes": 2}]));
    assert_eq!(lines[0]["metadata"]["agent_id"], lines[0]["content"]["run_id"]);
}

#[tokio::test]
async fn a_guess_asked_again_for_has_no_text_event() {
    // Issue 31: asked again with a call required, the model answered again;
    // the guess is in its `response`, the answer alone in `text`.
    let server = start(vec![openai_text("refused", 1, 1), openai_text("refused too", 1, 1)]).await;
    let h = Home::new();
    let o = h.output_with_stdin(Some(&server), &["ask", "--jsonl", "hello there"], b"").await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let lines = checked_stream(&o.stdout);
    let of = |kind: &str| -> Vec<&str> {
        lines.iter().filter(|l| l["type"] == kind).map(|l| l["content"]["text"].as_str().unwrap()).collect()
    };
    assert_eq!(of("text"), ["refused too"]);
    assert_eq!(of("response"), ["refused", "refused too"]);
    assert_eq!(lines.last().unwrap()["content"]["answer"], "refused too");
}

#[tokio::test]
async fn a_failing_command_and_a_budget_stop_fit_the_schema_and_exit_as_documented() {
    // A command that fails is the model's to handle: the run still answers.
    let server =
        start(vec![openai_calls(&[("run", &run_call("cat missing.txt"))], 1, 1), openai_text("none", 1, 1)]).await;
    let h = Home::new();
    let o = h.output_with_stdin(Some(&server), &["ask", "--jsonl", "read it"], b"").await;
    assert_eq!(o.status.code(), Some(0));
    let lines = checked_stream(&o.stdout);
    let failed = lines.iter().find(|l| l["type"] == "tool_result").unwrap();
    assert_ne!(failed["content"]["exit_code"], 0);
    // A budget that runs out: exit 3, and a result that is an error.
    let server = start(vec![
        openai_calls(&[("run", &run_call("ls"))], 1, 1),
        openai_text("I listed the folder; counting is left.", 1, 1),
    ])
    .await;
    let o = h.output_with_stdin(Some(&server), &["ask", "--jsonl", "--max-steps", "1", "count"], b"").await;
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stderr));
    let lines = checked_stream(&o.stdout);
    let result = &lines.last().unwrap()["content"];
    assert_eq!((result["is_error"].as_bool(), result["stop_reason"].as_str()), (Some(true), Some("max_steps")));
}

#[tokio::test]
async fn an_interrupted_run_still_ends_with_a_result() {
    let server = start(vec![openai_calls(&[("run", &run_call("sleep 30"))], 1, 1)]).await;
    let h = Home::new();
    let mut cmd = h.clix(Some(&server), &["ask", "--jsonl", "wait"]);
    let child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let started = Instant::now();
    while !std::fs::read_dir(h.home.path().join("data/runs"))
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| std::fs::read_to_string(e.path()).unwrap_or_default().contains("\"type\":\"tool_call\""))
    {
        assert!(started.elapsed() < Duration::from_secs(60), "the command never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
    assert_eq!(o.status.code(), Some(130));
    let lines = checked_stream(&o.stdout);
    assert_eq!(lines.last().unwrap()["content"]["stop_reason"], "interrupted");
}

#[tokio::test]
async fn two_and_three_agents_pipe_their_results_downstream() {
    let first = start(vec![
        openai_calls(&[("run", &run_call("grep ERROR app.log > errors.txt"))], 1, 1),
        openai_text("The errors are in errors.txt", 1, 1),
    ])
    .await;
    let second = start(vec![
        openai_calls(&[("run", &run_call("wc -l < errors.txt > PLAN.md"))], 1, 1),
        openai_text("PLAN.md written", 1, 1),
    ])
    .await;
    let third = start(vec![openai_text("checked", 1, 1)]).await;
    let h = Home::new();
    let one = h.output_with_stdin(Some(&first), &["ask", "--jsonl", "find the errors"], b"").await;
    assert_eq!(one.status.code(), Some(0));
    let two = h
        .output_with_stdin(
            Some(&second),
            &["ask", "--jsonl", "--input", "jsonl", "write a fix plan to PLAN.md"],
            &one.stdout,
        )
        .await;
    assert_eq!(two.status.code(), Some(0), "{}", text(&two.stderr));
    checked_stream(&two.stdout);
    // The downstream task carries the upstream answer and files.
    let task = second.requests()[0].body["messages"][1]["content"].as_str().unwrap().to_string();
    assert!(
        task.contains("The errors are in errors.txt") && task.contains("- errors.txt (created, 16 bytes)"),
        "{task}"
    );
    assert!(task.ends_with("Your task:\nwrite a fix plan to PLAN.md"), "{task}");
    let three = h
        .output_with_stdin(
            Some(&third),
            &["ask", "--jsonl", "--input", "jsonl", "--input-events", "all", "check it"],
            &two.stdout,
        )
        .await;
    assert_eq!(three.status.code(), Some(0), "{}", text(&three.stderr));
    let task = third.requests()[0].body["messages"][1]["content"].as_str().unwrap().to_string();
    assert!(task.contains("PLAN.md written") && task.contains("$ wc -l < errors.txt > PLAN.md"), "{task}");
    assert_eq!(std::fs::read_to_string(h.ws.path().join("PLAN.md")).unwrap().trim(), "2");
}

#[tokio::test]
async fn a_failed_or_unfinished_upstream_stops_the_downstream_before_any_model_call() {
    let h = Home::new();
    let budget = start(vec![openai_calls(&[("run", &run_call("ls"))], 1, 1), openai_text("stuck", 1, 1)]).await;
    let failed = h.output_with_stdin(Some(&budget), &["ask", "--jsonl", "--max-steps", "1", "a"], b"").await;
    assert_eq!(failed.status.code(), Some(3));
    let unfinished: String =
        text(&failed.stdout).lines().filter(|l| !l.contains("\"type\":\"result\"")).map(|l| format!("{l}\n")).collect();
    let cases: [(&str, &[u8], &str); 4] = [
        ("failed", &failed.stdout, "the upstream agent failed (max_steps)"),
        ("killed", unfinished.as_bytes(), "ended without a `result` line"),
        ("garbage", b"hello\n", "line 1 of the upstream stream is not a clix event"),
        ("empty", b"", "--input jsonl needs an upstream stream on stdin"),
    ];
    for (case, stdin, says) in cases {
        let downstream = start(vec![openai_text("should not be asked", 1, 1)]).await;
        let o = h.output_with_stdin(Some(&downstream), &["ask", "--jsonl", "--input", "jsonl", "go on"], stdin).await;
        assert_eq!(o.status.code(), Some(1), "{case}");
        assert!(text(&o.stderr).contains(says), "{case}: {}", text(&o.stderr));
        assert!(downstream.requests().is_empty(), "{case}: a model was called");
        // Its own stream fails too, so a third agent stops in turn.
        let lines = checked_stream(&o.stdout);
        assert_eq!(lines.last().unwrap()["content"]["is_error"], true, "{case}");
    }
}
