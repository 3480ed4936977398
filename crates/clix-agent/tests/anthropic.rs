//! The loop against a scripted Anthropic Messages server over real HTTP.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod support;

use clix_agent::{Agent, AgentSettings, Event, Provider, StopReason, resolve_provider};
use serde_json::{Value, json};
use support::{RED_PNG, Recorded, Reply, anthropic_reply, engine, run_call, start};

async fn run(script: Vec<Reply>, settings: AgentSettings) -> (clix_agent::RunSummary, Vec<Recorded>, Vec<Event>) {
    let server = start(script).await;
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("red.png"), RED_PNG).unwrap();
    let mut engine = engine(ws.path()).await;
    let configured = AgentSettings {
        provider: "anthropic".into(),
        base_url: server.url.clone(),
        model: "claude-scripted".into(),
        api_key: "ant-key".into(),
        ..settings.clone()
    };
    let provider = Provider::new(&resolve_provider(&configured, |_| None, None, None).unwrap());
    let mut agent = Agent::new(&mut engine, provider, settings, None);
    let mut events = Vec::new();
    let summary = agent.run("look at red.png and count", &mut |e| events.push(e.clone())).await;
    (summary, server.requests(), events)
}

fn settings() -> AgentSettings {
    AgentSettings { model_call_tries: 3, ..AgentSettings::default() }
}

#[tokio::test]
async fn tool_use_round_trip_with_an_image() {
    let script = vec![
        anthropic_reply(
            "Let me look.",
            &[("toolu_1", &run_call("see red.png")), ("toolu_2", &run_call("echo 3"))],
            120,
            30,
        ),
        anthropic_reply("It is red; the count is 3.", &[], 200, 12),
    ];
    let (summary, requests, _) = run(script, settings()).await;
    assert_eq!(summary.stop_reason, StopReason::Answered);
    assert_eq!(summary.answer, "It is red; the count is 3.");
    assert_eq!((summary.usage.input_tokens, summary.usage.output_tokens), (320, 42));

    let first = &requests[0];
    assert_eq!(first.path, "/v1/messages");
    assert!(first.headers.iter().any(|(k, v)| k == "x-api-key" && v == "ant-key"));
    assert!(first.headers.iter().any(|(k, v)| k == "anthropic-version" && v == "2023-06-01"));
    assert!(first.body["system"][0]["text"].as_str().unwrap().contains("one tool"));
    assert_eq!(first.body["tools"][0]["name"], "run");
    assert_eq!(first.body["tools"][0]["input_schema"]["required"], json!(["command"]));
    assert_eq!(first.body["tool_choice"], json!({"type": "auto"}));
    assert_eq!(first.body["stream"], true);

    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    let roles: Vec<&str> = messages.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "user"], "turns alternate");
    let assistant = messages[1]["content"].as_array().unwrap();
    assert_eq!(assistant[0], json!({"type": "text", "text": "Let me look."}));
    assert_eq!(assistant[1]["type"], "tool_use");
    assert_eq!(assistant[1]["input"], json!({"command": "see red.png"}));
    let reply: &Vec<Value> = messages[2]["content"].as_array().unwrap();
    assert_eq!(reply[0]["type"], "tool_result");
    assert_eq!(reply[0]["tool_use_id"], "toolu_1");
    assert!(reply[0]["content"].as_str().unwrap().starts_with("red.png: PNG image, 2x1"));
    assert_eq!(reply[1]["tool_use_id"], "toolu_2");
    assert!(reply[1]["content"].as_str().unwrap().starts_with("3\n[exit:0 | "));
    let image = reply.iter().find(|b| b["type"] == "image").expect("image block");
    assert_eq!(image["source"]["media_type"], "image/png");
    assert!(image["source"]["data"].as_str().unwrap().starts_with("iVBORw0KGgo"));
}

#[tokio::test]
async fn overload_mid_stream_is_retried_and_budgets_end_with_tool_choice_none() {
    let overloaded = Reply::Sse(vec![
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n".into(),
    ]);
    let script = vec![
        overloaded,
        anthropic_reply("", &[("t1", &run_call("echo 1"))], 10, 1),
        anthropic_reply("", &[("t2", &run_call("echo 2"))], 10, 1),
        anthropic_reply("Stopped after two steps.", &[], 10, 1),
    ];
    let (summary, requests, events) = run(script, AgentSettings { max_steps: 2, ..settings() }).await;
    assert!(events.iter().any(|e| matches!(e, Event::Retry { error, .. } if error.contains("Overloaded"))));
    assert_eq!(summary.stop_reason, StopReason::MaxSteps);
    assert_eq!(summary.answer, "Stopped after two steps.");
    assert_eq!(requests.last().unwrap().body["tool_choice"], json!({"type": "none"}));
}

#[tokio::test]
async fn an_answer_without_looking_is_asked_again_with_tool_choice_any() {
    let script = vec![
        anthropic_reply("It is blue.", &[], 10, 1),
        anthropic_reply("", &[("t1", &run_call("see red.png"))], 10, 1),
        anthropic_reply("It is red.", &[], 10, 1),
    ];
    let (summary, requests, _) = run(script, AgentSettings { look_first: true, temperature: 0.5, ..settings() }).await;
    assert_eq!(summary.answer, "It is red.");
    assert!(requests.iter().all(|r| r.body["temperature"] == 0.5), "agent.temperature is sent");
    let choices: Vec<&Value> = requests.iter().map(|r| &r.body["tool_choice"]["type"]).collect();
    assert_eq!(choices, ["auto", "any", "auto"]);
    let asked_again = requests[1].body["messages"].as_array().unwrap();
    assert_eq!(asked_again.len(), 1, "the guess is not kept: {asked_again:?}");
}
