//! Prompt caching against the scripted servers: Anthropic's breakpoints
//! where they belong, a request prefix that never changes between calls or
//! between sessions (what OpenAI's and llama.cpp's caches match on), the
//! cached tokens of every provider's usage, and a run's cost.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod support;

use std::path::{Path, PathBuf};

use clix_agent::stream::RunResult;
use clix_agent::{
    Agent, AgentSettings, Event, Invocation, ModelPrice, ProviderKind, RunSummary, StopReason, ToolCall, ToolOutcome,
    ToolSpec, Tools, Trajectory, list_runs,
};
use clix_engine::CancelHandle;
use serde_json::{Value, json};
use support::{
    RED_PNG, Recorded, Reply, anthropic_reply, engine, openai_calls, openai_text, provider, run_call, start, with_usage,
};

const NOTE: &str = "Facts stored about this topic in earlier sessions:\n- the build uses make";

/// Answers come in one reply, so none is asked again.
fn settings() -> AgentSettings {
    AgentSettings { model_call_tries: 1, look_first: false, retry_failed: false, ..AgentSettings::default() }
}

/// A tool set that offers no tool at all.
struct NoTools(PathBuf);

impl Tools for NoTools {
    fn specs(&self) -> Vec<ToolSpec> {
        Vec::new()
    }
    fn guidance(&self) -> String {
        "You have no tools.".into()
    }
    fn workspace(&self) -> PathBuf {
        self.0.clone()
    }
    fn cancel_handle(&self) -> Option<CancelHandle> {
        None
    }
    fn prepare(&self, call: &ToolCall) -> Result<Invocation, String> {
        Err(format!("[error] no tool {}", call.name))
    }
    async fn run(&mut self, _: &Invocation) -> ToolOutcome {
        ToolOutcome::default()
    }
}

struct Outcome {
    summary: RunSummary,
    requests: Vec<Recorded>,
    events: Vec<Event>,
    runs: PathBuf,
}

/// One task on a fresh agent over `ws` (the engine's `run` tool, or none),
/// asking a scripted server of `kind`; `note` is added to the system prompt.
async fn run_in(
    ws: &Path,
    kind: ProviderKind,
    script: Vec<Reply>,
    note: Option<&str>,
    with_tools: bool,
    settings: AgentSettings,
) -> Outcome {
    let server = start(script).await;
    let url = match kind {
        ProviderKind::OpenAi => format!("{}/v1", server.url),
        ProviderKind::Anthropic => server.url.clone(),
    };
    let provider = provider(kind, url, Some("key-for-tests"), "scripted", true);
    let runs = ws.join(".runs");
    let trajectory = Some(Trajectory::create(&runs).unwrap());
    let mut events = Vec::new();
    let task = "count the lines of notes.txt";
    let summary = if with_tools {
        let mut engine = engine(ws).await;
        let mut agent = Agent::new(&mut engine, provider, settings, trajectory);
        if let Some(note) = note {
            agent.add_system_note(note);
        }
        agent.run(task, &mut |e| events.push(e.clone())).await
    } else {
        let mut tools = NoTools(ws.to_path_buf());
        let mut agent = Agent::new(&mut tools, provider, settings, trajectory);
        if let Some(note) = note {
            agent.add_system_note(note);
        }
        agent.run(task, &mut |e| events.push(e.clone())).await
    };
    Outcome { summary, requests: server.requests(), events, runs }
}

fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
    std::fs::write(ws.path().join("red.png"), RED_PNG).unwrap();
    ws
}

/// `steps` replies: a `run` call each (the second looks at an image), then
/// the answer.
fn script(kind: ProviderKind, steps: usize) -> Vec<Reply> {
    let commands = ["cat notes.txt", "see red.png", "wc -l notes.txt", "head -1 notes.txt"];
    let mut script: Vec<Reply> = commands
        .iter()
        .take(steps - 1)
        .enumerate()
        .map(|(i, command)| match kind {
            ProviderKind::OpenAi => openai_calls(&[("run", &run_call(command))], 100, 10),
            ProviderKind::Anthropic => anthropic_reply("", &[(&format!("toolu_{i}"), &run_call(command))], 100, 10),
        })
        .collect();
    script.push(match kind {
        ProviderKind::OpenAi => openai_text("2 lines.", 100, 5),
        ProviderKind::Anthropic => anthropic_reply("2 lines.", &[], 100, 5),
    });
    script
}

