//! A call whose footer names a failed pipeline stage (`[exit:0 | jq exit 5
//! | 4ms]`) is a failed call for the loop (issue 31): an answer right after
//! it is asked again with a tool call required (`agent.retry_failed`), while
//! the exit code the model and the events are told stays the line's own.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod support;

use clix_agent::{Agent, AgentSettings, Event, ProviderKind, RunSummary};
use serde_json::Value;
use support::{Recorded, Reply, engine, openai_calls, openai_text, provider, run_call, start};

const SUM: &str = "jq '.amount' orders.json | awk '{s+=$1} END {print s+0}'";

async fn run(script: Vec<Reply>) -> (RunSummary, Vec<Event>, Vec<Recorded>) {
    let server = start(script).await;
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("orders.json"), r#"[{"amount": 3}, {"amount": 4}]"#).unwrap();
    let mut engine = engine(ws.path()).await;
    let provider = provider(ProviderKind::OpenAi, format!("{}/v1", server.url), None, "scripted", true);
    let settings = AgentSettings { look_first: false, retry_failed: true, ..AgentSettings::default() };
    let mut agent = Agent::new(&mut engine, provider, settings, None);
    let mut events = Vec::new();
    let summary = agent.run("what is the total amount?", &mut |e| events.push(e.clone())).await;
    (summary, events, server.requests())
}

#[tokio::test]
async fn an_answer_after_a_hidden_stage_failure_is_asked_again() {
    let fixed = "jq '[.[].amount] | add' orders.json";
    let (summary, events, requests) = run(vec![
        openai_calls(&[("run", &run_call(SUM))], 1, 1),
        openai_text("The total is 0.", 1, 1),
        openai_calls(&[("run", &run_call(fixed))], 1, 1),
        openai_text("7", 1, 1),
    ])
    .await;
    assert_eq!(summary.answer, "7");
    let choices: Vec<&Value> = requests.iter().map(|r| &r.body["tool_choice"]).collect();
    assert_eq!(choices, [&Value::from("auto"), &"auto".into(), &"required".into(), &"auto".into()]);
    // The first result names jq, with the line's own code.
    let first = events.iter().find_map(|e| match e {
        Event::ToolResult { text, exit_code, .. } => Some((text.clone(), *exit_code)),
        _ => None,
    });
    let (text, code) = first.unwrap();
    assert_eq!(code, 0, "{text}");
    assert!(text.starts_with("0\n[stderr] jq: "), "{text}");
    assert!(text.contains("[exit:0 | jq exit 5 | "), "{text}");
}

#[tokio::test]
async fn an_answer_after_a_pipeline_that_worked_stands() {
    let (summary, _, requests) = run(vec![
        openai_calls(&[("run", &run_call("jq -r '.[].amount' orders.json | awk '{s+=$1} END {print s}'"))], 1, 1),
        openai_text("7", 1, 1),
    ])
    .await;
    assert_eq!((summary.answer.as_str(), requests.len()), ("7", 2));
}
