//! The agent: ask the model, run its tool calls, answer, until it answers
//! without a tool call or a budget runs out.
//!
//! [`Agent::run`] reads as its steps: begin (the task, with what memory
//! recalls), then steps until a stop (each: compact if needed, call the
//! model, run its calls), a last text-only call when a budget ended it, and
//! the end. Each part that is more than a few lines has its own module:
//! `model_call` (time limit, retries, reply cache, interrupt), `tool_calls`
//! (a reply's calls through the tools), `text_calls` (a call the model
//! wrote as text), `compaction` (staying inside the
//! context window), `session_summary` (what memory keeps of a session)
//! and `stop` (why a run ended, as every file that says so writes it).

mod compaction;
mod model_call;
mod session_summary;
mod text_calls;

use crate::stop::{RunSummary, StopReason};
pub use session_summary::SummaryError;
pub use text_calls::unknown_tool_text;
pub(crate) mod tool_calls;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use clix_common::Secret;
use clix_engine::{CancelHandle, Engine};
use tokio::sync::Notify;

use crate::cache::ReplyCache;
use crate::events::Event;
use crate::memory::AgentMemory;
use crate::message::{Message, Role, SYSTEM_JOIN, ToolCall, ToolSpec, split_system};
use crate::prompt::SystemPrompt;
use crate::provider::{ChatResponse, Provider, ToolChoice, Usage};
use crate::settings::AgentSettings;
use crate::tools::Tools;
use crate::trajectory::Trajectory;

/// A kept reply's text to the caller ([`Event::Text`], not recorded), after
/// its model call: shown only once the step knows the reply stays in the
/// conversation.
fn show_text(text: &str, on_event: &mut dyn FnMut(&Event)) {
    if !text.is_empty() {
        on_event(&Event::Text { text: text.to_string() });
    }
}

/// Stops a run from another task: the model call or command in flight ends
/// at once, the trajectory is kept.
#[derive(Clone)]
pub struct Interrupt {
    flag: Arc<AtomicBool>,
    notify: Arc<Notify>,
    /// Ends the tools' call in flight, when they can be cancelled.
    tools: Option<CancelHandle>,
}

impl Interrupt {
    /// Stops the run: the model call or command in flight ends, no new step starts.
    pub fn interrupt(&self) {
        self.flag.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
        if let Some(tools) = &self.tools {
            tools.cancel();
        }
    }

    fn is_set(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// A new task starts uninterrupted: an interrupt that came while no
    /// command ran (during a model call) must not cancel the next task's
    /// first command, since the engine's cancel waits for a line.
    fn clear(&self) {
        self.flag.store(false, Ordering::SeqCst);
        if let Some(tools) = &self.tools {
            tools.clear();
        }
    }

    async fn wait(&self) {
        let notified = self.notify.notified();
        if !self.is_set() {
            notified.await;
        }
    }
}

/// What a run has used and produced so far.
#[derive(Default)]
struct Progress {
    steps: u32,
    usage: Usage,
    answer: String,
    /// The last call's input tokens as the provider counted them: the
    /// conversation's size, which compaction trusts over its own estimate.
    last_input_tokens: u64,
    /// A script shown after a failed call was run as the call (once per
    /// run: a model that answers every error with another shown script,
    /// `sudo apt-get install …` after `sudo apt-get install …`, would
    /// otherwise never make a call of its own).
    ran_shown_fix: bool,
    /// The reasons an answer was already asked again for (each once per run).
    asked_again: Vec<AskAgain>,
    /// The answer given without looking, while it is asked again with a
    /// tool call required: it stands if that call fails.
    unlooked_answer: Option<String>,
}

/// Why an answer is asked again with a tool call required.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AskAgain {
    /// Given before any call ran (`agent.look_first`).
    Unlooked,
    /// Given right after a call that failed (`agent.retry_failed`).
    AfterFailure,
}

