//! The agent loop: a model, one `run` tool, and budgets that always end it.
//!
//! This crate owns:
//!
//! - the providers: OpenAI-compatible Chat Completions and the Anthropic
//!   Messages API, both streaming, with retries (backoff, `Retry-After`); the
//!   endpoint's `/v1` added to a bare OpenAI-compatible address and removed
//!   from an Anthropic one; a failure explained where the error alone does not
//!   say what to do (a refused key names the variable it came from, a 404 lists
//!   the server's models, a silent endpoint names where its address was set, a
//!   refused connection to the unconfigured default says how to configure one);
//! - the loop that feeds tool calls to a `clix_engine::Engine` (or another
//!   [`Tools`], as the eval harness's tool designs) and results back to the
//!   model: several calls per reply, a malformed call answered as a tool error,
//!   a call written as text (a JSON fence, a `<tool_call>` tag) run as the
//!   call, the same call twice in a row answered with a note, a guess before
//!   any call or a give-up right after a failed one asked again with a tool
//!   call required;
//! - the budgets (steps, tokens, wall time, per model call; the last call made
//!   with `tool_choice: none` so a run ends with an answer), the stop reason
//!   ([`StopReason`]), interrupts, and context compaction;
//! - images from `see`, attached to the next model call (and left out, said so,
//!   for a model that refuses them);
//! - the trajectory of every run (`<data>/runs/<id>.jsonl`: every event, and
//!   what the model was given, a `context` record when a task begins and after
//!   each compaction and a `request` record per model call, secrets scrubbed),
//!   and the opt-in reply cache (`--cache`, SQLite, for debugging and tests);
//!   a run as people read it ([`replay`]: its tokens and cost in a line, its
//!   trajectory, or a plan's, as one self-contained HTML page);
//! - memory in the loop (`memory.rs`, on `clix-memory` directly: the topic's
//!   facts in the system prompt, recall per task, a summary at the end of a
//!   session; the session's topic and `global`, nothing else);
//! - the system prompt's stable part (`SystemPrompt`: its text file,
//!   `prompts/system.md` or a person's template, then the project's notes,
//!   `ProjectNotes`: in each folder from the workspace's root down to the
//!   working folder, the first of `agent.project_notes_files`, `AGENTS.md`,
//!   `CLAUDE.md` or `GEMINI.md`, read through the workspace handle and capped
//!   together);
//! - prompt caching: every request starts with the same bytes as the one before
//!   (the tools, the stable system prompt, then the session's notes, then the
//!   earlier turns), Anthropic's carry cache breakpoints, and usage splits the
//!   input into its cached and uncached parts, priced when the person set
//!   prices for the model (`agent.prices`, `agent.currency`);
//! - [`stream`]: the versioned event stream between agents (`{v, type, content,
//!   metadata}`, a `result` last; `clix ask --jsonl` writes it, `clix ask
//!   --input jsonl` and the plan runner read it, refusing a failed or
//!   unfinished one), documented in `docs/events.md` with a JSON Schema.
//!
//! The `fuzzing` feature adds the `fuzzing` module: entry points for the fuzz
//! targets in `fuzz/` (`docs/reliability.md`), not an API.
//!
//! It must not execute commands itself (the engine, or whatever implements
//! [`Tools`], does) nor print to a terminal (callers render the [`Event`]s it
//! emits).

mod agent;
mod cache;
mod context;
mod events;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod memory;
mod message;
mod price;
mod prompt;
mod provider;
pub mod replay;
mod settings;
mod stop;
pub mod stream;
mod tools;
pub mod trajectory;

pub use agent::{Agent, Interrupt, SummaryError, unknown_tool_text};
pub use cache::{CacheError, ReplyCache};
pub use events::Event;
pub use memory::AgentMemory;
pub use message::{Image, Message, Role, ToolCall, ToolSpec};
pub use price::ModelPrice;
pub use prompt::{
    PROJECT_NOTES_CAP, PROJECT_NOTES_FILES, ProjectNotes, SYSTEM_PLACEHOLDERS, SYSTEM_PROMPT, SystemPrompt,
};
pub use provider::{ChatRequest, ChatResponse, Provider, ProviderError, ToolChoice, Usage};
pub use settings::{
    AgentSettings, Budgets, PROVIDER_VARS, ProviderKind, ResolvedProvider, UnknownProvider, resolve_provider,
};
pub use stop::{RunSummary, StopReason};
pub use tools::{Invocation, ToolOutcome, Tools, call_arguments};
pub use trajectory::{
    Resumable, RunError, Trajectory, find_run, latest_resumable, list_runs, read_run, resumable, resumable_before,
};
