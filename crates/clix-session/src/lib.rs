//! clix's composition root: every session is assembled here, once.
//!
//! A session is an engine (the `run` tool and its capabilities: the OS
//! tier, memory, hub, policy, browser, clip) on one workspace, and for the
//! agent front ends a provider and an agent over it. This crate owns:
//! - [`Settings`], the one layered configuration (`config.toml`, `CLIX_*`,
//!   flags), built from each crate's own section;
//! - [`Session`]: `Paths + Settings + workspace → EngineConfig`, with the
//!   rules that join them (where the audit log, memory store and hub state
//!   live; the memory topic; which hub folders are searched; the person's
//!   `policy.toml`; the embedder's key), and which [`Parts`] a session has;
//! - the person's prompt files (`prompts/system.md`, `prompts/run-tool.md`
//!   in the config folder, each checked against its placeholders: [`Prompt`])
//!   and the environment the provider reads ([`provider_env`]);
//! - the agent's wiring: the provider, the system prompt with the
//!   project's `AGENTS.md` notes, the trajectory, the agent's memory
//!   ([`Session::agent`]), one task run to its [`RunResult`] ([`run_task`]),
//!   and the plan runner ([`PlanRunner`], clix-plan's `AgentRunner`).
//!
//! So a new capability is wired in one place, and `clix run`, `clix ask`,
//! `clix chat`, `clix mcp`, a plan's tasks, eval attempts and the
//! benchmarks all get it the same way.
//!
//! It must not print, read a terminal or parse command lines (the binary
//! does, and hands in what only it has: the terminal's [`Approver`] and a
//! progress callback), nor hold execution, presentation or agent logic.

mod agent;
mod doctor;
mod prompts;
mod session;
mod settings;
mod storage;

pub use agent::{AgentSession, PlanRunner, run_task, runs_dir};
pub use clix_agent::stream::RunResult;
pub use clix_policy::Approver;
pub use doctor::doctor;
pub use prompts::{EnvSource, Prompt, PromptSource, load_prompt, prompt_source, provider_env};
pub use session::{Parts, Session};
pub use settings::{Settings, StorageSettings, default_file, load, storage_location, workspace_topic};
pub use storage::{migrate_storage, show_storage};