/// One conversation: the tools (the engine session's `run`, unless the
/// eval harness gives others), the provider and the history. `run` may be
/// called again for the next task (`clix chat`).
pub struct Agent<'e, T: Tools = Engine> {
    engine: &'e mut T,
    provider: Provider,
    settings: AgentSettings,
    messages: Vec<Message>,
    tools: Vec<ToolSpec>,
    trajectory: Option<Trajectory>,
    /// How many of `messages` the trajectory holds (up to its last
    /// `context` or `request` record): the next `request` records the rest.
    recorded: usize,
    interrupt: Interrupt,
    cache: Option<ReplyCache>,
    memory: Option<AgentMemory>,
    /// A run of this session reached the model and ended normally (there
    /// is something to summarize).
    worked: bool,
    /// The calls of the last step, to notice the same call made again.
    last_calls: Vec<(String, serde_json::Value)>,
    /// A call of this conversation reached the tools (one refused as an
    /// unknown tool or for bad arguments did not).
    ran_a_call: bool,
    /// The command of the conversation's last call, when that call failed
    /// (a non-zero exit, a failed pipeline stage that its exit code hides,
    /// or refused: then its raw arguments).
    last_failed_call: Option<String>,
    /// The model refused images: `see` results go as text alone.
    images_refused: bool,
}

impl<'e, T: Tools> Agent<'e, T> {
    /// An agent acting through `engine` (for clix, the engine's session:
    /// its workspace, cwd and variables), asking `provider`, recording
    /// every event in `trajectory` when given.
    pub fn new(engine: &'e mut T, provider: Provider, settings: AgentSettings, trajectory: Option<Trajectory>) -> Self {
        Self::new_with_prompt(engine, provider, settings, trajectory, &SystemPrompt::default())
    }

    /// [`Agent::new`] whose system prompt starts with `prompt` (a person's
    /// template, the project's notes) instead of the built-in text alone.
    pub fn new_with_prompt(
        engine: &'e mut T,
        provider: Provider,
        settings: AgentSettings,
        trajectory: Option<Trajectory>,
        prompt: &SystemPrompt,
    ) -> Self {
        let tools = engine.specs();
        let system = prompt.render(&engine.workspace().display().to_string(), &engine.guidance());
        let interrupt = Interrupt { flag: Arc::default(), notify: Arc::default(), tools: engine.cancel_handle() };
        let mut trajectory = trajectory;
        if let Some(t) = &mut trajectory {
            // The keys the process's secret store does not hold (a config
            // file's, a caller's) are hidden from the file by value.
            t.hide(settings.api_key.expose());
            t.hide(provider.api_key().map(Secret::expose).unwrap_or_default());
        }
        Agent {
            engine,
            provider,
            settings,
            messages: vec![Message::new(Role::System, system)],
            tools,
            trajectory,
            recorded: 0,
            interrupt,
            cache: None,
            memory: None,
            worked: false,
            last_calls: Vec::new(),
            ran_a_call: false,
            last_failed_call: None,
            images_refused: false,
        }
    }

    /// Continues an earlier conversation (`clix ask --continue`): `messages`
    /// follow this agent's own system prompt, as a resumed run's file
    /// rebuilt them ([`crate::trajectory::resumable`]). The next task is
    /// asked after them.
    pub fn with_conversation(mut self, messages: Vec<Message>) -> Self {
        self.set_conversation(messages);
        self
    }

    /// The conversation after the system prompt replaced by `messages`
    /// (a chat going back to an earlier step, `/rewind`).
    pub fn set_conversation(&mut self, messages: Vec<Message>) {
        // As a call reaching the tools sets it (tool_calls.rs): the model has looked before.
        self.ran_a_call =
            messages.iter().flat_map(|m| &m.tool_calls).any(|call| self.tools.iter().any(|t| t.name == call.name));
        // This agent's system prompt stays: its stable part and the notes
        // added for this session (memory's facts).
        let system = self.messages.iter().take_while(|m| m.role == Role::System).count();
        self.messages.truncate(system);
        self.messages.extend(messages.into_iter().filter(|m| m.role != Role::System));
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
        if let Some(t) = &mut self.trajectory {
            t.hide(memory.api_key());
        }
        self.memory = Some(memory);
        self
    }

    /// A handle that stops the current run from another task (Ctrl-C).
    pub fn interrupt_handle(&self) -> Interrupt {
        self.interrupt.clone()
    }

    /// The model the next calls ask.
    pub fn model(&self) -> &str {
        &self.provider.model
    }

    /// Asks `model` from the next call on, at the same provider (chat's `/model`).
    pub fn set_model(&mut self, model: &str) {
        self.provider.model = model.to_string();
    }

    /// What `usage` cost at the prices set for the current model, if it has some.
    pub fn cost_of(&self, usage: &crate::Usage) -> Option<f64> {
        self.settings.cost(&self.provider.model, usage)
    }

