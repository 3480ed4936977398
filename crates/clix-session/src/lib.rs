//! clix's composition root: every session is assembled here, once.
//!
//! A session is an engine (the `run` tool and its capabilities: the OS tier,
//! memory, hub, policy, browser, clip, skills, MCP servers) on one workspace,
//! and for the agent front ends a provider and an agent over it. This crate
//! owns:
//!
//! - [`Settings`], the one layered configuration (`config.toml`, `CLIX_*`,
//!   flags, through `clix-config`), built from each crate's own section, with
//!   `[storage] url`, where shared state lives (`storage_location`; `clix
//!   storage show|migrate`);
//! - [`Session`]: `Paths + Settings + workspace → EngineConfig`, with the rules
//!   that join them (where the audit log, memory store, hub state, checkpoints
//!   and MCP tool lists live; the memory topic; which hub folders are searched;
//!   the person's `policy.toml`; the embedder's key; the variables MCP servers
//!   are given; each capability that owns its commands, as its configuration in
//!   `EngineConfig::capabilities`), and which [`Parts`] a session has (eval and
//!   the benchmarks leave some out). `Session::for_person` reads this process's
//!   secrets and `CLIX_HUB_PATH`; `Session::isolated` (eval attempts,
//!   benchmarks) reads nothing of the process that runs it, so its results do
//!   not depend on who runs them;
//! - the person's prompt files (`prompts/system.md`, `prompts/run-tool.md` in
//!   the config folder, each checked against its placeholders: [`Prompt`]; an
//!   isolated session keeps the built-in text) and the environment the provider
//!   reads ([`provider_env`]);
//! - the agent's wiring: the provider, the system prompt with the project's
//!   `AGENTS.md` notes, the trajectory, the agent's memory
//!   ([`Session::agent`]), one task run to its [`RunResult`] ([`run_task`]),
//!   and the plan runner ([`PlanRunner`], clix-plan's `AgentRunner`: each
//!   task's confined engine and a `clix ask` agent over it);
//! - `clix doctor`'s checks ([`doctor`], its lines handed to a callback).
//!
//! So a new capability is wired in one place, `Session::engine_config`, and
//! `clix run`, `clix ask`, `clix chat`, `clix mcp`, a plan's tasks, eval
//! attempts and the benchmarks all get it the same way.
//!
//! It must not print, read a terminal or parse command lines (the binary does,
//! and hands in what only it has: the terminal's [`Approver`], its `Reviewer`
//! and a progress callback), nor hold execution, presentation or agent logic.

mod agent;
mod chat;
mod config_view;
mod doctor;
mod mcp_import;
mod prompts;
mod replay;
mod resume;
mod session;
mod settings;
mod storage;

pub use agent::{AgentSession, PlanRunner, make_plan, run_task, runs_dir};
pub use chat::{CHAT_COMMANDS, Chat, ChatCommand, Shown, checkpoints, go_back};
pub use clix_agent::stream::RunResult;
pub use clix_policy::Approver;
pub use config_view::{ConfigReport, config_report, init_config};
pub use doctor::doctor;
pub use mcp_import::{Imported, import_mcp_servers};
pub use prompts::{EnvSource, Prompt, PromptSource, load_prompt, prompt_source, provider_env};
pub use replay::{plan_lanes, run_records};
pub use resume::Resume;
pub use session::{Parts, Session};
pub use settings::{Settings, StorageSettings, default_file, load, storage_location, workspace_topic};
pub use storage::{migrate_storage, show_storage};
