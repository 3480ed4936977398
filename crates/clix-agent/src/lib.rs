//! The agent loop: a model, one `run` tool, and budgets that always end it.
//!
//! This crate owns the LLM providers (OpenAI-compatible Chat Completions and
//! the Anthropic Messages API, both streaming, with retries), the loop that
//! feeds tool calls to a `clix_engine::Engine` (or another [`Tools`], as
//! the eval harness's tool designs) and results back to the model, the budgets (steps, tokens, wall time, per model call), context
//! compaction, images from `see`, the trajectory of every run, memory
//! in the loop (facts in the system prompt, recall per task, a summary at
//! the end of a session), the system prompt's stable part (its text file,
//! `prompts/system.md` or a person's template, and the project's `AGENTS.md`
//! notes, read through the workspace handle), and prompt caching: every
//! request starts with the same bytes as the one before (the tools, the
//! stable system prompt, then the session's notes, then the earlier turns),
//! Anthropic's carry cache breakpoints, and usage splits the input into its
//! cached and uncached parts, priced when the person set prices for the model.
//!
//! It must not execute commands itself (the engine does) nor print to a
//! terminal (callers render the [`Event`]s it emits).

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
mod settings;
pub mod stream;
mod tools;
pub mod trajectory;

pub use agent::{Agent, Interrupt, RunSummary, StopReason, unknown_tool_text};
pub use cache::ReplyCache;
pub use events::Event;
pub use memory::AgentMemory;
pub use message::{Image, Message, Role, ToolCall, ToolSpec};
pub use price::ModelPrice;
pub use prompt::{
    PROJECT_NOTES_CAP, PROJECT_NOTES_FILES, ProjectNotes, SYSTEM_PLACEHOLDERS, SYSTEM_PROMPT, SystemPrompt,
};
pub use provider::{ChatRequest, ChatResponse, Provider, ProviderError, ToolChoice, Usage};
pub use settings::{AgentSettings, Budgets, PROVIDER_VARS, ProviderKind, ResolvedProvider, resolve_provider};
pub use tools::{Invocation, ToolOutcome, Tools, call_arguments};
pub use trajectory::{
    Resumable, Trajectory, find_run, latest_resumable, list_runs, read_run, resumable, resumable_before,
};