/// Every `cache_control` in `v`, by its JSON pointer.
fn breakpoints(v: &Value, at: &str, found: &mut Vec<String>) {
    match v {
        Value::Object(fields) => {
            for (k, inner) in fields {
                if k == "cache_control" {
                    assert_eq!(inner, &json!({"type": "ephemeral"}), "{at}");
                    found.push(at.to_string());
                } else {
                    breakpoints(inner, &format!("{at}/{k}"), found);
                }
            }
        }
        Value::Array(items) => {
            items.iter().enumerate().for_each(|(i, inner)| breakpoints(inner, &format!("{at}/{i}"), found))
        }
        _ => {}
    }
}

/// (memory notes, steps, tools offered): every request of the run marks
/// the last tool, the system prompt's stable block and the newest
/// message's last block, and nothing else; never more than the API's 4.
#[tokio::test]
async fn anthropic_requests_mark_tools_the_stable_system_block_and_the_newest_message() {
    let rows =
        [(false, 1, true), (true, 1, true), (false, 3, true), (true, 4, true), (false, 1, false), (true, 1, false)];
    for (notes, steps, tools) in rows {
        let ws = workspace();
        let note = notes.then_some(NOTE);
        let o =
            run_in(ws.path(), ProviderKind::Anthropic, script(ProviderKind::Anthropic, steps), note, tools, settings())
                .await;
        let row = format!("notes {notes}, {steps} steps, tools {tools}");
        assert_eq!(o.summary.stop_reason, StopReason::Answered, "{row}");
        assert_eq!(o.requests.len(), steps, "{row}");
        for (i, request) in o.requests.iter().enumerate() {
            let body = &request.body;
            let mut found = Vec::new();
            breakpoints(body, "", &mut found);
            let last_message = body["messages"].as_array().unwrap().len() - 1;
            let last_block = body["messages"][last_message]["content"].as_array().unwrap().len() - 1;
            let mut want = Vec::new();
            if tools {
                want.push("/tools/0".to_string());
            }
            want.extend(["/system/0".to_string(), format!("/messages/{last_message}/content/{last_block}")]);
            found.sort();
            want.sort();
            assert_eq!(found, want, "{row}, request {i}");
            assert!(found.len() <= 4, "{row}");
            let system = body["system"].as_array().unwrap();
            assert!(system[0]["text"].as_str().unwrap().starts_with("You are"), "{row}: the stable prompt first");
            let texts: Vec<&str> = system.iter().skip(1).map(|b| b["text"].as_str().unwrap()).collect();
            assert_eq!(texts, note.into_iter().collect::<Vec<_>>(), "{row}: the notes after it, unmarked");
        }
    }
}

/// `body` with Anthropic's breakpoints taken out of its messages: the
/// newest message's moves on with every request, which the cache allows
/// for (it matches content, looking back from each breakpoint).
fn without_message_breakpoints(mut body: Value) -> Value {
    for message in body["messages"].as_array_mut().into_iter().flatten() {
        for block in message["content"].as_array_mut().into_iter().flatten() {
            block.as_object_mut().map(|b| b.remove("cache_control"));
        }
    }
    body
}

/// The parts of a request a prompt cache matches on, serialized: the tools,
/// the system prompt, and each message.
fn prefix_parts(kind: ProviderKind, body: &Value) -> (String, String, Vec<String>) {
    let body = without_message_breakpoints(body.clone());
    let messages: Vec<String> = body["messages"].as_array().unwrap().iter().map(Value::to_string).collect();
    let system = match kind {
        ProviderKind::OpenAi => messages[0].clone(),
        ProviderKind::Anthropic => body["system"].to_string(),
    };
    (body["tools"].to_string(), system, messages)
}