    /// The currency its prices are in (`agent.currency`).
    pub fn currency(&self) -> &str {
        &self.settings.currency
    }

    /// The tools the agent acts through (a chat switching the engine's mode).
    pub fn tools_mut(&mut self) -> &mut T {
        self.engine
    }

    /// This run's id (its trajectory's), when it keeps one.
    pub fn run_id(&self) -> Option<&str> {
        self.trajectory.as_ref().map(|t| t.id.as_str())
    }

    /// The conversation so far.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The system prompt and tool definitions a model call would send now,
    /// as the provider's request body has them (`clix ask --show-prompt`):
    /// `{"system", "tools"}`.
    pub fn shown_prompt(&self) -> serde_json::Value {
        let system: Vec<Message> = self.messages.iter().filter(|m| m.role == Role::System).cloned().collect();
        let request = crate::provider::ChatRequest {
            messages: &system,
            tools: &self.tools,
            tool_choice: ToolChoice::Auto,
            max_output_tokens: self.settings.max_output_tokens,
        };
        self.provider.shown_prompt(&request)
    }

    /// Adds a note to the system prompt (memory facts, an eval task's own
    /// instructions): a system message of its own after the stable prompt
    /// and the notes before it, so providers send the stable part first and
    /// a prompt cache keeps it across sessions whose notes differ.
    pub fn add_system_note(&mut self, note: &str) {
        if note.is_empty() {
            return;
        }
        let at = self.messages.iter().take_while(|m| m.role == Role::System).count();
        self.messages.insert(at, Message::new(Role::System, note));
    }

    /// `event` to the trajectory and to the caller.
    fn emit(&mut self, on_event: &mut dyn FnMut(&Event), event: Event) {
        self.record(&event, on_event);
        on_event(&event);
    }

    /// `event` to the trajectory alone; a failed write is told to the caller.
    fn record(&mut self, event: &Event, on_event: &mut dyn FnMut(&Event)) {
        if let Some(t) = &mut self.trajectory
            && let Err(e) = t.record(event)
        {
            on_event(&Event::Error { message: format!("cannot write the trajectory {}: {e}", t.path.display()) });
        }
    }

    /// Records what the model is given, in full ([`Event::Context`]).
    fn record_context(&mut self, on_event: &mut dyn FnMut(&Event)) {
        if self.trajectory.is_none() {
            return;
        }
        let (system, messages) = split_system(&self.messages);
        let context =
            Event::Context { system: system.join(SYSTEM_JOIN), tools: self.tools.clone(), messages: messages.to_vec() };
        self.recorded = self.messages.len();
        self.record(&context, on_event);
    }

    /// Records what the conversation gained after the last model call
    /// ([`Event::Tail`]), so the file holds all of it when the run ends.
    fn record_tail(&mut self, on_event: &mut dyn FnMut(&Event)) {
        if self.trajectory.is_none() || self.recorded >= self.messages.len() {
            return;
        }
        let added = self.messages[self.recorded..].to_vec();
        self.recorded = self.messages.len();
        self.record(&Event::Tail { added }, on_event);
    }

    /// Records a model call: the messages added since the last record
    /// ([`Event::Request`]).
    fn record_request(&mut self, step: u32, tool_choice: ToolChoice, on_event: &mut dyn FnMut(&Event)) {
        if self.trajectory.is_none() {
            return;
        }
        let added = self.messages.get(self.recorded..).unwrap_or_default().to_vec();
        self.recorded = self.messages.len();
        let request = Event::Request { step, tool_choice, max_output_tokens: self.settings.max_output_tokens, added };
        self.record(&request, on_event);
    }

    /// Runs one task to its end. Never panics on a bad model reply: every
    /// problem becomes a tool result the model can act on, or a stop reason.
    pub async fn run(&mut self, task: &str, on_event: &mut dyn FnMut(&Event)) -> RunSummary {
        let started = Instant::now();
        self.interrupt.clear();
        self.begin(task, on_event).await;
        let mut progress = Progress::default();
        let stop = loop {
            if let Some(stop) = self.stop_before_step(&progress, started) {
                break stop;
            }
            if let Some(stop) = self.step(&mut progress, on_event).await {
                break stop;
            }
        };
        if let Some(budget) = stop.budget_note() {
            self.report_where_it_stands(budget, &mut progress, on_event).await;
        }
        self.finish(stop, progress, on_event)
    }

