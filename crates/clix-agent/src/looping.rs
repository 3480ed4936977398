//! The loop: ask the model, run its tool calls, answer, until it answers
//! without a tool call or a budget runs out.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use base64::Engine as _;
use clix_engine::{CancelHandle, Engine, ToolFormat, tool_definition};
use serde_json::Value;
use tokio::sync::Notify;

use crate::cache::ReplyCache;
use crate::context::{compactable, estimate_tokens, transcript};
use crate::events::Event;
use crate::memory::AgentMemory;
use crate::message::{Image, Message, Role, ToolCall};
use crate::provider::{ChatRequest, ChatResponse, Provider, ProviderError, RetryPolicy, ToolChoice, Usage};
use crate::settings::AgentSettings;
use crate::trajectory::Trajectory;

/// The only tool.
const TOOL: &str = "run";

/// The most of a session's log sent to be summarized for memory.
const SUMMARY_INPUT_CHARS: usize = 24_000;

/// Why a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// The model answered without a tool call.
    Answered,
    MaxSteps,
    MaxTokens,
    WallTime,
    /// Ctrl-C (or the caller) stopped it.
    Interrupted,
    /// The model could not be reached or kept failing.
    Error(String),
}

impl StopReason {
    fn label(&self) -> String {
        match self {
            StopReason::Answered => "answered".into(),
            StopReason::MaxSteps => "max_steps".into(),
            StopReason::MaxTokens => "max_tokens".into(),
            StopReason::WallTime => "wall_time".into(),
            StopReason::Interrupted => "interrupted".into(),
            StopReason::Error(e) => format!("error: {e}"),
        }
    }

