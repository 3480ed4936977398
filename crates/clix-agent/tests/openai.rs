//! The loop against a scripted OpenAI-compatible server over real HTTP.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod support;

use std::time::Duration;

use clix_agent::{
    Agent, AgentSettings, Event, Provider, ProviderKind, RunSummary, StopReason, Trajectory, read_run, resolve_provider,
};
use serde_json::Value;
use support::{
    RED_PNG, Recorded, Reply, Server, engine, openai_calls, openai_json, openai_text, provider, run_call, start,
};

struct Outcome {
    summary: RunSummary,
    events: Vec<Event>,
    requests: Vec<Recorded>,
    trajectory: Vec<Event>,
    _ws: tempfile::TempDir,
}

/// The scripts answer a task in one reply, so an answer is not asked
/// again here; `a_first_answer_without_looking_…` and
/// `an_answer_right_after_a_failed_call_…` test those defaults.
fn settings() -> AgentSettings {
    AgentSettings {
        model_call_tries: 3,
        model_call_secs: 10,
        look_first: false,
        retry_failed: false,
        ..AgentSettings::default()
    }
}

async fn run(script: Vec<Reply>, settings: AgentSettings, task: &str) -> Outcome {
    let server = start(script).await;
    run_on(&server, settings, task).await
}

async fn run_on(server: &Server, settings: AgentSettings, task: &str) -> Outcome {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
    std::fs::write(ws.path().join("red.png"), RED_PNG).unwrap();
    let runs = ws.path().join(".runs");
    let mut engine = engine(ws.path()).await;
    // Resolved from the settings, as clix does: their temperature is sent.
    let configured = AgentSettings {
        provider: "openai".into(),
        base_url: format!("{}/v1", server.url),
        model: "scripted".into(),
        api_key: "test-key".into(),
        ..settings.clone()
    };
    let provider = Provider::new(&resolve_provider(&configured, |_| None, None, None).unwrap());
    let trajectory = Trajectory::create(&runs).unwrap();
    let id = trajectory.id.clone();
    let mut agent = Agent::new(&mut engine, provider, settings, Some(trajectory));
    let mut events = Vec::new();
    let summary = agent.run(task, &mut |e| events.push(e.clone())).await;
    let trajectory = read_run(&runs, &id).unwrap().into_iter().map(|r| r.event).collect();
    Outcome { summary, events, requests: server.requests(), trajectory, _ws: ws }
}