/// Each request of a multi-step run (an image among its results, a note
/// in its system prompt) starts with the whole of the request before it,
/// byte for byte: the tools, the system prompt and every earlier message.
#[tokio::test]
async fn consecutive_requests_start_with_the_request_before_byte_for_byte() {
    for kind in [ProviderKind::OpenAi, ProviderKind::Anthropic] {
        let ws = workspace();
        let o = run_in(ws.path(), kind, script(kind, 5), Some(NOTE), true, settings()).await;
        assert_eq!((o.summary.stop_reason.clone(), o.requests.len()), (StopReason::Answered, 5), "{kind:?}");
        let parts: Vec<_> = o.requests.iter().map(|r| prefix_parts(kind, &r.body)).collect();
        for (i, pair) in parts.windows(2).enumerate() {
            let ((tools, system, before), (next_tools, next_system, after)) = (&pair[0], &pair[1]);
            assert_eq!((tools, system), (next_tools, next_system), "{kind:?}: request {} → {}", i, i + 1);
            assert!(after.len() > before.len(), "{kind:?}: request {} adds to the conversation", i + 1);
            assert_eq!(&after[..before.len()], &before[..], "{kind:?}: request {} → {}", i, i + 1);
        }
        let all = serde_json::to_string(&o.requests.last().unwrap().body).unwrap();
        assert!(all.contains("iVBORw0KGgo"), "{kind:?}: the image stays in the conversation");
        let system = &parts[0].1;
        assert!(system.contains("the build uses make"), "{kind:?}: {system}");
    }
}

/// Two fresh agents on the same workspace with the same settings send the
/// same first request, so a cache warmed by one session serves the next.
#[tokio::test]
async fn two_sessions_on_one_workspace_send_the_same_first_request() {
    for kind in [ProviderKind::OpenAi, ProviderKind::Anthropic] {
        let ws = workspace();
        let first = run_in(ws.path(), kind, script(kind, 2), Some(NOTE), true, settings()).await;
        let second = run_in(ws.path(), kind, script(kind, 2), Some(NOTE), true, settings()).await;
        assert_eq!(first.requests[0].body, second.requests[0].body, "{kind:?}");
        assert_eq!(first.requests[1].body["tools"], second.requests[1].body["tools"], "{kind:?}");
    }
}

/// The forms of cached tokens each server sends, summed over a run: OpenAI's
/// `prompt_tokens_details.cached_tokens`, llama.cpp's `timings.cache_n`
/// (streamed and not, as its server b7710 sends them), Anthropic's
/// `cache_read_input_tokens` and `cache_creation_input_tokens` (its
/// `input_tokens` leaves them out: the input is the sum).
#[tokio::test]
async fn cached_tokens_of_every_provider_are_read_and_summed_over_the_run() {
    let openai = [
        openai_calls(&[("run", &run_call("cat notes.txt"))], 900, 10),
        with_usage(
            openai_calls(&[("run", &run_call("wc -l notes.txt"))], 1000, 10),
            "/usage",
            &json!({"usage": {"prompt_tokens_details": {"cached_tokens": 896}}}),
        ),
        // llama.cpp: `prompt_tokens` = `cache_n` + `prompt_n`.
        with_usage(
            openai_text("2 lines.", 1100, 5),
            "/usage",
            &json!({"timings": {"cache_n": 1040, "prompt_n": 60, "predicted_n": 5}}),
        ),
    ];
    let ws = workspace();
    let o = run_in(ws.path(), ProviderKind::OpenAi, openai.to_vec(), None, true, settings()).await;
    let want =
        clix_agent::Usage { input_tokens: 3000, output_tokens: 25, cache_read_tokens: 1936, cache_write_tokens: 0 };
    assert_eq!(o.summary.usage, want);
    assert_eq!(want.uncached_input_tokens(), 1064);
    let usages: Vec<(u64, u64)> = o
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Usage { input_tokens, cache_read_tokens, .. } => Some((*input_tokens, *cache_read_tokens)),
            _ => None,
        })
        .collect();
    assert_eq!(usages, [(900, 0), (1900, 896), (3000, 1936)], "the run's totals after each reply");
    let done = o.events.iter().find_map(|e| match e {
        Event::Done { usage, cost, .. } => {
            Some((usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens, *cost))
        }
        _ => None,
    });
    assert_eq!(done, Some((3000, 1936, 0, None)));
    let runs = list_runs(&o.runs);
    assert_eq!((runs.len(), runs[0].usage, runs[0].cost), (1, want, None), "clix runs reads them back");

    // llama.cpp unstreamed: `timings` beside `usage` in the body.
    let body = json!({
        "choices": [{"finish_reason": "stop", "index": 0, "message": {"role": "assistant", "content": "Hi"}}],
        "model": "local", "object": "chat.completion",
        "usage": {"completion_tokens": 2, "prompt_tokens": 23, "total_tokens": 25},
        "timings": {"cache_n": 22, "prompt_n": 1, "predicted_n": 2}
    });
    let server = start(vec![Reply::Status(200, vec![], body.to_string())]).await;
    let ws = workspace();
    let mut engine = engine(ws.path()).await;
    let unstreamed = provider(ProviderKind::OpenAi, format!("{}/v1", server.url), None, "local", false);
    let summary = Agent::new(&mut engine, unstreamed, settings(), None).run("hi", &mut |_| {}).await;
    assert_eq!((summary.usage.input_tokens, summary.usage.cache_read_tokens, summary.usage.output_tokens), (23, 22, 2));

    let anthropic = [
        with_usage(
            anthropic_reply("", &[("toolu_1", &run_call("cat notes.txt"))], 20, 10),
            "/message/usage",
            &json!({"message": {"usage": {"cache_creation_input_tokens": 1500, "cache_read_input_tokens": 0}}}),
        ),
        with_usage(
            anthropic_reply("2 lines.", &[], 30, 5),
            "/message/usage",
            &json!({"message": {"usage": {"cache_creation_input_tokens": 60, "cache_read_input_tokens": 1500}}}),
        ),
    ];
    let ws = workspace();
    let o = run_in(ws.path(), ProviderKind::Anthropic, anthropic.to_vec(), None, true, settings()).await;
    let want =
        clix_agent::Usage { input_tokens: 3110, output_tokens: 15, cache_read_tokens: 1500, cache_write_tokens: 1560 };
    assert_eq!(o.summary.usage, want);
    assert_eq!(want.uncached_input_tokens(), 50);
}