    /// The `start` event, then the task, after the memories recalled for it.
    async fn begin(&mut self, task: &str, on_event: &mut dyn FnMut(&Event)) {
        if let Some(run_id) = self.run_id().map(str::to_string) {
            self.engine.begin_run(&run_id);
        }
        let start = Event::Start {
            run_id: self.run_id().unwrap_or_default().to_string(),
            task: task.to_string(),
            provider: format!("{:?} {}", self.provider.kind(), self.provider.base_url()),
            model: self.provider.model.clone(),
            workspace: self.engine.workspace().display().to_string(),
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
        self.record_context(on_event);
    }

    /// The budget or interrupt that ends the run before another step, if any.
    fn stop_before_step(&self, progress: &Progress, started: Instant) -> Option<StopReason> {
        let budgets = self.settings.budgets();
        if self.interrupt.is_set() {
            Some(StopReason::Interrupted)
        } else if progress.steps >= budgets.max_steps {
            Some(StopReason::MaxSteps)
        } else if progress.usage.total() >= budgets.max_total_tokens {
            Some(StopReason::MaxTokens)
        } else if started.elapsed() >= budgets.wall {
            Some(StopReason::WallTime)
        } else {
            None
        }
    }

    /// One step: compact the context if it is near the window, ask the
    /// model, run the calls of its reply. `Some` when the run ends here.
    async fn step(&mut self, progress: &mut Progress, on_event: &mut dyn FnMut(&Event)) -> Option<StopReason> {
        progress.steps += 1;
        self.compact_if_needed(progress.last_input_tokens, on_event).await;
        let unlooked = progress.unlooked_answer.take();
        let choice = if unlooked.is_some() { ToolChoice::Required } else { ToolChoice::Auto };
        let mut reply = match (self.call_model(progress.steps, choice, on_event).await, unlooked) {
            (Ok(reply), _) => reply,
            (Err(StopReason::Error(e)), Some(answer)) => {
                // A provider may refuse `tool_choice: required`: the answer
                // it gave first is still an answer, and is not lost.
                let message = format!(
                    "asked again with a tool call required, the model call failed ({e}); the first answer stands"
                );
                self.emit(on_event, Event::Error { message });
                show_text(&answer, on_event);
                progress.answer = answer;
                return Some(StopReason::Answered);
            }
            (Err(stop), _) => return Some(stop),
        };
        if reply.tool_calls.is_empty()
            && let Some(call) = self.call_meant_by(&reply.text, progress)
        {
            reply.tool_calls.push(call);
        }
        for call in &mut reply.tool_calls {
            text_calls::route_command_call(call, &self.tools);
        }
        progress.usage.add(reply.usage);
        progress.last_input_tokens = reply.usage.input_tokens;
        let ask_again = if reply.tool_calls.is_empty() { self.ask_again_for(progress, &reply.text) } else { None };
        if ask_again.is_none() {
            // A reply asked again for is a guess the user must not see
            // (`clix ask` printed it before the real answer).
            show_text(&reply.text, on_event);
        }
        self.record_reply(progress.steps, &reply, progress.usage, on_event);
        if !reply.tool_calls.is_empty() {
            self.run_tool_calls(progress.steps, &reply.tool_calls, on_event).await;
            return None;
        }
        if let Some(reason) = ask_again {
            // The reply leaves the conversation: asked again, the model
            // would otherwise repeat its guess. Its `response` record stays.
            self.messages.pop();
            progress.asked_again.push(reason);
            progress.unlooked_answer = Some(reply.text);
            return None;
        }
        if reply.text.trim().is_empty() {
            self.messages.push(Message::new(
                Role::User,
                "Your last reply was empty. Call a tool, or answer in text if you are done.",
            ));
            return None;
        }
        progress.answer = reply.text;
        Some(StopReason::Answered)
    }

    /// The call a reply without one meant: a call written as text, or the
    /// script it showed instead of running, when no call has run in the
    /// conversation yet (a refused one, to a tool that is not offered, does
    /// not count), or, once a run, when the last call failed and the script
    /// is not that call again: after an error, small models show "the
    /// corrected command" and stop (Qwen2.5-Coder-1.5B in 4 of the 11
    /// bashkit-eval attempts it gave up on after an error, docs/eval.md).
    fn call_meant_by(&self, text: &str, progress: &mut Progress) -> Option<ToolCall> {
        if let Some(call) = text_calls::call_in_text(text, &self.tools, progress.steps) {
            tracing::debug!(tool = %call.name, "the model wrote its tool call as text; it is run as a call");
            return Some(call);
        }
        let script = text_calls::shown_script(text)?;
        let fixes_a_failure =
            !progress.ran_shown_fix && self.last_failed_call.as_deref().is_some_and(|failed| failed.trim() != script);
        if self.ran_a_call && !fixes_a_failure {
            return None;
        }
        let call = text_calls::script_call(&script, &self.tools, progress.steps)?;
        progress.ran_shown_fix |= self.ran_a_call;
        tracing::debug!(tool = %call.name, "the model showed a script instead of running it; it is run as a call");
        Some(call)
    }

    /// Why a reply without a tool call is asked again, once for each
    /// reason, with a tool call required (`tool_choice: required`), if it
    /// is: with `agent.look_first`, an answer given before any call has
    /// run in the whole conversation; with `agent.retry_failed`, an answer
    /// given right after a call that failed. Small models guess: asked how
    /// many ERROR lines a log has, Qwen2.5-Coder-1.5B said "2" without
    /// looking (there were 3), and a note asking it to look was ignored in
    /// all 8 attempts it was sent (docs/eval.md); a required call cannot
    /// be. After an error the same model mostly explains the error to the
    /// user and stops (11 of the 34 bashkit-eval runs it failed). The last
    /// step of the budget is not spent on it.
    fn ask_again_for(&self, progress: &Progress, text: &str) -> Option<AskAgain> {
        let room =
            !self.tools.is_empty() && !text.trim().is_empty() && progress.steps < self.settings.budgets().max_steps;
        if !room {
            return None;
        }
        let reason = if !self.ran_a_call {
            self.settings.look_first.then_some(AskAgain::Unlooked)
        } else {
            (self.settings.retry_failed && self.last_failed_call.is_some()).then_some(AskAgain::AfterFailure)
        }?;
        if progress.asked_again.contains(&reason) {
            return None;
        }
        tracing::debug!(?reason, "the model answered without a look at a result; asked again, a tool call required");
        Some(reason)
    }

    /// After a budget stop, one last text-only call so the model reports
    /// where it stands; its text becomes the answer.
    async fn report_where_it_stands(
        &mut self,
        budget: &str,
        progress: &mut Progress,
        on_event: &mut dyn FnMut(&Event),
    ) {
        self.messages.push(Message::new(
            Role::User,
            format!(
                "You have used up {budget}; no more tool calls are possible. Report where you stand: \
                 what is done, what is left, and what you would do next."
            ),
        ));
        let step = progress.steps + 1;
        if let Ok(reply) = self.call_model(step, ToolChoice::None, on_event).await {
            show_text(&reply.text, on_event);
            progress.usage.add(reply.usage);
            self.record_reply(step, &reply, progress.usage, on_event);
            progress.answer = reply.text;
        }
    }

    /// The `error` (when the model failed) and `done` events, and the summary.
    fn finish(&mut self, stop: StopReason, progress: Progress, on_event: &mut dyn FnMut(&Event)) -> RunSummary {
        if let StopReason::Error(message) = &stop {
            self.emit(on_event, Event::Error { message: message.clone() });
        }
        self.worked |= !matches!(stop, StopReason::Error(_) | StopReason::Interrupted);
        self.record_tail(on_event);
        let Progress { steps, usage, answer, .. } = progress;
        let cost = self.settings.cost(&self.provider.model, &usage);
        let done = Event::Done { stop_reason: stop.clone(), answer: answer.clone(), steps, usage, cost };
        self.emit(on_event, done);
        RunSummary { run_id: self.run_id().map(str::to_string), stop_reason: stop, answer, steps, usage, cost }
    }

    /// The reply joins the conversation; `response` and `usage` (the run's
    /// total so far) events.
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
            cache_read_tokens: total.cache_read_tokens,
            cache_write_tokens: total.cache_write_tokens,
        };
        self.emit(on_event, usage);
    }

    /// Memory that failed (a search, an embedder) leaves the run going
    /// without it, but is never silent.
    fn report_memory_problems(&mut self, on_event: &mut dyn FnMut(&Event)) {
        let problems = self.memory.as_mut().map(AgentMemory::take_problems).unwrap_or_default();
        for problem in problems {
            self.emit(on_event, Event::Error { message: format!("memory: {problem}") });
        }
    }
}