/// The texts of the run's tool results, in order.
fn tool_results(o: &Outcome) -> Vec<String> {
    o.events
        .iter()
        .filter_map(|e| match e {
            Event::ToolResult { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

fn messages(r: &Recorded) -> &Vec<Value> {
    r.body["messages"].as_array().unwrap()
}

#[tokio::test]
async fn tool_call_round_trip() {
    let o = run(
        vec![
            openai_calls(&[("run", &run_call("cat notes.txt | wc -l"))], 100, 10),
            openai_text("There are 2 lines.", 150, 8),
        ],
        settings(),
        "How many lines are in notes.txt?",
    )
    .await;
    assert_eq!(o.summary.stop_reason, StopReason::Answered);
    assert_eq!(o.summary.answer, "There are 2 lines.");
    assert_eq!((o.summary.usage.input_tokens, o.summary.usage.output_tokens), (250, 18));
    assert_eq!(o.requests.len(), 2);

    let first = &o.requests[0];
    assert_eq!(first.path, "/v1/chat/completions");
    assert!(first.headers.iter().any(|(k, v)| k == "authorization" && v == "Bearer test-key"));
    assert_eq!(first.body["model"], "scripted");
    assert_eq!(first.body["stream"], true);
    assert_eq!(first.body["tool_choice"], "auto");
    let tools = first.body["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1, "exactly one tool");
    assert_eq!(tools[0]["function"]["name"], "run");
    assert!(tools[0]["function"]["description"].as_str().unwrap().contains("[exit:N | duration]"));
    assert_eq!(tools[0]["function"]["parameters"]["required"], serde_json::json!(["command"]));
    assert_eq!(messages(first)[0]["role"], "system");
    assert_eq!(messages(first)[1]["content"], "How many lines are in notes.txt?");

    let second = messages(&o.requests[1]);
    assert_eq!(second[2]["role"], "assistant");
    assert_eq!(second[2]["content"], "", "assistant tool-call messages carry an empty string, never null");
    assert_eq!(second[2]["tool_calls"][0]["function"]["arguments"], run_call("cat notes.txt | wc -l"));
    assert_eq!(second[3]["role"], "tool");
    assert_eq!(second[3]["tool_call_id"], "call_0");
    let result = second[3]["content"].as_str().unwrap();
    assert!(result.starts_with("2\n[exit:0 | ") && result.ends_with("ms]"), "{result}");

    let kinds: Vec<&str> = o
        .trajectory
        .iter()
        .map(|e| match e {
            Event::Start { .. } => "start",
            Event::Context { .. } => "context",
            Event::Request { .. } => "request",
            Event::Response { .. } => "response",
            Event::ToolCall { .. } => "tool_call",
            Event::ToolResult { .. } => "tool_result",
            Event::Usage { .. } => "usage",
            Event::Tail { .. } => "tail",
            Event::Done { .. } => "done",
            _ => "other",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "start",
            "context",
            "request",
            "response",
            "usage",
            "tool_call",
            "tool_result",
            "request",
            "response",
            "usage",
            "tail",
            "done"
        ]
    );
    let trajectory_only = |e: &Event| matches!(e, Event::Context { .. } | Event::Request { .. } | Event::Tail { .. });
    assert!(!o.events.iter().any(trajectory_only), "trajectory only");
    assert_eq!(shown(&o), "There are 2 lines.", "the kept reply's text is shown");
}

#[tokio::test]
async fn several_calls_in_one_reply_all_run_in_order_and_share_the_session() {
    let args = [run_call("cd /tmp && X=7"), run_call("pwd; echo $X"), run_call("false")];
    let calls: Vec<(&str, &str)> = args.iter().map(|a| ("run", a.as_str())).collect();
    let o = run(vec![openai_calls(&calls, 10, 10), openai_text("ok", 10, 1)], settings(), "go").await;
    let second = messages(&o.requests[1]);
    let results: Vec<&str> =
        second.iter().filter(|m| m["role"] == "tool").map(|m| m["content"].as_str().unwrap()).collect();
    assert_eq!(results.len(), 3);
    assert!(results[0].starts_with("(no output)\n[exit:0"));
    assert!(results[1].starts_with("/tmp\n7\n[exit:0"), "{}", results[1]);
    assert!(results[2].starts_with("(no output)\n[exit:1"));
    let ids: Vec<&str> =
        second.iter().filter(|m| m["role"] == "tool").map(|m| m["tool_call_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["call_0", "call_1", "call_2"]);
}

#[tokio::test]
async fn an_image_from_see_rides_with_the_next_call() {
    let o = run(
        vec![openai_calls(&[("run", &run_call("see red.png"))], 10, 10), openai_text("red", 10, 1)],
        settings(),
        "what colour?",
    )
    .await;
    let second = messages(&o.requests[1]);
    let last = second.last().unwrap();
    assert_eq!(last["role"], "user");
    assert_eq!(last["content"][0]["text"], "[images from see: red.png]");
    let url = last["content"][1]["image_url"]["url"].as_str().unwrap();
    assert!(url.starts_with("data:image/png;base64,iVBORw0KGgo"), "{url}");
    let tool = second.iter().find(|m| m["role"] == "tool").unwrap();
    assert!(tool["content"].as_str().unwrap().starts_with("red.png: PNG image, 2x1"));
}

#[tokio::test]
async fn a_model_that_refuses_images_gets_the_conversation_without_them() {
    let refused = || {
        Reply::Status(
            500,
            vec![],
            r#"{"error":{"code":500,"message":"image input is not supported - hint: you may need to provide the mmproj"}}"#
                .into(),
        )
    };
    let see = || openai_calls(&[("run", &run_call("see red.png"))], 10, 10);
    let o = run(
        vec![see(), refused(), see(), openai_text("2x1", 10, 1)],
        AgentSettings { model_call_tries: 1, ..settings() },
        "how big is red.png?",
    )
    .await;
    assert_eq!((o.summary.stop_reason.clone(), o.summary.answer.as_str()), (StopReason::Answered, "2x1"));
    // Asked again at once without the image, though one try was allowed.
    let second = messages(&o.requests[2]);
    let last = second.last().unwrap();
    assert_eq!(
        last["content"],
        "[images from see: red.png] [not shown: this model takes no images; what see printed above is what there is to read]"
    );
    // A later see goes as text alone.
    let third = messages(&o.requests[3]);
    assert!(third.iter().all(|m| m["content"].is_string() || m["content"].is_null()), "{third:?}");
    assert!(third.last().unwrap()["content"].as_str().unwrap().contains("[not shown: this model takes no images"));
    // A refusal that is not about images, or with no image to leave out, stays an error.
    let o = run(vec![refused()], AgentSettings { model_call_tries: 1, ..settings() }, "hi").await;
    assert!(matches!(o.summary.stop_reason, StopReason::Error(ref e) if e.contains("image input is not supported")));
}

#[tokio::test]
async fn rate_limit_then_success() {
    let limited =
        Reply::Status(429, vec![("retry-after", "0.2".into())], r#"{"error":{"message":"slow down"}}"#.into());
    let o = run(vec![limited, openai_text("fine", 1, 1)], settings(), "hi").await;
    assert_eq!((o.summary.stop_reason, o.summary.answer.as_str()), (StopReason::Answered, "fine"));
    assert_eq!(o.requests.len(), 2);
    let retry = o
        .events
        .iter()
        .find_map(|e| if let Event::Retry { wait_ms, error, .. } = e { Some((*wait_ms, error.clone())) } else { None });
    let (wait, error) = retry.expect("a retry event");
    assert_eq!(wait, 200, "Retry-After is honoured");
    assert!(error.contains("HTTP 429") && error.contains("slow down"));
}

#[tokio::test]
async fn a_500_storm_exhausts_the_retries_and_says_why() {
    let storm = Reply::Status(500, vec![], r#"{"error":{"message":"upstream exploded"}}"#.into());
    let o = run(vec![storm.clone(), storm.clone(), storm.clone(), storm], settings(), "hi").await;
    assert_eq!(o.requests.len(), 3, "model_call_tries = 3");
    match &o.summary.stop_reason {
        StopReason::Error(e) => assert!(e.contains("HTTP 500") && e.contains("upstream exploded"), "{e}"),
        other => panic!("{other:?}"),
    }
    assert!(
        matches!(o.trajectory.last(), Some(Event::Done { stop_reason, .. }) if matches!(stop_reason, StopReason::Error(_)))
    );
}

#[tokio::test]
async fn after_a_server_error_a_streamed_call_is_tried_unstreamed() {
    let invalid =
        Reply::Status(500, vec![], r#"{"error":{"message":"Invalid diff: now finding less tool calls!"}}"#.into());
    let o = run(vec![invalid, support::openai_json("fine")], settings(), "hi").await;
    assert_eq!((o.summary.stop_reason, o.summary.answer.as_str()), (StopReason::Answered, "fine"));
    let streamed: Vec<&Value> = o.requests.iter().map(|r| &r.body["stream"]).collect();
    assert_eq!(streamed, [true, false]);
    // llama.cpp sends the same 500 inside a stream it has begun, after its 200.
    let in_stream = Reply::Sse(vec![
        "data: {\"error\":{\"code\":500,\"message\":\"Invalid diff: now finding less tool calls!\",\"type\":\"server_error\"}}\n\n".into(),
    ]);
    let o = run(vec![in_stream, support::openai_json("fine")], settings(), "hi").await;
    assert_eq!((o.summary.stop_reason, o.summary.answer.as_str()), (StopReason::Answered, "fine"));
    let streamed: Vec<&Value> = o.requests.iter().map(|r| &r.body["stream"]).collect();
    assert_eq!(streamed, [true, false]);
}

#[tokio::test]
async fn a_4xx_is_shown_not_retried() {
    let bad = Reply::Status(400, vec![], r#"{"error":{"message":"model 'x' not found"}}"#.into());
    let o = run(vec![bad], settings(), "hi").await;
    assert_eq!(o.requests.len(), 1);
    assert!(matches!(&o.summary.stop_reason, StopReason::Error(e) if e.contains("model 'x' not found")));
}

#[tokio::test]
async fn a_key_the_server_quotes_back_is_hidden() {
    // The terminal, the trajectory and the log all show this error.
    let rejected = Reply::Status(401, vec![], r#"{"error":{"message":"Incorrect API key provided: test-key"}}"#.into());
    let o = run(vec![rejected], settings(), "hi").await;
    let StopReason::Error(error) = &o.summary.stop_reason else { panic!("{:?}", o.summary.stop_reason) };
    assert!(error.contains("Incorrect API key provided: ***") && !error.contains("test-key"), "{error}");
}

#[tokio::test]
async fn a_malformed_stream_chunk_is_retried() {
    let garbled = Reply::Sse(vec!["data: {\"choices\": [{\"delta\": {\"content\": \"ha\"\n\n".into()]);
    let o = run(vec![garbled, openai_text("recovered", 1, 1)], settings(), "hi").await;
    assert_eq!(o.summary.answer, "recovered");
    assert!(
        o.events.iter().any(|e| matches!(e, Event::Retry { error, .. } if error.contains("malformed stream chunk")))
    );
}

#[tokio::test]
async fn bad_arguments_and_unknown_tools_become_messages_for_the_model() {
    // (`bash` with a `command` would go to run: a command line sent to a program's name.)
    let calls = [("run", "{\"command\": \"ls"), ("bash", "{\"script\": \"ls\"}"), ("run", "{\"cmd\": \"ls\"}")];
    let o = run(vec![openai_calls(&calls, 1, 1), openai_text("sorry", 1, 1)], settings(), "hi").await;
    assert_eq!(o.summary.stop_reason, StopReason::Answered);
    let second = messages(&o.requests[1]);
    let results: Vec<&str> =
        second.iter().filter(|m| m["role"] == "tool").map(|m| m["content"].as_str().unwrap()).collect();
    assert!(results[0].contains("not valid JSON"), "{}", results[0]);
    assert!(results[1].contains("unknown tool \"bash\". The tools are: run(command, stdin?)."), "{}", results[1]);
    assert!(results[2].contains("needs a non-empty \"command\""), "{}", results[2]);
}

#[tokio::test]
async fn an_empty_reply_gets_a_nudge() {
    let o = run(vec![openai_text("", 1, 1), openai_json(""), openai_text("done", 1, 1)], settings(), "hi").await;
    // The empty stream is retried unstreamed (llama.cpp quirk), which is the second reply.
    assert_eq!(o.summary.answer, "done");
    assert_eq!(o.requests[1].body["stream"], false);
    let third = messages(&o.requests[2]);
    assert!(third.last().unwrap()["content"].as_str().unwrap().contains("Your last reply was empty"));
}

#[tokio::test]
async fn a_call_written_as_text_in_a_fence_is_run_as_a_call() {
    let fenced = "```json\n{\"name\": \"run\", \"arguments\": {\"command\": \"wc -l notes.txt\"}}\n```";
    let o = run(vec![openai_text(fenced, 1, 1), openai_text("2 lines", 1, 1)], settings(), "count").await;
    assert_eq!((o.summary.stop_reason.clone(), o.summary.answer.as_str()), (StopReason::Answered, "2 lines"));
    let result = o.events.iter().find_map(|e| match e {
        Event::ToolResult { text, exit_code, .. } => Some((text.clone(), *exit_code)),
        _ => None,
    });
    let (text, code) = result.expect("the fenced call ran");
    assert!(text.starts_with("2 notes.txt") && code == 0, "{text}");
    // The next request carries it as a real call and its answer.
    let second = messages(&o.requests[1]);
    let call = &second[second.len() - 2];
    assert_eq!(call["tool_calls"][0]["function"]["name"], "run", "{call}");
    assert_eq!(second.last().unwrap()["role"], "tool");
}

/// The messages' texts of a request, after the system prompt.
fn texts(r: &Recorded) -> Vec<&str> {
    messages(r).iter().skip(1).map(|m| m["content"].as_str().unwrap_or_default()).collect()
}

#[tokio::test]
async fn a_script_shown_before_anything_ran_is_run_as_the_call() {
    let shown = "Use this:\n```bash\nwc -l notes.txt\n```";
    let o = run(vec![openai_text(shown, 1, 1), openai_text("2 lines", 1, 1)], settings(), "count").await;
    assert_eq!(
        (o.summary.stop_reason.clone(), o.summary.answer.as_str(), o.summary.steps),
        (StopReason::Answered, "2 lines", 2)
    );
    let results = tool_results(&o);
    assert!(results.len() == 1 && results[0].starts_with("2 notes.txt"), "{results:?}");
    // The model sees its reply as the call it ran, then the result.
    let second = messages(&o.requests[1]);
    let call = &second[second.len() - 2];
    assert_eq!(call["content"], shown);
    assert_eq!(call["tool_calls"][0]["function"]["arguments"], run_call("wc -l notes.txt"));
    assert_eq!(second.last().unwrap()["role"], "tool");
    // A call refused as an unknown tool ran nothing: the script shown next still runs.
    let o = run(
        vec![
            openai_calls(&[("log", r#"{"file": "notes.txt"}"#)], 1, 1),
            openai_text(shown, 1, 1),
            openai_text("2 lines", 1, 1),
        ],
        settings(),
        "count",
    )
    .await;
    let results = tool_results(&o);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        results[0].starts_with("[error] unknown tool \"log\"") && results[1].starts_with("2 notes.txt"),
        "{results:?}"
    );
    assert_eq!(o.summary.answer, "2 lines");
    // After a call has run, a command in the answer is the answer.
    let o = run(
        vec![openai_calls(&[("run", &run_call("wc -l notes.txt"))], 1, 1), openai_text(shown, 1, 1)],
        settings(),
        "count",
    )
    .await;
    assert_eq!((o.summary.answer.as_str(), o.requests.len()), (shown, 2));
}

#[tokio::test]
async fn a_first_answer_without_looking_is_asked_again_with_a_tool_call_required() {
    // Asked about a file, the model guesses; asked again, it must look.
    let look = AgentSettings { look_first: true, ..settings() };
    let o = run(
        vec![
            openai_text("3", 1, 1),
            openai_calls(&[("run", &run_call("wc -l notes.txt"))], 1, 1),
            openai_text("2", 1, 1),
        ],
        look.clone(),
        "how many lines has notes.txt?",
    )
    .await;
    assert_eq!((o.summary.answer.as_str(), o.summary.steps), ("2", 3));
    assert_eq!(
        (&o.requests[0].body["tool_choice"], &o.requests[1].body["tool_choice"]),
        (&"auto".into(), &"required".into())
    );
    assert_eq!(texts(&o.requests[1]), ["how many lines has notes.txt?"], "the guess is not kept");
    // A server that ignores the requirement and answers again: that answer
    // ends the run, with no third call.
    let o = run(vec![openai_text("Hello!", 1, 1), openai_text("Hello!", 1, 1)], look.clone(), "hi").await;
    assert_eq!((o.summary.answer.as_str(), o.requests.len()), ("Hello!", 2));
    // A server that refuses `required`: the first answer stands, and the refusal is told.
    let refused =
        Reply::Status(400, vec![], r#"{"error":{"message":"tool_choice 'required' is not supported"}}"#.into());
    let o = run(vec![openai_text("3", 1, 1), refused], look.clone(), "how many lines?").await;
    assert_eq!((o.summary.stop_reason.clone(), o.summary.answer.as_str()), (StopReason::Answered, "3"));
    assert!(
        o.events.iter().any(|e| matches!(e, Event::Error { message } if message.contains("the first answer stands") && message.contains("not supported"))),
        "{:?}",
        o.events
    );
    // With one step left, the step is not spent on asking again.
    let o = run(vec![openai_text("3", 1, 1)], AgentSettings { max_steps: 1, ..look }, "how many lines?").await;
    assert_eq!((o.summary.answer.as_str(), o.requests.len()), ("3", 1));
    // On by default; off, the first answer is the answer.
    assert!(AgentSettings::default().look_first);
    let o = run(vec![openai_text("3", 1, 1)], settings(), "how many lines?").await;
    assert_eq!((o.summary.answer.as_str(), o.requests.len()), ("3", 1));
}

/// The `text` events of a run, joined: what `clix ask` prints.
fn shown(o: &Outcome) -> String {
    o.events.iter().filter_map(|e| if let Event::Text { text } = e { Some(text.as_str()) } else { None }).collect()
}

#[tokio::test]
async fn a_guess_asked_again_for_is_never_shown() {
    // `out=$(clix ask "hello there")` held the answer twice when the model
    // ignored `required` (issue 31): the guess was shown before it was
    // asked again. Streamed and unstreamed replies alike.
    let look = AgentSettings { look_first: true, ..settings() };
    let unstreamed = AgentSettings { stream: false, ..look.clone() };
    let refused =
        || Reply::Status(400, vec![], r#"{"error":{"message":"tool_choice 'required' is not supported"}}"#.into());
    // (case, script, settings, the guess, the answer)
    let cases: Vec<(&str, Vec<Reply>, &AgentSettings, &str, &str)> = vec![
        (
            "ignored, streamed",
            vec![openai_text("Hi! How can I help?", 1, 1), openai_text("Hi!", 1, 1)],
            &look,
            "Hi! How can I help?",
            "Hi!",
        ),
        ("ignored, unstreamed", vec![openai_json("refused"), openai_json("Hi!")], &unstreamed, "refused", "Hi!"),
        (
            "looked",
            vec![
                openai_text("3", 1, 1),
                openai_calls(&[("run", &run_call("wc -l notes.txt"))], 1, 1),
                openai_text("2", 1, 1),
            ],
            &look,
            "3",
            "2",
        ),
        // The guess is the answer after all: shown once, after the refusal.
        ("required refused", vec![openai_text("3", 1, 1), refused()], &look, "3", "3"),
    ];
    for (case, script, settings, guess, answer) in cases {
        let o = run(script, settings.clone(), "hello there").await;
        assert_eq!((o.summary.answer.as_str(), shown(&o).as_str()), (answer, answer), "{case}");
        // The guess stays in the trajectory, as the reply it was.
        let first =
            o.trajectory.iter().find_map(|e| if let Event::Response { text, .. } = e { Some(text) } else { None });
        assert_eq!(first.map(String::as_str), Some(guess), "{case}");
    }
}

#[tokio::test]
async fn a_try_that_fails_mid_stream_is_not_shown() {
    // llama.cpp's 500 can come after the text has begun; the retry's text
    // is the one shown.
    let half = Reply::Sse(vec![
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"half an an\"}}]}\n\n".into(),
        "data: {\"error\":{\"code\":500,\"message\":\"Invalid diff\",\"type\":\"server_error\"}}\n\n".into(),
    ]);
    let o = run(vec![half, openai_json("whole answer")], settings(), "hi").await;
    assert_eq!((o.summary.answer.as_str(), shown(&o).as_str()), ("whole answer", "whole answer"));
    assert_eq!(o.requests.len(), 2);
}

#[tokio::test]
async fn an_answer_right_after_a_failed_call_is_asked_again_once_with_a_tool_call_required() {
    let retry = AgentSettings { retry_failed: true, ..settings() };
    let failing = || openai_calls(&[("run", &run_call("wc -l note.txt"))], 1, 1);
    let gave_up = "The file note.txt does not exist; check the name.";
    let o = run(
        vec![
            failing(),
            openai_text(gave_up, 1, 1),
            openai_calls(&[("run", &run_call("wc -l notes.txt"))], 1, 1),
            openai_text("2", 1, 1),
        ],
        retry.clone(),
        "how many lines has notes.txt?",
    )
    .await;
    assert_eq!((o.summary.answer.as_str(), o.summary.steps), ("2", 4));
    let choices: Vec<&Value> = o.requests.iter().map(|r| &r.body["tool_choice"]).collect();
    assert_eq!(choices, [&Value::from("auto"), &"auto".into(), &"required".into(), &"auto".into()]);
    assert!(!texts(&o.requests[2]).contains(&gave_up), "the give-up is not kept: {:?}", texts(&o.requests[2]));
    // Once a run: a second give-up after another failure is the answer.
    let o = run(
        vec![failing(), openai_text(gave_up, 1, 1), failing(), openai_text(gave_up, 1, 1)],
        retry.clone(),
        "how many lines?",
    )
    .await;
    assert_eq!((o.summary.answer.as_str(), o.requests.len()), (gave_up, 4));
    // An answer after a call that worked is the answer.
    let o = run(
        vec![openai_calls(&[("run", &run_call("wc -l notes.txt"))], 1, 1), openai_text("2", 1, 1)],
        retry.clone(),
        "how many lines?",
    )
    .await;
    assert_eq!((o.summary.answer.as_str(), o.requests.len()), ("2", 2));
    // A refused call (an unknown tool) is a failed call too.
    let o = run(
        vec![
            openai_calls(&[("run", &run_call("wc -l notes.txt"))], 1, 1),
            openai_calls(&[("count", r#"{"file": "notes.txt"}"#)], 1, 1),
            openai_text("I cannot count it.", 1, 1),
            openai_text("2", 1, 1),
        ],
        retry.clone(),
        "how many lines?",
    )
    .await;
    assert_eq!(o.requests[3].body["tool_choice"], "required");
    // With one step left, the step is not spent on asking again.
    let o = run(vec![failing(), openai_text(gave_up, 1, 1)], AgentSettings { max_steps: 2, ..retry }, "n?").await;
    assert_eq!((o.summary.answer.as_str(), o.requests.len()), (gave_up, 2));
    assert!(AgentSettings::default().retry_failed, "on by default");
}

#[tokio::test]
async fn a_corrected_command_shown_after_a_failed_call_is_run() {
    let failing = || openai_calls(&[("run", &run_call("wc -l note.txt"))], 1, 1);
    let corrected = "The file is notes.txt. Run:\n```bash\nwc -l notes.txt\n```";
    let o = run(vec![failing(), openai_text(corrected, 1, 1), openai_text("2", 1, 1)], settings(), "count").await;
    assert_eq!((o.summary.answer.as_str(), o.summary.steps), ("2", 3));
    let results = tool_results(&o);
    assert!(results.len() == 2 && results[1].starts_with("2 notes.txt"), "{results:?}");
    // The failed command shown again is not run again: it is the answer.
    let same = "Run:\n```bash\nwc -l note.txt\n```";
    let o = run(vec![failing(), openai_text(same, 1, 1)], settings(), "count").await;
    assert_eq!((o.summary.answer.as_str(), tool_results(&o).len()), (same, 1));
    // Once a run: a second shown fix after another failure is the answer.
    let install = "Maybe:\n```bash\nwc -l notes.md\n```";
    let again = "Then:\n```bash\nwc -l notes.rst\n```";
    let o = run(vec![failing(), openai_text(install, 1, 1), openai_text(again, 1, 1)], settings(), "count").await;
    assert_eq!((o.summary.answer.as_str(), tool_results(&o).len()), (again, 2));
    // A call written as text is not a shown fix: it does not use up the one.
    let written = r#"{"name": "run", "arguments": {"command": "wc -l notes.md"}}"#;
    let o = run(
        vec![failing(), openai_text(written, 1, 1), openai_text(corrected, 1, 1), openai_text("2", 1, 1)],
        settings(),
        "count",
    )
    .await;
    let results = tool_results(&o);
    assert!(results.len() == 3 && results[2].starts_with("2 notes.txt"), "{results:?}");
}

#[tokio::test]
async fn a_temperature_is_sent_only_when_set() {
    let o = run(vec![openai_text("hi", 1, 1)], settings(), "hi").await;
    assert_eq!(o.requests[0].body.get("temperature"), None, "the provider's default holds");
    let o = run(vec![openai_text("hi", 1, 1)], AgentSettings { temperature: 0.0, ..settings() }, "hi").await;
    assert_eq!(o.requests[0].body["temperature"], 0.0);
}

#[tokio::test]
async fn the_same_call_as_the_step_before_gets_a_note() {
    let same = || openai_calls(&[("run", &run_call("cat notes.txt"))], 1, 1);
    let other = openai_calls(&[("run", &run_call("wc -l notes.txt"))], 1, 1);
    let o = run(vec![same(), same(), other, openai_text("done", 1, 1)], settings(), "read").await;
    let results = tool_results(&o);
    assert_eq!(results.len(), 3);
    let noted: Vec<bool> =
        results.iter().map(|t| t.contains("You made this same call in your previous step")).collect();
    assert_eq!(noted, [false, true, false], "{results:?}");
    assert!(results[1].starts_with("alpha\nbeta\n"), "the call still runs: {}", results[1]);
}

fn endless_calls(n: usize) -> Vec<Reply> {
    (0..n).map(|_| openai_calls(&[("run", &run_call("echo again"))], 1000, 10)).collect()
}

#[tokio::test]
async fn the_step_budget_ends_with_a_text_only_call() {
    let mut script = endless_calls(3);
    script.push(openai_text("I ran echo three times; nothing left.", 1, 1));
    let o = run(script, AgentSettings { max_steps: 3, ..settings() }, "loop").await;
    assert_eq!(o.summary.stop_reason, StopReason::MaxSteps);
    assert_eq!(o.summary.answer, "I ran echo three times; nothing left.");
    assert_eq!(o.requests.len(), 4);
    let last = &o.requests[3];
    assert_eq!(last.body["tool_choice"], "none");
    assert!(messages(last).last().unwrap()["content"].as_str().unwrap().contains("used up the step budget"));
    assert!(
        matches!(o.trajectory.last(), Some(Event::Done { stop_reason, .. }) if *stop_reason == StopReason::MaxSteps)
    );
}

#[tokio::test]
async fn the_token_budget_ends_the_run() {
    let o = run(
        endless_calls(2).into_iter().chain([openai_text("stopped", 1, 1)]).collect(),
        AgentSettings { max_total_tokens: 1500, ..settings() },
        "loop",
    )
    .await;
    assert_eq!(o.summary.stop_reason, StopReason::MaxTokens);
    assert_eq!(o.requests.len(), 3);
    assert_eq!(o.requests[2].body["tool_choice"], "none");
    assert_eq!(o.summary.answer, "stopped");
}

#[tokio::test]
async fn the_wall_time_budget_ends_the_run() {
    let slow = openai_calls(&[("run", &run_call("sleep 1.2"))], 1, 1);
    let o = run(
        vec![slow, endless_calls(1).remove(0), openai_text("out of time", 1, 1)],
        AgentSettings { max_wall_secs: 1, ..settings() },
        "t",
    )
    .await;
    assert_eq!(o.summary.stop_reason, StopReason::WallTime);
    assert_eq!(o.requests.len(), 2);
    assert_eq!(o.requests[1].body["tool_choice"], "none");
}

#[tokio::test]
async fn a_slow_model_call_times_out_and_is_retried() {
    // The limit must also let the second, prompt reply through on a busy
    // machine: 5 s, against a first reply that never comes in time.
    let slow = Reply::Delay(Duration::from_secs(600), Box::new(openai_text("late", 1, 1)));
    let o =
        run(vec![slow, openai_text("on time", 1, 1)], AgentSettings { model_call_secs: 5, ..settings() }, "t").await;
    assert_eq!(o.summary.answer, "on time");
    assert!(
        o.events.iter().any(|e| matches!(e, Event::Retry { error, .. } if error.contains("did not answer within 5s")))
    );
}

#[tokio::test]
async fn old_turns_are_summarized_near_the_window() {
    let mut script = Vec::new();
    for i in 0..4 {
        script.push(openai_calls(&[("run", &run_call(&format!("seq 1 {}", 100 + i)))], 10, 1));
    }
    script.push(openai_text("finished", 1, 1));
    let small =
        AgentSettings { context_window: 400, compact_at: 0.5, keep_last_messages: 2, max_steps: 10, ..settings() };
    let server = support::start_with_summarizer(script, "SUMMARY: ran seq four times").await;
    let o = run_on(&server, small, "count").await;
    let compacted = o.events.iter().find_map(|e| {
        if let Event::Compacted { summary, messages_removed, .. } = e {
            Some((summary.clone(), *messages_removed))
        } else {
            None
        }
    });
    let (summary, removed) = compacted.expect("compaction happened");
    assert_eq!(summary, "SUMMARY: ran seq four times");
    assert!(removed >= 2);
    let last = messages(o.requests.last().unwrap());
    assert_eq!(last[0]["role"], "system");
    assert_eq!(last[1]["content"], "count", "the task is kept");
    assert!(
        last.iter()
            .any(|m| m["content"].as_str().is_some_and(|c| c.starts_with("[summary of earlier steps]\nSUMMARY")))
    );
    assert_eq!(o.summary.answer, "finished");
}

#[tokio::test]
async fn the_reply_cache_answers_identical_requests_without_a_call() {
    let data = tempfile::tempdir().unwrap();
    let script = vec![openai_calls(&[("run", &run_call("echo cached"))], 5, 5), openai_text("done once", 5, 5)];
    let server = start(script).await;
    let mut answers = Vec::new();
    let ws = tempfile::tempdir().unwrap();
    for _ in 0..2 {
        let mut engine = engine(ws.path()).await;
        let provider = provider(ProviderKind::OpenAi, format!("{}/v1", server.url), None, "scripted", true);
        let cache = clix_agent::ReplyCache::open(&data.path().join("cache.sqlite")).unwrap();
        let mut agent = Agent::new(&mut engine, provider, settings(), None).with_cache(cache);
        answers.push(agent.run("same task", &mut |_| {}).await.answer);
    }
    assert_eq!(answers, ["done once", "done once"]);
    assert_eq!(server.requests().len(), 2, "the second run came from the cache, footer durations aside");
}

const SETTINGS_KEY: &str = "sk-settings-canary-71c3";
const PROVIDER_KEY: &str = "sk-provider-canary-0d9e";

/// The conversation of each model call as the trajectory tells it: the last
/// `context`'s system prompt and messages, then every `request`'s `added`.
fn conversations(trajectory: &[Event]) -> Vec<(String, Vec<clix_agent::Message>)> {
    let mut current: Option<(String, Vec<clix_agent::Message>)> = None;
    let mut calls = Vec::new();
    for e in trajectory {
        match e {
            Event::Context { system, messages, .. } => current = Some((system.clone(), messages.clone())),
            Event::Request { added, .. } => {
                let (system, messages) = current.as_mut().expect("a context before the first request");
                messages.extend(added.iter().cloned());
                calls.push((system.clone(), messages.clone()));
            }
            _ => {}
        }
    }
    calls
}

/// `text` as the trajectory would show it.
fn redacted(text: &str) -> String {
    text.replace(SETTINGS_KEY, "***").replace(PROVIDER_KEY, "***")
}

#[tokio::test]
async fn the_trajectory_holds_what_the_model_was_given_and_no_secret() {
    let mut script = vec![openai_calls(&[("run", &run_call("cat secret.txt"))], 10, 1)];
    for i in 0..4 {
        script.push(openai_calls(&[("run", &run_call(&format!("seq 1 {}", 100 + i)))], 10, 1));
    }
    script.push(openai_text(&format!("done; the key was {PROVIDER_KEY}"), 1, 1));
    let server = support::start_with_summarizer(script, "SUMMARY: read secret.txt, ran seq four times").await;
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("secret.txt"), format!("{SETTINGS_KEY}\n{PROVIDER_KEY}\n")).unwrap();
    let runs = ws.path().join(".runs");
    let mut engine = engine(ws.path()).await;
    let provider = provider(ProviderKind::OpenAi, format!("{}/v1", server.url), Some(PROVIDER_KEY), "scripted", true);
    // Small enough a window that the seq outputs force a compaction.
    let settings = AgentSettings {
        api_key: SETTINGS_KEY.into(),
        context_window: 400,
        compact_at: 0.5,
        keep_last_messages: 2,
        max_steps: 10,
        ..settings()
    };
    let trajectory = Trajectory::create(&runs).unwrap();
    let (id, path) = (trajectory.id.clone(), trajectory.path.clone());
    let mut agent = Agent::new(&mut engine, provider, settings, Some(trajectory));
    let summary = agent.run("read secret.txt, then count", &mut |_| {}).await;
    assert_eq!(summary.stop_reason, StopReason::Answered);

    let file = std::fs::read_to_string(&path).unwrap();
    for key in [SETTINGS_KEY, PROVIDER_KEY] {
        assert!(!file.contains(key), "{key} is in the trajectory:\n{file}");
    }
    let events: Vec<Event> = read_run(&runs, &id).unwrap().into_iter().map(|r| r.event).collect();
    assert_eq!(events.len(), file.lines().count(), "every line reads back");

    // Once when the task begins, again when compaction replaced old turns.
    let contexts: Vec<&Vec<clix_agent::Message>> = events
        .iter()
        .filter_map(|e| if let Event::Context { messages, .. } = e { Some(messages) } else { None })
        .collect();
    let compactions = events.iter().filter(|e| matches!(e, Event::Compacted { .. })).count();
    assert!(compactions >= 1, "the small window forced a compaction: {events:#?}");
    assert_eq!(contexts.len(), 1 + compactions, "{events:#?}");
    assert_eq!(contexts[0].len(), 1, "the task alone");
    assert_eq!(contexts[0][0].text, "read secret.txt, then count");
    assert!(
        contexts[1].iter().any(|m| m.text.starts_with("[summary of earlier steps]\nSUMMARY")),
        "the second context is the compacted conversation: {:#?}",
        contexts[1]
    );
    for (i, e) in events.iter().enumerate() {
        if matches!(e, Event::Compacted { .. }) {
            assert!(matches!(events[i + 1], Event::Context { .. }), "recorded right after each compaction");
        }
    }

    // The tool as the model was told about it.
    let first = &loop_requests(&server)[0];
    let Some(Event::Context { system, tools, .. }) = events.iter().find(|e| matches!(e, Event::Context { .. })) else {
        unreachable!()
    };
    assert_eq!(tools.len(), 1);
    let sent = &first.body["tools"][0]["function"];
    assert_eq!(tools[0].name, sent["name"].as_str().unwrap());
    assert_eq!(tools[0].description, sent["description"].as_str().unwrap());
    assert_eq!(tools[0].parameters, sent["parameters"]);
    assert_eq!(system, messages(first)[0]["content"].as_str().unwrap());

    // Every model call's conversation, rebuilt from the file, is the one sent.
    let sent = loop_requests(&server);
    let rebuilt = conversations(&events);
    assert_eq!(rebuilt.len(), sent.len(), "one request record per model call");
    for (i, ((system, conversation), request)) in rebuilt.iter().zip(&sent).enumerate() {
        let wire = messages(request);
        assert_eq!(wire[0]["content"].as_str().unwrap(), system, "call {i}");
        assert_eq!(wire.len(), conversation.len() + 1, "call {i}: {conversation:#?}");
        for (m, w) in conversation.iter().zip(&wire[1..]) {
            let role = serde_json::to_value(m.role).unwrap();
            assert_eq!(role, w["role"], "call {i}");
            assert_eq!(m.text, redacted(w["content"].as_str().unwrap_or_default()), "call {i}");
        }
    }
    let tool_results: Vec<&str> =
        rebuilt[1].1.iter().filter(|m| m.tool_call_id.is_some()).map(|m| m.text.as_str()).collect();
    assert!(tool_results[0].starts_with("***\n***\n[exit:0"), "the keys read from a file are hidden: {tool_results:?}");
}

/// The requests of the loop itself (not the summarizer's).
fn loop_requests(server: &Server) -> Vec<Recorded> {
    server
        .requests()
        .into_iter()
        .filter(|r| !messages(r)[0]["content"].as_str().unwrap_or_default().starts_with("You summarize"))
        .collect()
}

/// An interrupt that lands while the model is thinking (no command runs)
/// ends that task, and only that task: the next task's first command runs.
#[tokio::test]
async fn an_interrupt_during_a_model_call_does_not_cancel_the_next_task() {
    let server = start(vec![
        Reply::Delay(Duration::from_secs(30), Box::new(openai_text("too late", 10, 2))),
        openai_calls(&[("run", &run_call("echo next-task-ran"))], 100, 10),
        openai_text("done", 10, 2),
    ])
    .await;
    let ws = tempfile::tempdir().unwrap();
    let mut engine = engine(ws.path()).await;
    let provider = provider(ProviderKind::OpenAi, format!("{}/v1", server.url), Some("k"), "scripted", true);
    let mut agent = Agent::new(&mut engine, provider, settings(), None);
    let interrupt = agent.interrupt_handle();
    let requests = std::sync::Arc::clone(&server.requests);
    tokio::spawn(async move {
        // Lands while the model is thinking: once the server has the request.
        while requests.lock().unwrap().is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        interrupt.interrupt();
    });
    let first = agent.run("think slowly", &mut |_| {}).await;
    assert_eq!(first.stop_reason, StopReason::Interrupted);

    let mut results = Vec::new();
    let second = agent
        .run("run a command", &mut |e| {
            if let Event::ToolResult { text, .. } = e {
                results.push(text.clone());
            }
        })
        .await;
    assert_eq!(second.stop_reason, StopReason::Answered, "{second:?}");
    assert!(results.iter().any(|r| r.contains("next-task-ran")), "the first command was cancelled: {results:?}");
}