    /// Budget stops end with one last text-only call.
    fn budget_note(&self) -> Option<&'static str> {
        match self {
            StopReason::MaxSteps => Some("the step budget"),
            StopReason::MaxTokens => Some("the token budget"),
            StopReason::WallTime => Some("the time budget"),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSummary {
    pub run_id: Option<String>,
    pub stop_reason: StopReason,
    pub answer: String,
    pub steps: u32,
    pub usage: Usage,
}

/// Stops a run from another task: the model call or command in flight ends
/// at once, the trajectory is kept.
#[derive(Clone)]
pub struct Interrupt {
    flag: Arc<AtomicBool>,
    notify: Arc<Notify>,
    engine: CancelHandle,
}

impl Interrupt {
    pub fn interrupt(&self) {
        self.flag.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
        self.engine.cancel();
    }

    fn is_set(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    async fn wait(&self) {
        let notified = self.notify.notified();
        if !self.is_set() {
            notified.await;
        }
    }
}

/// One conversation: the engine session, the provider and the history.
/// `run` may be called again for the next task (`clix chat`).
pub struct Agent<'e> {
    engine: &'e mut Engine,
    provider: Provider,
    settings: AgentSettings,
    messages: Vec<Message>,
    tool_description: String,
    tool_schema: Value,
    trajectory: Option<Trajectory>,
    interrupt: Interrupt,
    cache: Option<ReplyCache>,
    memory: Option<AgentMemory>,
    /// A run of this session reached the model and ended normally (there
    /// is something to summarize).
    worked: bool,
}

impl<'e> Agent<'e> {
    pub fn new(
        engine: &'e mut Engine,
        provider: Provider,
        settings: AgentSettings,
        trajectory: Option<Trajectory>,
    ) -> Self {
        let def = tool_definition(engine.catalog(), ToolFormat::OpenAi);
        let tool_description = def["function"]["description"].as_str().unwrap_or_default().to_string();
        let tool_schema = def["function"]["parameters"].clone();
        let system = system_prompt(&engine.session().workspace().display().to_string());
        let interrupt = Interrupt { flag: Arc::default(), notify: Arc::default(), engine: engine.cancel_handle() };
        Agent {
            engine,
            provider,
            settings,
            messages: vec![Message::new(Role::System, system)],
            tool_description,
            tool_schema,
            trajectory,
            interrupt,
            cache: None,
            memory: None,
            worked: false,
        }
    }

    /// Answers identical model requests from `cache` (`--cache`).
    pub fn with_cache(mut self, cache: ReplyCache) -> Self {
        self.cache = Some(cache);
        self
    }

    /// Gives the agent a memory: the topic's facts join the system prompt
    /// now; each task gets a recall block; [`Agent::remember`] stores a
    /// summary at the end.
    pub fn with_memory(mut self, mut memory: AgentMemory) -> Self {
        self.add_system_note(&memory.system_note());
        self.memory = Some(memory);
        self
    }

    pub fn interrupt_handle(&self) -> Interrupt {
        self.interrupt.clone()
    }

    pub fn run_id(&self) -> Option<&str> {
        self.trajectory.as_ref().map(|t| t.id.as_str())
    }

    /// The conversation so far.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Adds to the system prompt (memory facts, recall blocks, …).
    pub fn add_system_note(&mut self, note: &str) {
        if let Some(system) = self.messages.first_mut() {
            system.text.push_str("\n\n");
            system.text.push_str(note);
        }
    }

    fn emit(&mut self, on_event: &mut dyn FnMut(&Event), event: Event) {
        if let Some(t) = &mut self.trajectory
            && let Err(e) = t.record(&event)
        {
            on_event(&Event::Error { message: format!("cannot write the trajectory {}: {e}", t.path.display()) });
        }
        on_event(&event);
    }

    /// Runs one task to its end. Never panics on a bad model reply: every
    /// problem becomes a tool result the model can act on, or a stop reason.
    pub async fn run(&mut self, task: &str, on_event: &mut dyn FnMut(&Event)) -> RunSummary {
        let started = Instant::now();
        let budgets = self.settings.budgets();
        self.interrupt.flag.store(false, Ordering::SeqCst);
        let start = Event::Start {
            run_id: self.run_id().unwrap_or_default().to_string(),
            task: task.to_string(),
            provider: format!("{:?} {}", self.provider.kind(), self.provider.base_url()),
            model: self.provider.model.clone(),
            workspace: self.engine.session().workspace().display().to_string(),
        };
        self.emit(on_event, start);
        let recalled = match self.memory.as_mut() {
            Some(memory) => memory.recall(task).await,
            None => None,
        };
        self.report_memory_problems(on_event);
        match recalled {
            Some(r) => {
                self.messages.push(Message::new(Role::User, format!("{}\n\n{task}", r.block)));
                self.emit(on_event, Event::Recall { ids: r.ids, block: r.block });
            }
            None => self.messages.push(Message::new(Role::User, task)),
        }

        let mut usage = Usage::default();
        let mut steps = 0u32;
        let mut answer = String::new();
        let mut last_input_tokens = 0u64;
        let stop = loop {
            if self.interrupt.is_set() {
                break StopReason::Interrupted;
            }
            if steps >= budgets.max_steps {
                break StopReason::MaxSteps;
            }
            if usage.total() >= budgets.max_total_tokens {
                break StopReason::MaxTokens;
            }
            if started.elapsed() >= budgets.wall {
                break StopReason::WallTime;
            }
            steps += 1;
            self.compact_if_needed(last_input_tokens, on_event).await;

            let reply = match self.call_model(ToolChoice::Auto, on_event).await {
                Ok(reply) => reply,
                Err(stop) => break stop,
            };
            usage.input_tokens += reply.usage.input_tokens;
            usage.output_tokens += reply.usage.output_tokens;
            last_input_tokens = reply.usage.input_tokens;
            self.record_reply(steps, &reply, usage, on_event);

            if reply.tool_calls.is_empty() {
                if reply.text.trim().is_empty() {
                    self.messages.push(Message::new(
                        Role::User,
                        "Your last reply was empty. Call the run tool, or answer in text if you are done.",
                    ));
                    continue;
                }
                answer = reply.text;
                break StopReason::Answered;
            }
            self.run_tool_calls(steps, &reply.tool_calls, on_event).await;
        };

        let stop = match stop.budget_note() {
            Some(which) => {
                // One last text-only call so the model reports where it stands.
                self.messages.push(Message::new(
                    Role::User,
                    format!(
                        "You have used up {which}; no more tool calls are possible. Report where you stand: \
                         what is done, what is left, and what you would do next."
                    ),
                ));
                if let Ok(reply) = self.call_model(ToolChoice::None, on_event).await {
                    usage.input_tokens += reply.usage.input_tokens;
                    usage.output_tokens += reply.usage.output_tokens;
                    self.record_reply(steps + 1, &reply, usage, on_event);
                    answer = reply.text;
                }
                stop
            }
            None => stop,
        };
        if let StopReason::Error(message) = &stop {
            self.emit(on_event, Event::Error { message: message.clone() });
        }
        self.worked |= !matches!(stop, StopReason::Error(_) | StopReason::Interrupted);
        let done = Event::Done {
            stop_reason: stop.label(),
            answer: answer.clone(),
            steps,
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
        };
        self.emit(on_event, done);
        RunSummary { run_id: self.run_id().map(str::to_string), stop_reason: stop, answer, steps, usage }
    }

    fn record_reply(&mut self, step: u32, reply: &ChatResponse, total: Usage, on_event: &mut dyn FnMut(&Event)) {
        self.messages.push(Message {
            tool_calls: reply.tool_calls.clone(),
            ..Message::new(Role::Assistant, reply.text.clone())
        });
        let response = Event::Response {
            step,
            text: reply.text.clone(),
            tool_calls: reply.tool_calls.clone(),
            usage: reply.usage,
        };
        self.emit(on_event, response);
        let usage = Event::Usage {
            step,
            input_tokens: total.input_tokens,
            output_tokens: total.output_tokens,
            total_tokens: total.total(),
        };
        self.emit(on_event, usage);
    }

    /// One model call with its time limit, retries and the interrupt.
    async fn call_model(
        &mut self,
        choice: ToolChoice,
        on_event: &mut dyn FnMut(&Event),
    ) -> Result<ChatResponse, StopReason> {
        let policy = RetryPolicy {
            tries: self.settings.model_call_tries.max(1),
            base: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        };
        let limit = self.settings.budgets().model_call;
        let mut attempt = 1;
        loop {
            let request = ChatRequest {
                messages: &self.messages,
                tool: (TOOL, &self.tool_description, &self.tool_schema),
                tool_choice: choice,
                max_output_tokens: self.settings.max_output_tokens,
            };
            let key =
                self.cache.as_ref().map(|_| ReplyCache::key(self.provider.base_url(), &self.provider.model, &request));
            if let (Some(cache), Some(key)) = (&self.cache, &key)
                && let Some(reply) = cache.get(key)
            {
                tracing::debug!(model = %self.provider.model, "reply cache hit: the model is not called");
                if !reply.text.is_empty() {
                    on_event(&Event::Text { text: reply.text.clone() });
                }
                return Ok(reply);
            }
            let mut streamed = Vec::new();
            let result = {
                let mut on_text = |t: &str| streamed.push(t.to_string());
                tokio::select! {
                    r = tokio::time::timeout(limit, self.provider.complete(&request, &mut on_text)) => {
                        r.unwrap_or(Err(ProviderError::Timeout(limit)))
                    }
                    () = self.interrupt.wait() => return Err(StopReason::Interrupted),
                }
            };
            for text in streamed {
                on_event(&Event::Text { text });
            }
            let error = match result {
                Ok(reply) => {
                    if let (Some(cache), Some(key)) = (&self.cache, &key) {
                        cache.put(key, &reply);
                    }
                    return Ok(reply);
                }
                Err(e) => e,
            };
            if !error.is_retryable() || attempt >= policy.tries {
                let why = if error.is_retryable() {
                    "no tries left (agent.model_call_tries)"
                } else {
                    "not worth another try"
                };
                tracing::debug!(attempt, tries = policy.tries, %error, why, "model call failed for good");
                return Err(StopReason::Error(error.to_string()));
            }
            let wait = policy.delay(attempt, &error);
            let retry_after = match &error {
                ProviderError::Http { retry_after: Some(after), .. } => Some(after.as_millis() as u64),
                _ => None,
            };
            tracing::debug!(
                attempt,
                tries = policy.tries,
                wait_ms = wait.as_millis() as u64,
                retry_after_ms = retry_after,
                backoff = if retry_after.is_some() { "the server's Retry-After (capped)" } else { "exponential, full jitter" },
                %error,
                "model call failed; retrying"
            );
            self.emit(on_event, Event::Retry { attempt, wait_ms: wait.as_millis() as u64, error: error.to_string() });
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = self.interrupt.wait() => return Err(StopReason::Interrupted),
            }
            attempt += 1;
        }
    }

    /// Runs every call of one reply, in order, and answers each.
    async fn run_tool_calls(&mut self, step: u32, calls: &[ToolCall], on_event: &mut dyn FnMut(&Event)) {
        let mut images: Vec<(String, Image)> = Vec::new();
        for call in calls {
            if self.interrupt.is_set() {
                self.messages.push(Message::tool_result(&call.id, "[error] interrupted before this call ran", true));
                continue;
            }
            let (command, stdin) = match parse_call(call) {
                Ok(parsed) => parsed,
                Err(message) => {
                    let result = Event::ToolResult {
                        step,
                        id: call.id.clone(),
                        text: message.clone(),
                        exit_code: 2,
                        duration_ms: 0,
                        images: vec![],
                    };
                    self.emit(on_event, result);
                    self.messages.push(Message::tool_result(&call.id, message, true));
                    continue;
                }
            };
            let tool_call =
                Event::ToolCall { step, id: call.id.clone(), command: command.clone(), stdin: stdin.clone() };
            self.emit(on_event, tool_call);
            let out = self.engine.run(&command, stdin.as_deref().map(str::as_bytes)).await;
            let seen: Vec<(String, Image)> = out
                .images
                .iter()
                .map(|i| {
                    let image =
                        Image { mime: i.mime.clone(), data: base64::engine::general_purpose::STANDARD.encode(&i.data) };
                    (i.path.clone(), image)
                })
                .collect();
            let result = Event::ToolResult {
                step,
                id: call.id.clone(),
                text: out.text.clone(),
                exit_code: out.raw.exit_code,
                duration_ms: out.raw.duration.as_millis() as u64,
                images: seen.iter().map(|(_, i)| i.clone()).collect(),
            };
            self.emit(on_event, result);
            self.messages.push(Message::tool_result(&call.id, out.text, out.raw.exit_code != 0));
            images.extend(seen);
        }
        if !images.is_empty() {
            // Tool results cannot carry images everywhere; the next user turn can.
            let names: Vec<&str> = images.iter().map(|(p, _)| p.as_str()).collect();
            let text = format!("[images from see: {}]", names.join(", "));
            self.messages.push(Message {
                images: images.into_iter().map(|(_, i)| i).collect(),
                ..Message::new(Role::User, text)
            });
        }
    }

    /// Ends a session: the model writes a 1–3 sentence summary of it, kept
    /// in memory as kind `summary` in the session's topic. Nothing happens
    /// (`Ok(None)`) without a memory, with summaries off, or when no run
    /// reached a model (none configured, none reachable, interrupted).
    pub async fn remember(&mut self, on_event: &mut dyn FnMut(&Event)) -> Result<Option<i64>, String> {
        if !self.worked || !self.memory.as_ref().is_some_and(AgentMemory::summaries) {
            return Ok(None);
        }
        let log = transcript(&self.messages[1..]);
        // The end of a long session matters most; keep its last part.
        let start = log.len().saturating_sub(SUMMARY_INPUT_CHARS);
        let start = (start..log.len()).find(|i| log.is_char_boundary(*i)).unwrap_or(log.len());
        let request_messages = vec![
            Message::new(Role::System, "You summarize an agent's finished session for its long-term memory."),
            Message::new(
                Role::User,
                format!(
                    "Here is the session's log.\n\n{}\n\nIn 1 to 3 sentences, write what a later session in this \
                     folder would want to know: what was asked, what was done or found (exact names, paths, numbers), \
                     what is left. Plain text, no preamble.",
                    &log[start..]
                ),
            ),
        ];
        let request = ChatRequest {
            messages: &request_messages,
            tool: (TOOL, &self.tool_description, &self.tool_schema),
            tool_choice: ToolChoice::None,
            max_output_tokens: 300,
        };
        let limit = self.settings.budgets().model_call;
        let text = match tokio::time::timeout(limit, self.provider.complete(&request, &mut |_| {})).await {
            Ok(Ok(reply)) => reply.text.split_whitespace().collect::<Vec<_>>().join(" "),
            Ok(Err(e)) => return Err(format!("the model could not summarize the session: {e}")),
            Err(_) => return Err(format!("the model did not summarize the session within {}s", limit.as_secs())),
        };
        if text.is_empty() {
            return Err("the model's summary of the session was empty".into());
        }
        let session = self.run_id().unwrap_or_default().to_string();
        let Some(memory) = self.memory.as_mut() else { return Ok(None) };
        let stored = memory.store_summary(&text, &session).await;
        self.report_memory_problems(on_event);
        let id = stored?;
        self.emit(on_event, Event::Remembered { id, kind: "summary".into(), text });
        Ok(Some(id))
    }

    /// Memory that failed (a search, an embedder) leaves the run going
    /// without it, but is never silent.
    fn report_memory_problems(&mut self, on_event: &mut dyn FnMut(&Event)) {
        let problems = self.memory.as_mut().map(AgentMemory::take_problems).unwrap_or_default();
        for problem in problems {
            self.emit(on_event, Event::Error { message: format!("memory: {problem}") });
        }
    }

    /// Summarizes the oldest turns when the conversation nears the window.
    async fn compact_if_needed(&mut self, last_input_tokens: u64, on_event: &mut dyn FnMut(&Event)) {
        let used = last_input_tokens.max(estimate_tokens(&self.messages));
        let threshold = (self.settings.compact_at * self.settings.context_window as f64) as u64;
        if used < threshold {
            tracing::trace!(used_tokens = used, threshold_tokens = threshold, "context: no compaction needed");
            return;
        }
        let Some(range) = compactable(&self.messages, self.settings.keep_last_messages) else {
            tracing::debug!(
                used_tokens = used,
                threshold_tokens = threshold,
                keep_last_messages = self.settings.keep_last_messages,
                "context: over the threshold, but nothing older than the kept tail to compact"
            );
            return;
        };
        let old = transcript(&self.messages[range.clone()]);
        let request_messages = vec![
            Message::new(Role::System, "You summarize an agent's work log for the agent itself."),
            Message::new(
                Role::User,
                format!(
                    "Summarize these earlier steps in at most 15 lines: commands run, what they showed, files \
                     changed, open questions. Keep exact paths, names and numbers.\n\n{old}"
                ),
            ),
        ];
        let request = ChatRequest {
            messages: &request_messages,
            tool: (TOOL, &self.tool_description, &self.tool_schema),
            tool_choice: ToolChoice::None,
            max_output_tokens: 1024,
        };
        let limit = self.settings.budgets().model_call;
        let (summary, by) = match tokio::time::timeout(limit, self.provider.complete(&request, &mut |_| {})).await {
            Ok(Ok(reply)) if !reply.text.trim().is_empty() => (reply.text, "the model"),
            // Without a model summary, a mechanical one still saves the window.
            _ => (
                old.lines().filter(|l| l.starts_with("assistant called run")).collect::<Vec<_>>().join("\n"),
                "the commands run (the model gave no summary)",
            ),
        };
        let removed = range.len();
        tracing::debug!(
            used_tokens = used,
            threshold_tokens = threshold,
            context_window = self.settings.context_window,
            messages_removed = removed,
            summary_by = by,
            summary_chars = summary.chars().count(),
            "context compacted: the oldest turns replaced by a summary"
        );
        self.messages.splice(range, [Message::new(Role::User, format!("[summary of earlier steps]\n{summary}"))]);
        self.emit(on_event, Event::Compacted { messages_removed: removed, summary });
    }
}

/// The command and stdin of a `run` call, or the error the model gets back.
fn parse_call(call: &ToolCall) -> Result<(String, Option<String>), String> {
    if call.name != TOOL {
        return Err(format!(
            "[error] unknown tool: {:?}. The only tool is run(command, stdin?); call it with {{\"command\": \"ls -la\"}}.",
            call.name
        ));
    }
    let args: Value = lenient_json(if call.arguments.trim().is_empty() { "{}" } else { &call.arguments })
        .map_err(|e| {
            format!(
                "[error] the arguments of your run call are not valid JSON ({e}). Send an object such as {{\"command\": \"ls -la\"}}."
            )
        })?;
    let command = args.get("command").and_then(Value::as_str).map(str::trim).unwrap_or_default();
    if command.is_empty() {
        return Err(
            "[error] run needs a non-empty \"command\" string, e.g. {\"command\": \"cat README.md | head -20\"}."
                .into(),
        );
    }
    let stdin = args.get("stdin").and_then(Value::as_str).map(str::to_string);
    Ok((command.to_string(), stdin))
}

/// Parses tool-call arguments, forgiving one common slip of small models:
/// raw control characters (a literal newline or tab) inside a JSON string,
/// which are escaped before a second try. Anything else stays an error.
fn lenient_json(text: &str) -> Result<Value, serde_json::Error> {
    let strict = serde_json::from_str(text);
    if strict.is_ok() || !text.chars().any(char::is_control) {
        return strict;
    }
    let mut fixed = String::with_capacity(text.len() + 8);
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        match c {
            _ if escaped => {
                escaped = false;
                fixed.push(c);
            }
            '\\' if in_string => {
                escaped = true;
                fixed.push(c);
            }
            '"' => {
                in_string = !in_string;
                fixed.push(c);
            }
            '\n' if in_string => fixed.push_str("\\n"),
            '\r' if in_string => fixed.push_str("\\r"),
            '\t' if in_string => fixed.push_str("\\t"),
            c if in_string && c.is_control() => fixed.push_str(&format!("\\u{:04x}", c as u32)),
            c => fixed.push(c),
        }
    }
    serde_json::from_str(&fixed).or(strict)
}