/// With a price set for the run's model, the summary, the trajectory's
/// `done`, the `result` and `clix runs` carry the cost; without, none does.
#[tokio::test]
async fn a_run_costs_what_the_prices_set_for_its_model_say() {
    let price = ModelPrice { input: 3.0, cached_input: Some(0.3), cache_write: Some(3.75), output: 15.0 };
    let rows = [("scripted", Some(0.0015 + 0.00036 + 0.000075 + 0.0003)), ("another-model", None)];
    for (priced, want) in rows {
        let script = vec![
            with_usage(
                anthropic_reply("", &[("toolu_1", &run_call("cat notes.txt"))], 500, 10),
                "/message/usage",
                &json!({"message": {"usage": {"cache_creation_input_tokens": 20}}}),
            ),
            with_usage(
                anthropic_reply("2 lines.", &[], 0, 10),
                "/message/usage",
                &json!({"message": {"usage": {"cache_read_input_tokens": 1200}}}),
            ),
        ];
        let settings = AgentSettings { prices: [(priced.to_string(), price)].into(), ..settings() };
        let ws = workspace();
        let o = run_in(ws.path(), ProviderKind::Anthropic, script, None, true, settings).await;
        // 500 fresh at 3, 1200 read at 0.3, 20 written at 3.75, 20 out at 15 (per million).
        let close = |got: Option<f64>| match (got, want) {
            (Some(got), Some(want)) => (got - want).abs() < 1e-9,
            (got, want) => got == want,
        };
        assert!(close(o.summary.cost), "{priced}: {:?} != {want:?}", o.summary.cost);
        let done_cost = o.events.iter().find_map(|e| match e {
            Event::Done { cost, .. } => Some(*cost),
            _ => None,
        });
        assert!(close(done_cost.flatten()), "{priced}: the done event");
        assert!(close(list_runs(&o.runs)[0].cost), "{priced}: clix runs");
        let result = serde_json::to_value(RunResult::new(&o.summary, 1, vec![])).unwrap();
        assert_eq!(result.get("cost").is_some(), want.is_some(), "{priced}: {result}");
        assert_eq!(result["usage"]["cache_read_tokens"], 1200);
        assert_eq!(result["usage"]["cache_write_tokens"], 20);
    }
}