fn system_prompt(workspace: &str) -> String {
    format!(
        "You are a capable software agent working in the folder {workspace}. You act through one tool, \
         run(command, stdin?), which runs a bash command line there and shows its output, ending with \
         [exit:N | duration]. Compose commands with pipes and && as you would in a terminal. Start with \
         `help` if you are unsure what exists; long outputs are saved to a file you can grep. When the \
         task is done, answer in plain text without calling the tool."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_control_characters_in_strings_are_forgiven() {
        for (raw, command) in [
            ("{\"command\": \"cat a\nwc -l a\"}", "cat a\nwc -l a"),
            ("{\"command\": \"printf 'x\ty'\"}", "printf 'x\ty'"),
            ("{\"command\":\n \"ls\"}", "ls"),
            ("{\"command\": \"echo \\\"a\nb\\\"\"}", "echo \"a\nb\""),
        ] {
            let (got, _) = parse_call(&call("run", raw)).unwrap_or_else(|e| panic!("{raw:?}: {e}"));
            assert_eq!(got, command, "{raw:?}");
        }
        let err = parse_call(&call("run", "{\"command\": \"ls\n")).unwrap_err();
        assert!(err.contains("not valid JSON"), "still an error when the JSON is broken otherwise: {err}");
    }

    fn call(name: &str, args: &str) -> ToolCall {
        ToolCall { id: "c1".into(), name: name.into(), arguments: args.into() }
    }

    #[test]
    fn parse_call_table() {
        assert_eq!(parse_call(&call("run", r#"{"command":"ls"}"#)), Ok(("ls".into(), None)));
        assert_eq!(
            parse_call(&call("run", r#"{"command":"wc -l","stdin":"a\n"}"#)),
            Ok(("wc -l".into(), Some("a\n".into())))
        );
        let cases = [
            (call("bash", r#"{"command":"ls"}"#), "unknown tool: \"bash\""),
            (call("run", r#"{"command": "ls"#), "not valid JSON"),
            (call("run", r#"{"cmd":"ls"}"#), "needs a non-empty \"command\""),
            (call("run", ""), "needs a non-empty \"command\""),
        ];
        for (c, needle) in cases {
            let err = parse_call(&c).unwrap_err();
            assert!(err.contains(needle), "{err}");
        }
    }
}
